// Issue 37 part 3: the discovered BioEngine workers are a watched service's holders by default, each with how it
// recovers from a re-registration; a stale canary whose holders all re-resolve by themselves (0.16.30 or later)
// is a self-healing witness: a warning, not a page, released by the exporter after canary.self_healing_release.
import { alertConditions } from '../../src/cli/check-conditions';
import { loadConfig } from '../../src/config/load';
import { SnapshotStore } from '../../src/snapshot/store';
import { HOLDER_RECOVERIES, WatchedServiceSample, WorkerHolder } from '../../src/snapshot/services';
import { newSourceHealth, Snapshot } from '../../src/snapshot/types';
import { DEFAULT_STALE_PAGE_WAITS, SELF_HEALING_WITNESS_SECONDS, WatchState } from '../../src/sources/services/state';
import { holderRecovery, WorkerHolders, workerHoldersOf } from '../../src/sources/services/worker-holders';
import { WatchedServiceSource } from '../../src/sources/services/source';
import { servicesView } from '../../src/status-page/services-view';
import { renderSnapshot } from '../helpers/exporter';
import { seriesValue, samplesOf } from '../helpers/exposition';
import { memoryLogger } from '../helpers/exporter';
import { tmpDir } from '../helpers/tmp';

const AM = 'public/artifact-manager';
const A = { fullId: 'public/srv-a:artifact-manager', clientId: 'srv-a' };
const B = { fullId: 'public/srv-b:artifact-manager', clientId: 'srv-b' };
const C = { fullId: 'public/srv-c:artifact-manager', clientId: 'srv-c' };

const healing = (holder: string, version = '0.16.43'): WorkerHolder => ({ holder, version, recovery: 'self_healing' });
const old = (holder: string, version = '0.16.1'): WorkerHolder => ({ holder, version, recovery: 'stays_stale' });

/** One registry cycle (the witness rules that need no calls) at `t` with B the only provider and the fresh resolution. */
function cycle(st: WatchState, t: number, o: { resolved?: typeof B | null; providers?: string[] | null } = {}) {
  return st.applyRegistry({
    nowSeconds: t, providers: o.providers === null ? undefined : o.providers ?? [B.clientId], resolved: o.resolved === null ? undefined : o.resolved ?? B,
  });
}

/** A canary on A, then A re-registers as B at t=100: the witness begins. */
function witness(st: WatchState): void {
  st.adoptCanaryIfNone(A, 0);
  st.applyRegistry({ nowSeconds: 0, providers: [A.clientId], resolved: A });
  expect(cycle(st, 100).canaryBecameStale).toBe(true);
}

describe('recovery of a worker holder', () => {
  test.each([
    ['0.16.43', AM, 'self_healing'],
    ['0.16.30', AM, 'self_healing'],
    ['0.17.0', 'ws-lab/artifact-manager', 'self_healing'],
    ['0.16.30', 'ws-lab/model-registry', 'unknown'],
    ['0.16.2', AM, 'stays_stale'],
    ['0.16.1', AM, 'stays_stale'],
    ['0.16.1', 'ws-lab/model-registry', 'stays_stale'],
    ['0.16.15', AM, 'unknown'],
    ['0.16.29', AM, 'unknown'],
    [undefined, AM, 'unknown'],
    ['test', AM, 'unknown'],
  ])('BioEngine %s holding %s: %s', (version, service, recovery) => {
    expect(holderRecovery(version, service)).toBe(recovery);
    expect(HOLDER_RECOVERIES).toContain(recovery);
  });

  test('the holders of a service: one per client id, sorted, the canary\'s label and empty ids skipped, the version kept when reported', () => {
    const src: WorkerHolders = {
      of: (hypha) => (hypha === 'main'
        ? [{ holder: 'w-b', version: '0.16.1' }, { holder: 'w-a', version: '0.16.43' }, { holder: 'w-c' }, { holder: 'exporter', version: '0.16.43' }, { holder: '' }]
        : []),
    };
    expect(workerHoldersOf(src, 'main', AM)).toEqual([
      { holder: 'w-a', version: '0.16.43', recovery: 'self_healing' },
      { holder: 'w-b', version: '0.16.1', recovery: 'stays_stale' },
      { holder: 'w-c', recovery: 'unknown' },
    ]);
    expect(workerHoldersOf(src, 'other', AM)).toEqual([]);
  });
});

