import { CycleEvents, HolderReading, RegistryObservation, WatchHandover, WatchState } from '../../src/sources/services/state';
import { readHeldClientId } from '../../src/sources/services/holder-field';
import { clientIdOf } from '../../src/util/hypha-id';
import { outcomeOf } from '../../src/sources/services/outcome';
import { CALL_DURATION_BUCKETS, HolderProbeResult, ProbeResult } from '../../src/snapshot/services';

const A = { fullId: 'public/srv-a:artifact-manager', clientId: 'srv-a' };
const B = { fullId: 'public/srv-b:artifact-manager', clientId: 'srv-b' };

type Cycle = RegistryObservation & { probes: ProbeResult[]; holders: HolderReading[] };
function apply(st: WatchState, o: Cycle): CycleEvents {
  return cycle(st, o, []);
}
function cycle(st: WatchState, o: Cycle, holderProbes: HolderProbeResult[]): CycleEvents {
  const ev = st.applyRegistry(o);
  const late = st.applyCalls({ nowSeconds: o.nowSeconds, probes: o.probes, holders: o.holders, holderProbes });
  return { ...ev, ...late };
}

function probe(via: 'cached' | 'fresh', outcome: ProbeResult['outcome'], seconds: number): ProbeResult {
  return { via, method: 'list', outcome, seconds, atSeconds: 0 };
}

const NO_LIMIT = { enabled: true };

