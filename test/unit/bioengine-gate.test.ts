// Issue 37: each app's BioEngine gate (the deploying worker's version, outranked by what the app was
// seen doing), proofs and the page decided per gate, and PEP 440 version order.
import { hyphaRegistrationSchema, PageWaits, resolveHyphaRegistration } from '../../src/config/hypha-schema';
import { GATE_EVIDENCE_SECONDS } from '../../src/registration/gate';
import { ARTIFACT_MANAGER_FIX, FIRST_RELEASE_WITH_FIXES, GATE_FIX, gateOfVersion, LAST_RELEASE_BEFORE_FIXES, reresolvesArtifactManager } from '../../src/util/bioengine-release';
import { DEFAULT_PAGE_WAITS, ProviderIndex, RegistrationTracker, TrackerInput } from '../../src/registration/tracker';
import type { ExpectedService } from '../../src/registration/expected';
import type { ServiceInfo } from '../../src/sources/hypha/types';
import type { ServeApp, ServeDeployment } from '../../src/snapshot/types';
import type { WorkerReport } from '../../src/snapshot/registration';
import { comparePep440, parsePep440 } from '../../src/util/pep440';

describe('PEP 440 order of the versions workers report', () => {
  const cmp = (a: string, b: string) => Math.sign(comparePep440(parsePep440(a)!, parsePep440(b)!));
  test.each([
    ['0.16.6-dev3', '0.16.6', -1], ['0.16.6.dev3', '0.16.6-dev3', 0], ['0.16.30', '0.16.4', 1], ['0.16.2', '0.16.2.0', 0],
    ['1.0.dev1', '1.0a1', -1], ['1.0a1', '1.0b1', -1], ['1.0rc1', '1.0', -1], ['1.0', '1.0.post1', -1], ['1.0.post1.dev1', '1.0.post1', -1],
    ['1.0a1.dev1', '1.0a1', -1], ['v0.16.30', '0.16.30', 0], ['1!0.1', '2.0', 1], ['0.16.30+local.7', '0.16.30', 0], ['1.0-1', '1.0.post1', 0],
  ])('%s vs %s → %i', (a, b, want) => {
    expect(cmp(a as string, b as string)).toBe(want);
  });

  test('what is not a version does not parse', () => {
    for (const t of ['test', '', 'latest', '0.16.x', '1..2']) expect(parsePep440(t)).toBeUndefined();
  });
});

describe('the gate and the artifact-manager proxy a worker version ships', () => {
  test.each<[string | undefined, string | undefined, boolean | undefined]>([
    ['0.15.0', 'deregisters_at_zero', false], ['0.16.1', 'deregisters_at_zero', false], [LAST_RELEASE_BEFORE_FIXES, 'deregisters_at_zero', false],
    ['0.16.2-dev3', 'deregisters_at_zero', false],
    // Between the last release without a fix and the first proven to have it: not pinned either way.
    ['0.16.3', undefined, undefined], ['0.16.15', undefined, undefined], ['0.16.2.post1', undefined, undefined],
    [GATE_FIX.firstWith, 'serviceable_at_zero', undefined], ['0.16.29', 'serviceable_at_zero', undefined],
    ['0.16.30-dev1', 'serviceable_at_zero', undefined],
    [FIRST_RELEASE_WITH_FIXES, 'serviceable_at_zero', true], ['0.16.43', 'serviceable_at_zero', true], ['0.17.0', 'serviceable_at_zero', true],
    ['test', undefined, undefined], [undefined, undefined, undefined],
  ])('%s → gate %s, re-resolves %s', (version, gate, reresolves) => {
    expect(gateOfVersion(version)).toBe(gate);
    expect(reresolvesArtifactManager(version)).toBe(reresolves);
  });

  test('the first release with both fixes is the artifact manager\'s, which comes after the gate\'s', () => {
    expect(FIRST_RELEASE_WITH_FIXES).toBe(ARTIFACT_MANAGER_FIX.firstWith);
    expect(gateOfVersion(ARTIFACT_MANAGER_FIX.firstWith)).toBe('serviceable_at_zero');
  });
});