describe('WatchState: the self-healing witness', () => {
  test('every worker holder self_healing: the witness is self-healing and released after SELF_HEALING_WITNESS_SECONDS (5 min), reason self_healing', () => {
    expect(SELF_HEALING_WITNESS_SECONDS).toBe(300);
    const st = new WatchState({ enabled: true }, 'list');
    st.setWorkers([healing('w1'), healing('w2', '0.16.30')], 0);
    expect(st.witnessSelfHealing).toBe(false);
    witness(st);
    expect(st.witnessSelfHealing).toBe(true);
    for (const t of [160, 300, 399]) expect(cycle(st, t)).toEqual({});
    expect(st.canary).toMatchObject({ clientId: 'srv-a', staleSinceSeconds: 100 });
    const ev = cycle(st, 400);
    expect(ev.witnessReleased).toEqual({ reason: 'self_healing', from: A.fullId, to: B.fullId });
    expect(st.canary).toEqual({ ...B, sinceSeconds: 400 });
    expect(st.witnessSelfHealing).toBe(false);
    expect(st.releasesTotal).toEqual({ self_healing: 1 });
    expect(st.reresolvesTotal).toBe(1);
    expect(st.cached[0]).toMatchObject({ holder: 'exporter', clientId: 'srv-b', stale: false });
  });

  test('an older or unknown worker among the holders: nothing changes, the witness holds', () => {
    for (const other of [old('w-old'), { holder: 'w-x', recovery: 'unknown' } as WorkerHolder]) {
      const st = new WatchState({ enabled: true }, 'list');
      st.setWorkers([healing('w1'), other], 0);
      witness(st);
      expect(st.witnessSelfHealing).toBe(false);
      for (const t of [400, 3_600, 86_400]) expect(cycle(st, t)).toEqual({});
      expect(st.canary).toMatchObject({ clientId: 'srv-a', staleSinceSeconds: 100 });
      expect(st.releasesTotal).toEqual({});
    }
  });

  test('no worker listed for a while (Hypha just restarted, workers reconnecting): the last known workers stay the holders', () => {
    const st = new WatchState({ enabled: true }, 'list');
    st.setWorkers([healing('w1')], 0);
    st.setWorkers([], 50);
    witness(st);
    expect(st.witnessSelfHealing).toBe(true);
    expect(st.workers.map((w) => w.holder)).toEqual(['w1']);
    st.setWorkers([old('w2')], 110);
    expect(st.witnessSelfHealing).toBe(false);
  });

  test('no worker holder, or a configured holder: never self-healing (the exporter cannot tell how those recover)', () => {
    const none = new WatchState({ enabled: true }, 'list');
    witness(none);
    expect(none.witnessSelfHealing).toBe(false);
    expect(cycle(none, 86_400)).toEqual({});

    const configured = new WatchState({ enabled: true }, 'list', [{ name: 'kth', reportsId: false, probeMethod: 'list_apps' }]);
    configured.setWorkers([healing('w1')], 0);
    witness(configured);
    expect(configured.witnessSelfHealing).toBe(false);
    expect(cycle(configured, 86_400)).toEqual({});
  });

  test('the release is counted from an unbroken self-healing spell: an older worker appearing resets it; unknown providers change nothing', () => {
    const st = new WatchState({ enabled: true }, 'list');
    st.setWorkers([healing('w1')], 0);
    witness(st);
    cycle(st, 200);
    // An older worker shows up between cycles (the Hypha source asked it): the spell ends at once.
    st.setWorkers([healing('w1'), old('w2')], 230);
    expect(st.witnessSelfHealing).toBe(false);
    expect(cycle(st, 260)).toEqual({});
    // It goes away (restarted on 0.16.43): a new spell from the next cycle.
    st.setWorkers([healing('w1'), healing('w2')], 280);
    expect(cycle(st, 300)).toEqual({});
    expect(cycle(st, 450)).toEqual({});
    // A cycle that cannot list the providers neither releases nor resets.
    expect(cycle(st, 600, { resolved: null, providers: null })).toEqual({});
    expect(st.witnessSelfHealing).toBe(true);
    expect(cycle(st, 601).witnessReleased).toEqual({ reason: 'self_healing', from: A.fullId, to: B.fullId });
  });

  test('canary.self_healing_release sets the bound; a due release without a fresh resolution waits for the next cycle that has one', () => {
    const st = new WatchState({ enabled: true, selfHealingReleaseMs: 3_000 }, 'list');
    st.setWorkers([healing('w1')], 0);
    witness(st);
    expect(cycle(st, 102)).toEqual({});
    expect(cycle(st, 103, { resolved: null })).toEqual({});
    expect(st.canary?.clientId).toBe('srv-a');
    expect(cycle(st, 104).witnessReleased?.reason).toBe('self_healing');
  });

  test('an operator release and witness_max still apply; the old id returning ends it as before', () => {
    const op = new WatchState({ enabled: true, releasedClientIds: ['srv-a'] }, 'list');
    op.setWorkers([healing('w1')], 0);
    witness(op);
    expect(op.releasesTotal).toEqual({ operator: 1 });

    const back = new WatchState({ enabled: true }, 'list');
    back.setWorkers([healing('w1')], 0);
    witness(back);
    expect(back.applyRegistry({ nowSeconds: 200, providers: [A.clientId, B.clientId], resolved: B }).witnessReleased?.reason).toBe('returned');
    expect(back.witnessSelfHealing).toBe(false);
    // A later witness starts its own spell.
    back.applyRegistry({ nowSeconds: 300, providers: [C.clientId], resolved: C });
    expect(back.witnessSelfHealing).toBe(true);
    expect(back.applyRegistry({ nowSeconds: 599, providers: [C.clientId], resolved: C })).toEqual({});
    expect(back.applyRegistry({ nowSeconds: 600, providers: [C.clientId], resolved: C }).witnessReleased?.reason).toBe('self_healing');
  });

  test('a worker missing while others are listed (workers reconnect one by one after a Hypha restart) still holds: the page holds; missing for the release bound, it stops counting', () => {
    const st = new WatchState({ enabled: true }, 'list');
    st.setWorkers([healing('w1'), old('w-old')], 0);
    witness(st);
    const page = (t: number) => st.judge(t, DEFAULT_STALE_PAGE_WAITS, () => true).find((c) => c.holder === 'exporter')?.page;
    expect(page(100)).toMatchObject({ firing: true, cause: 'server_gone', selfHealing: false });
    // Hypha restarted: the fixed worker is back first, the old one not yet listed: it still holds its proxy.
    st.setWorkers([healing('w1')], 130);
    expect(cycle(st, 130)).toEqual({});
    expect(st.workers.map((w) => w.holder)).toEqual(['w-old', 'w1']);
    expect(st.witnessSelfHealing).toBe(false);
    expect(page(130)).toMatchObject({ firing: true, selfHealing: false });
    // A listing with no worker (Hypha down again) is no news and does not count; missing from listings of others
    // for the whole bound since it was first missed (at 130): it no longer counts, every holder is self-healing,
    // and the witness is a warning from now on.
    st.setWorkers([], 200);
    st.setWorkers([healing('w1')], 130 + SELF_HEALING_WITNESS_SECONDS - 1);
    expect(st.witnessSelfHealing).toBe(false);
    st.setWorkers([healing('w1')], 130 + SELF_HEALING_WITNESS_SECONDS);
    expect(st.workers.map((w) => w.holder)).toEqual(['w1']);
    expect(st.witnessSelfHealing).toBe(true);
    expect(page(130 + SELF_HEALING_WITNESS_SECONDS)).toMatchObject({ firing: false, selfHealing: true });
    // Listed again (it reconnected after all): the page again.
    st.setWorkers([healing('w1'), old('w-old')], 440);
    expect(page(440)).toMatchObject({ firing: true, selfHealing: false });
  });

  test('a configured holder list wins: discovered workers are not holders and nothing is retained', () => {
    const st = new WatchState({ enabled: true }, 'list', [{ name: 'kth', reportsId: false, probeMethod: 'list_apps' }]);
    st.setWorkers([old('w-old')], 0);
    expect(st.workers).toEqual([]);
  });

  test('a reload hands the spell over: the successor releases on the same schedule', () => {
    const st = new WatchState({ enabled: true }, 'list');
    st.setWorkers([healing('w1')], 0);
    witness(st);
    cycle(st, 250);
    const h = st.handover();
    expect(h.selfHealingSinceSeconds).toBe(100);
    const next = new WatchState({ enabled: true }, 'list', [], h);
    next.setWorkers([healing('w1')], 250);
    expect(cycle(next, 399)).toEqual({});
    expect(cycle(next, 400).witnessReleased?.reason).toBe('self_healing');
  });

  test('a successor (a reload, or a restart and `check` through the state file) judges by the workers its predecessor knew, not only those listed now', () => {
    const st = new WatchState({ enabled: true }, 'list');
    st.setWorkers([healing('w1'), old('w-old')], 0);
    witness(st);
    // Hypha restarted: only w1 is back; w-old is missing since 130 and still holds.
    st.setWorkers([healing('w1')], 130);
    const known = st.handover().workers;
    expect(known).toEqual([{ ...old('w-old'), missingSinceSeconds: 130 }, healing('w1')]);
    const page = (s: WatchState, t: number) => s.judge(t, DEFAULT_STALE_PAGE_WAITS, () => true).find((c) => c.holder === 'exporter')?.page;
    // A reload while no worker is listed: the predecessor's workers, the page as before.
    const reloaded = new WatchState({ enabled: true }, 'list', [], st.handover());
    reloaded.setWorkers([], 140);
    cycle(reloaded, 140);
    expect(reloaded.workers).toEqual([old('w-old'), healing('w1')]);
    expect(page(reloaded, 140)).toMatchObject({ firing: true, selfHealing: false });
    // A restart (the witness and the workers from the state file): w-old's missing time goes on, so it stops
    // counting at the same moment as in the predecessor.
    const restarted = new WatchState({ enabled: true }, 'list', [], undefined, st.canary, [], known);
    restarted.setWorkers([healing('w1')], 150);
    expect(restarted.witnessSelfHealing).toBe(false);
    restarted.setWorkers([healing('w1')], 130 + SELF_HEALING_WITNESS_SECONDS);
    expect(restarted.witnessSelfHealing).toBe(true);
    // Only self-healing workers known, none listed yet (the fresh process during the reconnect): self-healing, no
    // page, as the running exporter says. Without what the predecessor knew it would page.
    const healingOnly = [healing('w1')];
    const fresh = new WatchState({ enabled: true }, 'list', [], undefined, st.canary, [], healingOnly);
    fresh.setWorkers([], 160);
    cycle(fresh, 160);
    expect(page(fresh, 160)).toMatchObject({ firing: false, selfHealing: true });
    const blind = new WatchState({ enabled: true }, 'list', [], undefined, st.canary, []);
    blind.setWorkers([], 160);
    cycle(blind, 160);
    expect(page(blind, 160)).toMatchObject({ firing: true, selfHealing: false });
    // A configured holder list still wins over what was retained.
    const configured = new WatchState({ enabled: true }, 'list', [{ name: 'kth', reportsId: false, probeMethod: 'list_apps' }], undefined, st.canary, [], known);
    expect(configured.workers).toEqual([]);
  });
});

