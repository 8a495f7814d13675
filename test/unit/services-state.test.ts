import { CycleEvents, HolderReading, RegistryObservation, WatchState } from '../../src/sources/services/state';
import { readHeldClientId, clientIdOf } from '../../src/sources/services/holder-field';
import { outcomeOf } from '../../src/sources/services/outcome';
import { CALL_DURATION_BUCKETS, ProbeResult } from '../../src/snapshot/services';

const A = { fullId: 'public/srv-a:artifact-manager', clientId: 'srv-a' };
const B = { fullId: 'public/srv-b:artifact-manager', clientId: 'srv-b' };

type Cycle = RegistryObservation & { probes: ProbeResult[]; holders: HolderReading[] };
function apply(st: WatchState, o: Cycle): CycleEvents {
  const ev = st.applyRegistry(o);
  st.applyCalls({ nowSeconds: o.nowSeconds, probes: o.probes, holders: o.holders });
  return ev;
}

function probe(via: 'cached' | 'fresh', outcome: ProbeResult['outcome'], seconds: number): ProbeResult {
  return { via, method: 'list', outcome, seconds, atSeconds: 0 };
}

describe('WatchState', () => {
  test('first resolution becomes the canary; a provider set change is counted once; the stale canary is kept', () => {
    const st = new WatchState(true, { kind: 'after', staleMs: 600_000 }, 'list');
    expect(st.adoptCanaryIfNone(A, 100)).toBe(true);
    expect(st.adoptCanaryIfNone(B, 101)).toBe(false);
    let ev = apply(st, { nowSeconds: 100, providers: ['srv-a'], resolved: A, probes: [probe('cached', 'ok', 0.004), probe('fresh', 'ok', 0.003)], holders: [] });
    expect(ev).toEqual({});
    expect(st.changesTotal).toBe(0);
    expect(st.cached).toEqual([{ holder: 'exporter', clientId: 'srv-a', stale: false, staleSinceSeconds: undefined, sinceSeconds: 100 }]);

    // Server restart with a new id: provider set changes, canary not among providers.
    ev = apply(st, { nowSeconds: 115, providers: ['srv-b'], resolved: B, probes: [probe('cached', 'timeout', 5.0), probe('fresh', 'ok', 0.01)], holders: [] });
    expect(ev.providersChanged).toEqual({ from: ['srv-a'], to: ['srv-b'] });
    expect(ev.canaryBecameStale).toBe(true);
    expect(ev.canaryReresolved).toBeUndefined();
    expect(st.changesTotal).toBe(1);
    expect(st.lastChangeSeconds).toBe(115);
    expect(st.cached[0]).toMatchObject({ clientId: 'srv-a', stale: true, staleSinceSeconds: 115 });

    // Same set again: no further change; still stale while under the policy's bound.
    ev = apply(st, { nowSeconds: 700, providers: ['srv-b'], resolved: B, probes: [], holders: [] });
    expect(ev).toEqual({});
    expect(st.changesTotal).toBe(1);
    expect(st.reresolvesTotal).toBe(0);
    expect(st.cached[0]).toMatchObject({ clientId: 'srv-a', stale: true });

    // 10 min after the stale spell began: re-resolved to the fresh id and counted.
    ev = apply(st, { nowSeconds: 715, providers: ['srv-b'], resolved: B, probes: [], holders: [] });
    expect(ev.canaryReresolved).toEqual({ from: A.fullId, to: B.fullId });
    expect(st.reresolvesTotal).toBe(1);
    expect(st.cached[0]).toEqual({ holder: 'exporter', clientId: 'srv-b', stale: false, staleSinceSeconds: undefined, sinceSeconds: 715 });
  });

  test('several providers: a resolution that picks another live provider is neither a change nor stale', () => {
    const st = new WatchState(true, { kind: 'immediately' }, 'list');
    st.adoptCanaryIfNone(A, 1);
    apply(st, { nowSeconds: 1, providers: ['srv-a', 'srv-b'], resolved: A, probes: [], holders: [] });
    for (let t = 2; t < 10; t++) {
      const ev = apply(st, { nowSeconds: t, providers: ['srv-b', 'srv-a'], resolved: t % 2 ? A : B, probes: [], holders: [] });
      expect(ev).toEqual({});
    }
    expect(st.changesTotal).toBe(0);
    expect(st.cached[0].stale).toBe(false);
    // srv-a reconnects under a new id: stale (and with "immediately", re-resolved in the same cycle).
    const ev = apply(st, { nowSeconds: 10, providers: ['srv-b', 'srv-c'], resolved: B, probes: [], holders: [] });
    expect(ev.providersChanged).toBeDefined();
    expect(ev.canaryBecameStale).toBe(true);
    expect(ev.canaryReresolved).toEqual({ from: A.fullId, to: B.fullId });
    expect(st.cached[0]).toMatchObject({ clientId: 'srv-b', stale: false });
  });

  test('policy never keeps the stale canary; unknown providers make no stale claim; a recovered id clears the spell', () => {
    const st = new WatchState(true, { kind: 'never' }, undefined);
    st.adoptCanaryIfNone(A, 0);
    apply(st, { nowSeconds: 0, providers: ['srv-a'], resolved: A, probes: [], holders: [] });
    apply(st, { nowSeconds: 10, providers: [], probes: [], holders: [] });
    expect(st.cached[0]).toMatchObject({ stale: true, staleSinceSeconds: 10 });
    apply(st, { nowSeconds: 100_000, providers: ['srv-b'], resolved: B, probes: [], holders: [] });
    expect(st.reresolvesTotal).toBe(0);
    expect(st.cached[0]).toMatchObject({ clientId: 'srv-a', stale: true, staleSinceSeconds: 10 });
    apply(st, { nowSeconds: 100_001, providers: undefined, probes: [], holders: [] });
    expect(st.cached[0].stale).toBeUndefined();
    // The same server id came back (fixed --server-id): not stale any more.
    apply(st, { nowSeconds: 100_002, providers: ['srv-a'], resolved: A, probes: [], holders: [] });
    expect(st.cached[0]).toMatchObject({ stale: false, staleSinceSeconds: undefined });
    expect(st.changesTotal).toBe(3);
  });

  test('canary disabled: only holders are reported', () => {
    const st = new WatchState(false, { kind: 'never' }, undefined);
    expect(st.adoptCanaryIfNone(A, 0)).toBe(false);
    apply(st, { nowSeconds: 0, providers: ['srv-a'], resolved: A, probes: [], holders: [{ name: 'w1', clientId: 'srv-x' }, { name: 'w2', error: 'boom' }] });
    expect(st.cached).toEqual([
      { holder: 'w1', clientId: 'srv-x', stale: true, staleSinceSeconds: 0, sinceSeconds: 0 },
      { holder: 'w2', error: 'boom' },
    ]);
    apply(st, { nowSeconds: 5, providers: ['srv-a', 'srv-x'], probes: [], holders: [{ name: 'w1', clientId: 'srv-x' }] });
    expect(st.cached).toEqual([{ holder: 'w1', clientId: 'srv-x', stale: false, staleSinceSeconds: undefined, sinceSeconds: 0 }]);
  });

  test('probe durations accumulate per (method, via, outcome), with zero series for the configured method', () => {
    const st = new WatchState(true, { kind: 'never' }, 'list');
    expect(st.calls).toHaveLength(10);
    apply(st, { nowSeconds: 0, providers: [], probes: [probe('cached', 'timeout', 5.002), probe('fresh', 'ok', 0.0009), probe('fresh', 'ok', 0.03)], holders: [] });
    const timeout = st.calls.find((c) => c.via === 'cached' && c.outcome === 'timeout')!;
    expect(timeout.histogram.count).toBe(1);
    expect(timeout.histogram.counts[CALL_DURATION_BUCKETS.indexOf(6)]).toBe(1);
    const ok = st.calls.find((c) => c.via === 'fresh' && c.outcome === 'ok')!;
    expect(ok.histogram.count).toBe(2);
    expect(ok.histogram.counts[0]).toBe(1);
    expect(ok.histogram.sum).toBeCloseTo(0.0309, 6);
    expect(st.lastProbes.fresh?.seconds).toBe(0.03);
  });
});