function dep(name: string, running: number, target: number, status = 'HEALTHY', minReplicas = 0): ServeDeployment {
  return {
    name, status, messagePresent: false,
    replicas: { STARTING: Math.max(0, target - running), RUNNING: running },
    autoscaling: true, minReplicas, maxReplicas: 2, targetReplicas: target,
    scaledToZero: running === 0 && target === 0 && status === 'HEALTHY',
  };
}
function app(model: ServeDeployment, status = 'RUNNING', deployed = 1000): ServeApp {
  return { name: 'a', status, messagePresent: false, message: '', routePrefix: '/a', lastDeployedSeconds: deployed, deployments: [dep('ProxyDeployment', 1, 1), model] };
}
const AT_ZERO = app(dep('Model', 0, 0));
const WITH_REPLICA = app(dep('Model', 1, 1));

/** One BioEngine app `a` whose proxy registers as ws/wk-1-xxx:a, judged against the listed providers. */
function tracker(version: string | undefined, report: () => WorkerReport | undefined = () => undefined, pageWaits?: PageWaits) {
  const t = new RegistrationTracker();
  const expected = new Map<string, ExpectedService>([['a', {
    cluster: 'c', app: 'a', mapping: 'bioengine', workspace: 'ws', clientId: 'wk-1-p', serviceId: 'a', label: 'ws/wk-1-p:a', workerClientId: 'wk-1',
  }]]);
  const provider: ServiceInfo = { id: 'ws/wk-1-p:a', workspace: 'ws', clientId: 'wk-1-p', serviceId: 'a' };
  const input = (now: number): TrackerInput => ({
    nowSeconds: now, startedSeconds: 500, connectedSeconds: 600, afterReconnect: false, settleMs: 20_000,
    workerVersion: (id) => (id === 'wk-1' ? version : undefined),
    workerReport: () => report(),
    ...(pageWaits ? { pageWaits } : {}),
  });
  return {
    t,
    at: (now: number, a: ServeApp, registered: boolean) => t.evaluateCluster('c', [a], expected, new ProviderIndex(registered ? [provider] : []), input(now))[0],
  };
}