/**
 * The sample the source publishes at t=400 for a canary on A that went stale at 100 (A re-registered as B), held by
 * `workers`, its cached path failing and the fresh one working at every cycle since: judged by the WatchState itself.
 */
function sample(o: { workers: WorkerHolder[] }): WatchedServiceSample {
  const health = { ...newSourceHealth('hypha_service', AM), hypha: 'main', up: true, lastSuccessSeconds: 1 };
  const st = new WatchState({ enabled: true }, 'list');
  witness(st);
  st.setWorkers(o.workers, 100);
  for (const t of [100, 200, 300, 400]) {
    const probe = (via: 'cached' | 'fresh', outcome: 'ok' | 'not_found') => ({ via, method: 'list', outcome, seconds: 0.01, atSeconds: t });
    st.applyCalls({ nowSeconds: t, probes: [probe('cached', 'not_found'), probe('fresh', 'ok')], holders: [] });
  }
  return {
    service: AM, health, providers: ['srv-b'], resolvedClientId: 'srv-b', cached: st.judge(400, DEFAULT_STALE_PAGE_WAITS, () => false),
    clientIdChangesTotal: 1, canaryReresolvesTotal: 0, calls: [], lastProbes: st.lastProbes, probeVerdicts: st.probeVerdicts(400, 180_000),
    holdersConfigured: 0, witnessReleasesTotal: {}, workerHolders: st.workers, witnessSelfHealing: st.witnessSelfHealing, selfHealingReleaseSeconds: 300,
  };
}
const snap = (w: WatchedServiceSample): Snapshot => ({ version: 1, ray: new Map(), services: new Map([[w.service, w]]) });