describe('holder field and outcomes', () => {
  test('reads ids by dotted path and reduces full ids to the client id', () => {
    const r = { artifact_manager: { id: 'public/srv-a:artifact-manager' }, list: [{ c: 'ws/cli-9' }], bare: 'cli-1', n: 3 };
    expect(readHeldClientId(r, ['artifact_manager', 'id'])).toBe('srv-a');
    expect(readHeldClientId(r, ['list', '0', 'c'])).toBe('cli-9');
    expect(readHeldClientId(r, ['bare'])).toBe('cli-1');
    expect(readHeldClientId('public/x:svc@app', undefined)).toBe('x');
    expect(readHeldClientId(r, ['n'])).toBeUndefined();
    expect(readHeldClientId(r, ['missing', 'x'])).toBeUndefined();
    expect(readHeldClientId(null, ['a'])).toBeUndefined();
    expect(clientIdOf('  ')).toBeUndefined();
  });

  test('error kinds map onto the seed\'s outcome classes', () => {
    expect(outcomeOf('timeout')).toBe('timeout');
    expect(outcomeOf('not_found')).toBe('not_found');
    expect(outcomeOf('never_sent')).toBe('never_sent');
    expect(outcomeOf('connect')).toBe('never_sent');
    expect(outcomeOf('remote')).toBe('error');
    expect(outcomeOf('connection_lost')).toBe('error');
    expect(outcomeOf('auth')).toBe('error');
  });
});