describe('the gate, the proof and the page per BioEngine release', () => {
  test('old release: a cold deploy at zero is proven stuck and pages at once; the warning does not apply while missing', () => {
    const { at } = tracker('0.16.1');
    const r = at(1100, AT_ZERO, false);
    expect(r).toMatchObject({ state: 'missing_never_registered', stuck: true, gate: { gate: 'deregisters_at_zero', source: 'version', version: '0.16.1' } });
    expect(r.page).toEqual({ firing: true, sinceSeconds: 1100, dueSeconds: 1100 });
    expect(r.deregistersAtZero).toBe(false);
  });

  test('fixed release: a cold deploy at zero is never proven; it registers within its cycle and nothing fires', () => {
    const { at } = tracker(FIRST_RELEASE_WITH_FIXES);
    const first = at(1100, AT_ZERO, false);
    expect(first).toMatchObject({ state: 'missing_never_registered', stuck: false, gate: { gate: 'serviceable_at_zero', source: 'version' } });
    expect(first.page).toEqual({ firing: false, sinceSeconds: 1100, dueSeconds: 1400 });
    expect(at(1101, AT_ZERO, false).page?.firing).toBe(false);
    const registered = at(1105, AT_ZERO, true);
    expect(registered.page).toEqual({ firing: false });
    expect(registered.deregistersAtZero).toBe(false);
    // Registered 30 s into the zero spell: the app itself shows the fixed gate.
    expect(at(1100 + GATE_EVIDENCE_SECONDS, AT_ZERO, true).gate).toMatchObject({ gate: 'serviceable_at_zero', source: 'evidence' });
  });

  test('unknown release: no proof; the page fires after its wait and not a second before, then holds whatever the cause becomes', () => {
    const { at } = tracker(undefined);
    expect(at(1100, AT_ZERO, false)).toMatchObject({ stuck: false, gate: { gate: 'unknown', source: 'none' }, page: { firing: false, dueSeconds: 1400 } });
    expect(at(1399, AT_ZERO, false).page?.firing).toBe(false);
    expect(at(1400, AT_ZERO, false).page).toEqual({ firing: true, sinceSeconds: 1100, dueSeconds: 1400 });
    // A replica starts (the look-alike cause): the page that fired stays.
    expect(at(1410, WITH_REPLICA, false)).toMatchObject({ state: 'missing_never_registered', page: { firing: true } });
    // Serve redeploys it (no longer RUNNING): the spell and the page end.
    expect(at(1420, app(dep('Model', 0, 1, 'UPDATING'), 'DEPLOYING'), false).page).toEqual({ firing: false });
  });

  test('a version that does not parse ("test") is unknown, not old', () => {
    expect(tracker('test').at(1100, AT_ZERO, false)).toMatchObject({ stuck: false, gate: { gate: 'unknown', source: 'version', version: 'test' } });
  });

  test('evidence outranks the version: an app on a "fixed" worker seen deregistered as its sibling reached zero runs the old gate', () => {
    const { at } = tracker('0.16.43');
    at(1100, WITH_REPLICA, true);
    expect(at(1120, WITH_REPLICA, true).deregistersAtZero).toBe(false);
    const lost = at(1130, AT_ZERO, false);
    expect(lost).toMatchObject({ state: 'missing_scaled_to_zero', stuck: true, gate: { gate: 'deregisters_at_zero', source: 'evidence', version: '0.16.43' } });
    expect(lost.page?.firing).toBe(true);
    // Woken and registered again: the warning names what will happen at the next idle.
    expect(at(1200, WITH_REPLICA, true)).toMatchObject({ page: { firing: false }, deregistersAtZero: true });
  });

  test('a loss long after the sibling reached zero is no evidence of the old gate', () => {
    const { at } = tracker(undefined);
    at(1100, WITH_REPLICA, true);
    at(1110, AT_ZERO, true);
    // Still registered 20 s into the zero spell (less than the evidence window), then lost 60 s later: no evidence either way.
    expect(at(1129, AT_ZERO, true).gate?.gate).toBe('unknown');
    const r = tracker(undefined);
    r.at(1100, WITH_REPLICA, true);
    r.at(1110, AT_ZERO, false);
    expect(r.at(1111, AT_ZERO, false)).toMatchObject({ gate: { gate: 'deregisters_at_zero', source: 'evidence' } });
  });

  test('the warning before incident 1a holds only for an app known to run the old gate', () => {
    const registeredIdleCapable = WITH_REPLICA;
    expect(tracker('0.16.1').at(1100, registeredIdleCapable, true).deregistersAtZero).toBe(true);
    expect(tracker(FIRST_RELEASE_WITH_FIXES).at(1100, registeredIdleCapable, true).deregistersAtZero).toBe(false);
    expect(tracker(undefined).at(1100, registeredIdleCapable, true).deregistersAtZero).toBe(false);
    expect(tracker('0.16.1').at(1100, app(dep('Model', 1, 1, 'HEALTHY', 1)), true).deregistersAtZero).toBe(false);
  });

  test('a restart with the saved histories continues the page, the gate evidence and the deploying worker\'s version', () => {
    const a = tracker(undefined);
    a.at(1100, WITH_REPLICA, true);
    a.at(1111, AT_ZERO, false);
    expect(a.at(1112, AT_ZERO, false).page?.firing).toBe(true);
    const b = tracker(undefined);
    b.t.takeHandover(new Map(a.t.histories().map((h) => [`${h.cluster}\u0000${h.app}`, h.history])));
    expect(b.at(1200, AT_ZERO, false)).toMatchObject({ gate: { gate: 'deregisters_at_zero', source: 'evidence' }, page: { firing: true, sinceSeconds: 1111 } });
    const v = tracker('0.16.1');
    v.at(1100, AT_ZERO, false);
    const gone = tracker(undefined);
    gone.t.takeHandover(new Map(v.t.histories().map((h) => [`${h.cluster}\u0000${h.app}`, h.history])));
    // The worker that deployed it is gone (restarted under a new id); its proxy still runs the code it shipped.
    expect(gone.at(1200, AT_ZERO, false).gate).toMatchObject({ gate: 'deregisters_at_zero', source: 'version', version: '0.16.1' });
  });
});