describe('what the exporter says about it', () => {
  test('metrics: holder_info per worker, witness_self_healing 0/1 and the exporter\'s page decisions, the self_healing release reason always present', async () => {
    let text = await renderSnapshot(snap(sample({ workers: [healing('w1'), { holder: 'w2', recovery: 'unknown' }] })));
    expect(samplesOf(text, 'hypha_serve_service_holder_info', { service: AM }).map((s) => s.labels)).toEqual([
      { service: AM, hypha: 'main', holder: 'w1', version: '0.16.43', recovery: 'self_healing' },
      { service: AM, hypha: 'main', holder: 'w2', version: '', recovery: 'unknown' },
    ]);
    // A worker whose recovery is unknown keeps the witness a page.
    expect(seriesValue(text, 'hypha_serve_service_witness_self_healing', { service: AM, hypha: 'main' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_service_cached_stale_page', { service: AM, holder: 'exporter' })).toBe(1);
    text = await renderSnapshot(snap(sample({ workers: [healing('w1')] })));
    expect(seriesValue(text, 'hypha_serve_service_witness_self_healing', { service: AM, hypha: 'main' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_service_witness_releases_total', { service: AM, reason: 'self_healing' })).toBe(0);
    // The self-healing witness pages nothing: neither the stale canary nor its failing cached path.
    expect(seriesValue(text, 'hypha_serve_service_cached_stale_page', { service: AM, holder: 'exporter' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_service_cached_probe_failing', { service: AM })).toBe(0);
    expect(samplesOf(text, 'hypha_serve_service_cached_stale_cause_info', { service: AM }).map((s) => s.labels)).toEqual([{
      service: AM, holder: 'exporter', client_id: 'srv-a', cause: 'not_listed',
      reason: 'the cached id is not among the live providers of the service and nothing proves it will not come back', holders: 'workers',
    }]);
    text = await renderSnapshot(snap(sample({ workers: [old('w1')] })));
    expect(seriesValue(text, 'hypha_serve_service_witness_self_healing', { service: AM, hypha: 'main' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_service_cached_stale_page', { service: AM, holder: 'exporter' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_service_cached_probe_failing', { service: AM })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_service_probe_failing', { service: AM })).toBe(0);
    // While the source is down: no verdict (the rules bridge the last one).
    const down = sample({ workers: [] });
    text = await renderSnapshot(snap({ ...down, health: { ...down.health, up: false } }));
    expect(seriesValue(text, 'hypha_serve_service_witness_self_healing', { service: AM, hypha: 'main' })).toBeUndefined();
  });

  test('check: a self-healing witness is no critical condition (neither the stale canary nor its cached probe); an older worker is named', () => {
    expect(alertConditions(snap(sample({ workers: [healing('w1')] })))).toEqual([]);
    const conditions = alertConditions(snap(sample({ workers: [healing('w1'), old('w-old'), { holder: 'w-x', recovery: 'unknown' }] })));
    expect(conditions.map((c) => c.alert)).toEqual(['HyphaServiceCachedProxyStale', 'HyphaServiceCachedProbeFailing']);
    expect(conditions[0].text).toContain('w-old (BioEngine 0.16.1, stays_stale), w-x (version unknown, unknown)');
    expect(conditions[0].text).not.toContain('w1');
  });

  test('status page: a warning with the workers and their recovery, not critical', () => {
    const [v] = servicesView(snap(sample({ workers: [healing('w1')] }))).services;
    expect(v.severity).toBe('warning');
    expect(v.witness_self_healing).toBe(true);
    expect(v.worker_holders).toEqual([{ holder: 'w1', version: '0.16.43', recovery: 'self_healing' }]);
    expect(v.problems.join(' ')).toMatch(/self-healing witness.*w1 \(BioEngine 0\.16\.43/);
    const [o] = servicesView(snap(sample({ workers: [old('w-old')] }))).services;
    expect(o.severity).toBe('critical');
    expect(o.problems.join(' ')).toContain('w-old (BioEngine 0.16.1, stays_stale) do not re-resolve');
  });

  test('config: canary.self_healing_release is a positive duration, 5m when absent', () => {
    const t = tmpDir();
    try {
      const cfg = (canary: string) => t.write('c.yml', `ray_clusters: []\nhypha:\n  name: main\n  server_url: http://127.0.0.1:1\n`
        + `watched_services:\n  - service: ${AM}\n    canary: ${canary}\n`);
      expect(loadConfig(cfg('{self_healing_release: 3s}')).watchedServices[0].canary.selfHealingReleaseMs).toBe(3000);
      expect(loadConfig(cfg('{enabled: true}')).watchedServices[0].canary.selfHealingReleaseMs).toBeUndefined();
      expect(() => loadConfig(cfg('{self_healing_release: 0s}'))).toThrow(/self_healing_release/);
      expect(() => loadConfig(cfg('{self_healing_release: soon}'))).toThrow(/self_healing_release/);
    } finally {
      t.cleanup();
    }
  });

  test('the source takes the workers from the interface the exporter serves and republishes when they change', async () => {
    let workers = [{ holder: 'w1', version: '0.16.43' }];
    let notify: (() => void) | undefined;
    const served: WorkerHolders = { of: () => workers, onChange: (_h, l) => { notify = l; return () => { notify = undefined; }; } };
    const t = tmpDir();
    const cfg = loadConfig(t.write('c.yml', `ray_clusters: []\nhypha:\n  name: main\n  server_url: http://127.0.0.1:1\n`)).watchedServices[0];
    const store = new SnapshotStore();
    const src = new WatchedServiceSource(cfg, { name: 'main', options: { serverUrl: 'http://127.0.0.1:1' } }, store, memoryLogger().log, { workers: served });
    try {
      src.start();
      expect(store.get().services?.get(AM)?.workerHolders).toEqual([{ holder: 'w1', version: '0.16.43', recovery: 'self_healing' }]);
      workers = [{ holder: 'w1', version: '0.16.43' }, { holder: 'w2', version: '0.16.1' }];
      notify?.();
      expect(store.get().services?.get(AM)?.workerHolders?.map((w) => w.recovery)).toEqual(['self_healing', 'stays_stale']);
    } finally {
      await src.stop();
      t.cleanup();
    }
    expect(notify).toBeUndefined();
  });
});
