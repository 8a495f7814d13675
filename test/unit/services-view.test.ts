import { servicesView } from '../../src/status-page/services-view';
import { WatchedServiceSample } from '../../src/snapshot/services';
import { newSourceHealth, Snapshot } from '../../src/snapshot/types';

const SERVICE = 'public/artifact-manager';
function view(over: Partial<WatchedServiceSample>) {
  const health = { ...newSourceHealth('hypha_service', SERVICE), up: true, lastSuccessSeconds: 100 };
  const w: WatchedServiceSample = { service: SERVICE, health, cached: [], clientIdChangesTotal: 0, canaryReresolvesTotal: 0, calls: [], lastProbes: {}, ...over };
  const s: Snapshot = { version: 1, ray: new Map(), services: new Map([[SERVICE, w]]) };
  return servicesView(s).services[0];
}
const page = { firing: true, sinceSeconds: 50, dueSeconds: 170, cause: 'not_listed' as const, selfHealing: false };
const stale = [{ holder: 'exporter', clientId: 'c-old', stale: true, staleSinceSeconds: 50, sinceSeconds: 10, page }];

test('a stale canary is critical once the exporter decides the page, a warning while its wait runs', () => {
  const waiting = view({ providers: ['c-new'], cached: [{ ...stale[0], page: { ...page, firing: false } }], holdersConfigured: 0 });
  expect(waiting.severity).toBe('warning');
  expect(waiting.problems[0]).toBe('exporter holds stale client id c-old (not among the live providers); the page fires at 1970-01-01T00:02:50Z');
  expect(waiting.cached[0].page).toEqual({ firing: false, due: 170, cause: 'not_listed', self_healing: false });
  const gone = view({ providers: ['c-new'], cached: [{ ...stale[0], page: { ...page, cause: 'server_gone' } }], holdersConfigured: 0 });
  expect(gone.severity).toBe('critical');
  expect(gone.problems[0]).toBe('exporter holds stale client id c-old (not among the live providers, a replaced server id: it never returns); '
    + 'HyphaServiceCachedProxyStale fires');
});

test('the exporter\'s probe decisions: the cached path failing over the window is critical, every path failing a warning', () => {
  expect(view({ providers: ['c-new'], probeVerdicts: { cachedFailing: true, allFailing: false } }).severity).toBe('critical');
  expect(view({ providers: ['c-new'], probeVerdicts: { cachedFailing: false, allFailing: true } }).severity).toBe('warning');
  expect(view({ providers: ['c-new'], probeVerdicts: { cachedFailing: false, allFailing: false } }).severity).toBe('ok');
});

test('a stale canary says what the exporter can and cannot know and how the witness ends', () => {
  let v = view({ providers: ['c-new'], cached: stale, holdersConfigured: 0 });
  expect(v.severity).toBe('critical');
  expect(v.problems).toEqual([
    'exporter holds stale client id c-old (not among the live providers); HyphaServiceCachedProxyStale fires',
    "the exporter's stale canary is kept as the witness: no holders are configured, so the exporter cannot see whether the real long-lived clients recovered; " +
      'it ends when its client id is a live provider again, or an operator lists it in canary.released_client_ids',
  ]);
  v = view({ providers: ['c-new'], cached: stale, holdersConfigured: 2, witnessMaxSeconds: 7200 });
  expect(v.problems[1]).toBe("the exporter's stale canary is kept as the witness: the configured holders are the only real clients the exporter can see; " +
    'it ends when its client id is a live provider again, or all 2 configured holder(s) report a live id and pass their probe, or an operator lists it in canary.released_client_ids, or canary.witness_max (7200 s) passes');
});

test('failing holder probes and a fresh probe that needed another provider are problems; nothing while down', () => {
  const hp = { holder: 'kth-worker', method: 'list_apps', outcome: 'timeout' as const, seconds: 5, atSeconds: 99 };
  const fresh = { via: 'fresh' as const, method: 'list', outcome: 'ok' as const, seconds: 0.01, atSeconds: 99, attempts: 2 };
  let v = view({ providers: ['c-new', 'c-dead'], holderProbes: [hp], lastProbes: { fresh } });
  expect(v.problems).toEqual(["call through kth-worker's cached proxy (list_apps): timeout after 5.00 s", 'fresh probe needed 2 providers: a listed provider did not answer']);
  expect(v.severity).toBe('critical');
  v = view({ providers: ['c-new'], holderProbes: [{ ...hp, outcome: 'ok' }], lastProbes: { fresh: { ...fresh, attempts: 1 } } });
  expect(v.problems).toEqual([]);
  v = view({ health: { ...newSourceHealth('hypha_service', SERVICE), up: false }, holderProbes: [hp] });
  expect(v.problems).toEqual([]);
});