describe('the worker page (HyphaServeWorkerAppRunningNotRegistered), decided in the exporter', () => {
  const W = 'ws/wk-1:bioengine-worker';
  let report: WorkerReport | undefined;
  // The app's own page waits 10 minutes here, so the worker's view pages alone at its 5 minutes.
  const APP_LATER: PageWaits = { ...DEFAULT_PAGE_WAITS, byStateMs: Object.fromEntries(Object.keys(DEFAULT_PAGE_WAITS.byStateMs).map((k) => [k, 600_000])) as PageWaits['byStateMs'] };
  const setup = () => tracker('0.16.43', () => report, APP_LATER);

  test('a worker saying RUNNING while the registry has nothing fires after the worker wait, not before', () => {
    const { at } = setup();
    report = { claiming: [W], answered: true };
    const r = at(1100, WITH_REPLICA, false);
    expect(r.workerPage).toEqual({ firing: false, sinceSeconds: 1100, dueSeconds: 1400 });
    expect(r.claimingWorkers).toEqual([W]);
    expect(at(1399, WITH_REPLICA, false).workerPage?.firing).toBe(false);
    expect(at(1400, WITH_REPLICA, false).workerPage?.firing).toBe(true);
    // Once the app's own page fires for the same app, the worker's view is covered by it: one page per app.
    expect(at(1700, WITH_REPLICA, false)).toMatchObject({ page: { firing: true }, workerPage: { firing: false, coveredByAppPage: true, sinceSeconds: 1100 } });
  });

  test('a restarting worker (no answer) keeps its last word for the bridge; an answer otherwise or the registration ends it', () => {
    const { at } = setup();
    report = { claiming: [W], answered: true };
    at(1100, WITH_REPLICA, false);
    expect(at(1400, WITH_REPLICA, false).workerPage?.firing).toBe(true);
    report = undefined;
    expect(at(1600, WITH_REPLICA, false).workerPage?.firing).toBe(true);
    expect(at(1701, WITH_REPLICA, false).workerPage).toEqual({ firing: false });
    report = { claiming: [W], answered: true };
    at(1800, WITH_REPLICA, false);
    report = { claiming: [], answered: true };
    expect(at(1810, WITH_REPLICA, false).workerPage).toEqual({ firing: false });
    report = { claiming: [W], answered: true };
    expect(at(1820, WITH_REPLICA, true).workerPage).toEqual({ firing: false });
  });

  test('no worker tied to the cluster: never', () => {
    report = undefined;
    const { at } = setup();
    expect(at(1100, WITH_REPLICA, false).workerPage).toEqual({ firing: false });
    expect(at(2000, WITH_REPLICA, false).workerPage).toEqual({ firing: false });
  });
});

describe('hypha_registration.page_waits', () => {
  const resolve = (page_waits: unknown) => resolveHyphaRegistration(hyphaRegistrationSchema.parse({ page_waits }), { interval: '15s', timeout: '5s' }).pageWaits;

  test('defaults are today\'s: proven 0s, every other cause 5m', () => {
    const w = resolveHyphaRegistration(undefined, { interval: '15s', timeout: '5s' }).pageWaits;
    expect(w.provenMs).toBe(0);
    expect(w.workerMs).toBe(300_000);
    expect(Object.values(w.byStateMs)).toEqual(Array(6).fill(300_000));
  });

  test('a cause can have its own wait; uncertain sets the rest', () => {
    const w = resolve({ uncertain: '10m', missing_crashed: '2m', proven: '30s' });
    expect(w).toMatchObject({ provenMs: 30_000, byStateMs: { missing_crashed: 120_000, missing_scaled_to_zero: 600_000 } });
  });

  test('a wait shorter than a self-registering proxy\'s cycle, an unknown cause or a bad duration is refused', () => {
    expect(() => hyphaRegistrationSchema.parse({ page_waits: { uncertain: '10s' } })).toThrow(/at least 30s/);
    expect(() => hyphaRegistrationSchema.parse({ page_waits: { missing_never_registered: '5s' } })).toThrow(/at least 30s/);
    expect(() => hyphaRegistrationSchema.parse({ page_waits: { missing_unknown_state: '5m' } })).toThrow();
    expect(() => hyphaRegistrationSchema.parse({ page_waits: { uncertain: 'soon' } })).toThrow(/duration/);
  });
});