describe('WatchState', () => {
  test('first resolution becomes the canary; a provider set change is counted once; the stale canary is the witness, past the old 10-minute point', () => {
    const st = new WatchState(NO_LIMIT, 'list');
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
    expect(ev.witnessReleased).toBeUndefined();
    expect(st.changesTotal).toBe(1);
    expect(st.lastChangeSeconds).toBe(115);
    expect(st.cached[0]).toMatchObject({ clientId: 'srv-a', stale: true, staleSinceSeconds: 115 });

    // No holders, no bound: the witness stays however long the fresh path has worked (the old default let go after 10 min).
    for (const t of [715, 716, 3_835, 86_400]) {
      ev = apply(st, { nowSeconds: t, providers: ['srv-b'], resolved: B, probes: [probe('cached', 'timeout', 5.0), probe('fresh', 'ok', 0.01)], holders: [] });
      expect(ev).toEqual({});
    }
    expect(st.reresolvesTotal).toBe(0);
    expect(st.releasesTotal).toEqual({});
    expect(st.cached[0]).toEqual({ holder: 'exporter', clientId: 'srv-a', stale: true, staleSinceSeconds: 115, sinceSeconds: 100 });
    expect(st.canary?.fullId).toBe(A.fullId);
  });

  test('the witness ends when its own client id is live again; the canary keeps its identity', () => {
    const st = new WatchState(NO_LIMIT, 'list');
    st.adoptCanaryIfNone(A, 0);
    apply(st, { nowSeconds: 0, providers: ['srv-a'], resolved: A, probes: [], holders: [] });
    apply(st, { nowSeconds: 10, providers: [], probes: [], holders: [] });
    expect(st.cached[0]).toMatchObject({ stale: true, staleSinceSeconds: 10 });
    apply(st, { nowSeconds: 100_000, providers: ['srv-b'], resolved: B, probes: [], holders: [] });
    expect(st.cached[0]).toMatchObject({ clientId: 'srv-a', stale: true, staleSinceSeconds: 10 });
    // Unknown providers make no stale claim either way, and do not end the witness.
    let ev = apply(st, { nowSeconds: 100_001, providers: undefined, probes: [], holders: [] });
    expect(ev).toEqual({});
    expect(st.cached[0].stale).toBeUndefined();
    expect(st.canary?.staleSinceSeconds).toBe(10);
    // The same server id came back (fixed --server-id): not stale any more.
    ev = apply(st, { nowSeconds: 100_002, providers: ['srv-a', 'srv-b'], resolved: B, probes: [], holders: [] });
    expect(ev.witnessReleased).toEqual({ reason: 'returned', from: A.fullId });
    expect(st.cached[0]).toMatchObject({ clientId: 'srv-a', stale: false, staleSinceSeconds: undefined, sinceSeconds: 0 });
    expect(st.releasesTotal).toEqual({ returned: 1 });
    expect(st.reresolvesTotal).toBe(0);
    expect(st.changesTotal).toBe(3);
  });

  test('with holders the witness ends only when every holder reports a live id and every holder probe succeeded after it began', () => {
    const holders = [{ name: 'w-id', reportsId: true }, { name: 'w-probe', reportsId: false, probeMethod: 'list_apps' }, { name: 'w-both', reportsId: true, probeMethod: 'list_apps' }];
    const st = new WatchState(NO_LIMIT, 'list', holders);
    expect(st.calls.filter((c) => c.via === 'holder').map((c) => `${c.holder}/${c.method}/${c.outcome}`).sort()).toEqual([
      ...['error', 'never_sent', 'not_found', 'ok', 'timeout'].map((o) => `w-both/list_apps/${o}`),
      ...['error', 'never_sent', 'not_found', 'ok', 'timeout'].map((o) => `w-probe/list_apps/${o}`),
    ]);
    const hp = (holder: string, outcome: ProbeResult['outcome'], at: number) => ({ holder, method: 'list_apps', outcome, seconds: outcome === 'ok' ? 0.2 : 5, atSeconds: at });
    const onA = [{ name: 'w-id', clientId: 'srv-a' }, { name: 'w-both', clientId: 'srv-a' }];
    const onB = [{ name: 'w-id', clientId: 'srv-b' }, { name: 'w-both', clientId: 'srv-b' }];
    st.adoptCanaryIfNone(A, 0);
    let ev = cycle(st, { nowSeconds: 0, providers: ['srv-a'], resolved: A, probes: [], holders: onA }, [hp('w-probe', 'ok', 0.5), hp('w-both', 'ok', 0.5)]);
    expect(ev).toEqual({});
    // Re-registration: everyone is stale. Probes that succeeded before the change count for nothing.
    ev = cycle(st, { nowSeconds: 15, providers: ['srv-b'], resolved: B, probes: [], holders: onA }, []);
    expect(ev.canaryBecameStale).toBe(true);
    expect(ev.witnessReleased).toBeUndefined();
    // Two holders recovered (re-resolved), the probe-only one still fails.
    ev = cycle(st, { nowSeconds: 30, providers: ['srv-b'], resolved: B, probes: [], holders: onB }, [hp('w-probe', 'timeout', 35), hp('w-both', 'ok', 31)]);
    expect(ev.witnessReleased).toBeUndefined();
    // One holder cannot be read: no evidence, the witness stays.
    ev = cycle(st, { nowSeconds: 45, providers: ['srv-b'], resolved: B, probes: [], holders: [{ name: 'w-id', error: 'timeout' }, { name: 'w-both', clientId: 'srv-b' }] }, [hp('w-probe', 'ok', 46)]);
    expect(ev.witnessReleased).toBeUndefined();
    expect(st.cached[0]).toMatchObject({ holder: 'exporter', clientId: 'srv-a', stale: true });
    // Everyone agrees (the probe-only holder's last success after the witness began still counts while its probe waits for its interval).
    ev = cycle(st, { nowSeconds: 60, providers: ['srv-b'], resolved: B, probes: [], holders: onB }, []);
    expect(ev.witnessReleased).toEqual({ reason: 'holders_agree', from: A.fullId, to: B.fullId });
    expect(st.cached[0]).toEqual({ holder: 'exporter', clientId: 'srv-b', stale: false, staleSinceSeconds: undefined, sinceSeconds: 60 });
    expect(st.reresolvesTotal).toBe(1);
    expect(st.releasesTotal).toEqual({ holders_agree: 1 });
    const timeouts = st.calls.find((c) => c.via === 'holder' && c.holder === 'w-probe' && c.outcome === 'timeout')!;
    expect(timeouts.histogram.count).toBe(1);
    expect(st.holderProbes.map((p) => `${p.holder}:${p.outcome}`)).toEqual(['w-probe:ok', 'w-both:ok']);
  });

  test('holders that never held the old id release the witness at once: they are the evidence', () => {
    const st = new WatchState(NO_LIMIT, 'list', [{ name: 'w', reportsId: true }]);
    st.adoptCanaryIfNone(A, 0);
    cycle(st, { nowSeconds: 0, providers: ['srv-a', 'srv-b'], resolved: A, probes: [], holders: [{ name: 'w', clientId: 'srv-b' }] }, []);
    const ev = cycle(st, { nowSeconds: 15, providers: ['srv-b', 'srv-c'], resolved: B, probes: [], holders: [{ name: 'w', clientId: 'srv-b' }] }, []);
    expect(ev.witnessReleased).toEqual({ reason: 'holders_agree', from: A.fullId, to: B.fullId });
  });

  test('witness_max bounds the witness, counted from the first stale cycle; 0 (deprecated "immediately") means no witness', () => {
    const st = new WatchState({ enabled: true, witnessMaxMs: 3_600_000 }, 'list');
    st.adoptCanaryIfNone(A, 0);
    apply(st, { nowSeconds: 0, providers: ['srv-a'], resolved: A, probes: [], holders: [] });
    apply(st, { nowSeconds: 100, providers: ['srv-b'], resolved: B, probes: [], holders: [] });
    let ev = apply(st, { nowSeconds: 3_699, providers: ['srv-b'], resolved: B, probes: [], holders: [] });
    expect(ev).toEqual({});
    // At the bound but the fresh resolution failed: nothing to replace it with yet.
    ev = apply(st, { nowSeconds: 3_700, providers: ['srv-b'], probes: [], holders: [] });
    expect(ev).toEqual({});
    ev = apply(st, { nowSeconds: 3_715, providers: ['srv-b'], resolved: B, probes: [], holders: [] });
    expect(ev.witnessReleased).toEqual({ reason: 'max_age', from: A.fullId, to: B.fullId });
    expect(st.cached[0]).toMatchObject({ clientId: 'srv-b', stale: false });
    expect(st.reresolvesTotal).toBe(1);

    const now = new WatchState({ enabled: true, witnessMaxMs: 0 }, 'list');
    now.adoptCanaryIfNone(A, 1);
    apply(now, { nowSeconds: 1, providers: ['srv-a', 'srv-b'], resolved: A, probes: [], holders: [] });
    for (let t = 2; t < 10; t++) expect(apply(now, { nowSeconds: t, providers: ['srv-b', 'srv-a'], resolved: t % 2 ? A : B, probes: [], holders: [] })).toEqual({});
    expect(now.cached[0].stale).toBe(false);
    ev = apply(now, { nowSeconds: 10, providers: ['srv-b', 'srv-c'], resolved: B, probes: [], holders: [] });
    expect(ev.canaryBecameStale).toBe(true);
    expect(ev.witnessReleased).toMatchObject({ reason: 'max_age', to: B.fullId });
    expect(now.cached[0]).toMatchObject({ clientId: 'srv-b', stale: false });
  });

  test('an operator release names the witness\'s client id; other ids leave it alone', () => {
    const other = new WatchState({ enabled: true, releasedClientIds: ['srv-x'] }, 'list');
    other.adoptCanaryIfNone(A, 0);
    apply(other, { nowSeconds: 0, providers: ['srv-b'], resolved: B, probes: [], holders: [] });
    expect(other.cached[0]).toMatchObject({ clientId: 'srv-a', stale: true });
    const st = new WatchState({ enabled: true, releasedClientIds: ['srv-a'] }, 'list');
    st.adoptCanaryIfNone(A, 0);
    const ev = apply(st, { nowSeconds: 0, providers: ['srv-b'], resolved: B, probes: [], holders: [] });
    expect(ev.witnessReleased).toEqual({ reason: 'operator', from: A.fullId, to: B.fullId });
    expect(st.releasesTotal).toEqual({ operator: 1 });
  });

  test('reload: a new state given the handover keeps the witness, the counters and the histograms', () => {
    const holders = [{ name: 'w', reportsId: true, probeMethod: 'list_apps' }];
    const st = new WatchState(NO_LIMIT, 'list', holders);
    st.adoptCanaryIfNone(A, 0);
    cycle(st, { nowSeconds: 0, providers: ['srv-a'], resolved: A, probes: [probe('cached', 'ok', 0.01)], holders: [{ name: 'w', clientId: 'srv-a' }] },
      [{ holder: 'w', method: 'list_apps', outcome: 'ok', seconds: 0.1, atSeconds: 0 }]);
    cycle(st, { nowSeconds: 15, providers: ['srv-b'], resolved: B, probes: [probe('cached', 'timeout', 5)], holders: [{ name: 'w', clientId: 'srv-a' }] },
      [{ holder: 'w', method: 'list_apps', outcome: 'timeout', seconds: 5, atSeconds: 20 }]);
    // As a source hands it over while down: no current probe result or holder reading.
    const handover: WatchHandover = { ...st.handover(), lastProbes: {}, holders: [], reresolvesTotal: 4, releasesTotal: { max_age: 4 } };
    // The reload changed the probe method: the old series stay, the new method gets zero series.
    const next = new WatchState(NO_LIMIT, 'read', holders, handover);
    expect(next.canary).toEqual({ ...A, sinceSeconds: 0, staleSinceSeconds: 15 });
    expect(next.changesTotal).toBe(1);
    expect(next.reresolvesTotal).toBe(4);
    expect(next.releasesTotal).toEqual({ max_age: 4 });
    expect(next.calls.find((c) => c.method === 'list' && c.via === 'cached' && c.outcome === 'timeout')?.histogram.count).toBe(1);
    expect(next.calls.find((c) => c.method === 'read' && c.via === 'cached' && c.outcome === 'ok')?.histogram.count).toBe(0);
    expect(next.calls.find((c) => c.via === 'holder' && c.outcome === 'timeout')?.histogram.count).toBe(1);
    expect(next.adoptCanaryIfNone(B, 30)).toBe(false);
    // The same provider set is no change; the witness goes on (stale since 15, not since the reload).
    const ev = cycle(next, { nowSeconds: 30, providers: ['srv-b'], resolved: B, probes: [], holders: [{ name: 'w', clientId: 'srv-a' }] }, []);
    expect(ev).toEqual({});
    expect(next.changesTotal).toBe(1);
    expect(next.cached[0]).toEqual({ holder: 'exporter', clientId: 'srv-a', stale: true, staleSinceSeconds: 15, sinceSeconds: 0 });
    // Without carry-over (the old behaviour of a reload) the canary would be the fresh id and nothing stale.
    const fresh = new WatchState(NO_LIMIT, 'read', holders);
    fresh.adoptCanaryIfNone(B, 30);
    cycle(fresh, { nowSeconds: 30, providers: ['srv-b'], resolved: B, probes: [], holders: [] }, []);
    expect(fresh.cached[0].stale).toBe(false);
  });

  test('a handover of a disabled canary is not taken', () => {
    const handover: WatchHandover = {
      changesTotal: 0, reresolvesTotal: 0, releasesTotal: {}, calls: [], lastProbes: {}, holders: [], holderProbes: [],
      canary: { ...A, sinceSeconds: 0, staleSinceSeconds: 5 },
    };
    expect(new WatchState({ enabled: false }, undefined, [], handover).canary).toBeUndefined();
  });

  test('canary disabled: only holders are reported', () => {
    const st = new WatchState({ enabled: false }, undefined);
    expect(st.adoptCanaryIfNone(A, 0)).toBe(false);
    apply(st, { nowSeconds: 0, providers: ['srv-a'], resolved: A, probes: [], holders: [{ name: 'w1', clientId: 'srv-x' }, { name: 'w2', error: 'boom' }] });
    expect(st.cached).toEqual([
      { holder: 'w1', clientId: 'srv-x', stale: true, staleSinceSeconds: 0, sinceSeconds: 0 },
      { holder: 'w2', error: 'boom' },
    ]);
    apply(st, { nowSeconds: 5, providers: ['srv-a', 'srv-x'], probes: [], holders: [{ name: 'w1', clientId: 'srv-x' }] });
    expect(st.cached).toEqual([{ holder: 'w1', clientId: 'srv-x', stale: false, staleSinceSeconds: undefined, sinceSeconds: 0 }]);
  });

  test('a fresh path that tried several providers records every attempt; its verdict is the probe result', () => {
    const st = new WatchState(NO_LIMIT, 'list');
    const dead = { ...probe('fresh', 'timeout', 2), target: 'public/dead:artifact-manager' };
    const alive = { ...probe('fresh', 'ok', 0.01), target: 'public/alive:artifact-manager' };
    st.applyRegistry({ nowSeconds: 0, providers: ['dead', 'alive'] });
    st.applyCalls({ nowSeconds: 0, probes: [{ ...alive, attempts: 2 }], holders: [], freshAttempts: [dead, alive] });
    expect(st.lastProbes.fresh).toMatchObject({ outcome: 'ok', attempts: 2 });
    const fresh = (o: string) => st.calls.find((c) => c.via === 'fresh' && c.outcome === o)!.histogram.count;
    expect(fresh('timeout')).toBe(1);
    expect(fresh('ok')).toBe(1);
  });

  test('probe durations accumulate per (method, via, outcome), with zero series for the configured method', () => {
    const st = new WatchState(NO_LIMIT, 'list');
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

// Contract v0.4: the exporter decides HyphaServiceCachedProxyStale and the probe pages itself.
describe('the pages the watch state decides', () => {
  const WAITS = { provenMs: 0, uncertainMs: 120_000 };
  const at = (via: 'cached' | 'fresh', outcome: ProbeResult['outcome'], t: number): ProbeResult => ({ via, method: 'list', outcome, seconds: 0.01, atSeconds: t });
  /** A canary on A, then A re-registers as B at t=100 (not a replaced server id unless `gone`). */
  function staleAt100(st: WatchState): void {
    st.adoptCanaryIfNone(A, 0);
    st.applyRegistry({ nowSeconds: 0, providers: ['srv-a'], resolved: A });
    st.applyRegistry({ nowSeconds: 100, providers: ['srv-b'], resolved: B });
  }
  const pageOf = (st: WatchState, t: number, gone = false) => st.judge(t, WAITS, () => gone)[0].page;

  test('an unproven stale id pages once it has been stale for the uncertain wait, and holds until the id is live again', () => {
    const st = new WatchState(NO_LIMIT, 'list');
    staleAt100(st);
    expect(pageOf(st, 100)).toEqual({ firing: false, sinceSeconds: 100, dueSeconds: 220, cause: 'not_listed', selfHealing: false });
    expect(pageOf(st, 219)?.firing).toBe(false);
    expect(pageOf(st, 220)).toEqual({ firing: true, sinceSeconds: 100, dueSeconds: 220, cause: 'not_listed', selfHealing: false });
    // A cycle whose providers cannot be listed is unknown: no decision, and the spell and its page stay.
    st.applyRegistry({ nowSeconds: 235, providers: undefined, resolved: undefined });
    expect(st.judge(235, WAITS, () => false)[0].page).toBeUndefined();
    st.applyRegistry({ nowSeconds: 250, providers: ['srv-b'], resolved: B });
    expect(pageOf(st, 250)).toMatchObject({ firing: true, dueSeconds: 220 });
    // The old id is live again: the spell ends with its page.
    st.applyRegistry({ nowSeconds: 265, providers: ['srv-a', 'srv-b'], resolved: B });
    expect(st.judge(265, WAITS, () => false)[0]).toMatchObject({ stale: false, serverGone: false });
    expect(st.judge(265, WAITS, () => false)[0].page).toBeUndefined();
  });

  test('a stale id proven gone (a replaced server id) pages at once; the page holds whatever the cause becomes', () => {
    const st = new WatchState(NO_LIMIT, 'list');
    staleAt100(st);
    expect(pageOf(st, 100, true)).toEqual({ firing: true, sinceSeconds: 100, dueSeconds: 100, cause: 'server_gone', selfHealing: false });
    expect(pageOf(st, 115, false)).toEqual({ firing: true, sinceSeconds: 100, dueSeconds: 100, cause: 'not_listed', selfHealing: false });
  });

  test('the canary of a self-healing witness never pages; a worker that cannot re-resolve makes it a page, counted from the spell\'s start', () => {
    const st = new WatchState(NO_LIMIT, 'list');
    staleAt100(st);
    st.setWorkers([{ holder: 'w1', version: '0.16.43', recovery: 'self_healing' }], 0);
    expect(pageOf(st, 300)).toMatchObject({ firing: false, selfHealing: true });
    st.setWorkers([{ holder: 'w1', version: '0.16.43', recovery: 'self_healing' }, { holder: 'w0', version: '0.16.1', recovery: 'stays_stale' }], 0);
    expect(pageOf(st, 301)).toEqual({ firing: true, sinceSeconds: 100, dueSeconds: 301, cause: 'not_listed', selfHealing: false });
  });

  test('a configured holder\'s stale spell and page go on through a reload and a restart (its saved spell)', () => {
    const spec = [{ name: 'w', reportsId: true }];
    const st = new WatchState({ enabled: false }, 'list', spec);
    st.applyRegistry({ nowSeconds: 0, providers: ['srv-a'], resolved: A });
    st.applyCalls({ nowSeconds: 0, probes: [], holders: [{ name: 'w', clientId: 'srv-a' }] });
    st.applyRegistry({ nowSeconds: 100, providers: ['srv-b'], resolved: B });
    expect(pageOf(st, 230)).toMatchObject({ firing: true, dueSeconds: 230 });
    const held = st.handover().holders;
    expect(held).toEqual([{ name: 'w', clientId: 'srv-a', sinceSeconds: 0, staleSinceSeconds: 100, pagedSeconds: 230 }]);
    for (const next of [new WatchState({ enabled: false }, 'list', spec, st.handover()), new WatchState({ enabled: false }, 'list', spec, undefined, undefined, held)]) {
      // After the restart nothing is known until the first listing; then the page holds at once.
      expect(next.judge(300, WAITS, () => false)[0].page).toBeUndefined();
      next.applyRegistry({ nowSeconds: 300, providers: ['srv-b'], resolved: B });
      expect(pageOf(next, 300)).toMatchObject({ firing: true, sinceSeconds: 100, dueSeconds: 230 });
    }
  });

  test('probe pages: unknown until a whole window was watched, then the cached path failing beside a working fresh one', () => {
    const st = new WatchState(NO_LIMIT, 'list');
    const W = 180_000;
    expect(st.probeVerdicts(0, W)).toEqual({});
    st.applyCalls({ nowSeconds: 0, probes: [at('cached', 'ok', 0), at('fresh', 'ok', 0)], holders: [] });
    expect(st.probeVerdicts(179, W)).toEqual({});
    expect(st.probeVerdicts(180, W)).toEqual({ cachedFailing: false, allFailing: false });
    // The cached path fails from 200; fresh resolution picks a dead provider at random now and then.
    for (let t = 200; t <= 600; t += 20) {
      st.applyCalls({ nowSeconds: t, probes: [at('cached', 'timeout', t), at('fresh', t % 60 === 0 ? 'timeout' : 'ok', t)], holders: [] });
    }
    expect(st.probeVerdicts(180, W)).toEqual({ cachedFailing: false, allFailing: false });
    expect(st.probeVerdicts(600, W)).toEqual({ cachedFailing: true, allFailing: false });
    // Every path fails for a window: the service is down, not a stale proxy.
    for (let t = 620; t <= 820; t += 20) st.applyCalls({ nowSeconds: t, probes: [at('cached', 'timeout', t), at('fresh', 'timeout', t)], holders: [] });
    expect(st.probeVerdicts(820, W)).toEqual({ cachedFailing: false, allFailing: true });
    // A restart knows nothing of the window before it; a reload hands it over.
    expect(new WatchState(NO_LIMIT, 'list').probeVerdicts(820, W)).toEqual({});
    expect(new WatchState(NO_LIMIT, 'list', [], st.handover()).probeVerdicts(820, W)).toEqual({ cachedFailing: false, allFailing: true });
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

  test('error classes map onto the outcome classes', () => {
    expect(outcomeOf('timeout')).toBe('timeout');
    expect(outcomeOf('not_found')).toBe('not_found');
    expect(outcomeOf('never_sent')).toBe('never_sent');
    expect(outcomeOf('connect')).toBe('never_sent');
    expect(outcomeOf('remote')).toBe('error');
    expect(outcomeOf('connection_lost')).toBe('error');
    expect(outcomeOf('auth')).toBe('error');
  });
});
