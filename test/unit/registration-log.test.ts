// Issue 19 §4: the log warned `missing_never_registered` for an app 0.23 s before its proxy
// registered. A missing registration is logged once it is a judged state (seen on a Serve sample
// requested after the missing spell began), never on a first glimpse the next event contradicts.
import { DEFAULT_PAGE_WAITS } from '../../src/registration/tracker';
import { defaultClusterMapping, TemplateMapping } from '../../src/config/hypha-schema';
import { RegistrationStage, StageConfig } from '../../src/registration/stage';
import { TransitionLog } from '../../src/registration/transition-log';
import type { HyphaServerSample } from '../../src/snapshot/hypha';
import type { AppRegistration } from '../../src/snapshot/registration';
import { SnapshotStore } from '../../src/snapshot/store';
import { newSourceHealth, RayClusterSample, ServeApp } from '../../src/snapshot/types';
import type { ServiceInfo } from '../../src/sources/hypha/types';
import { memoryLogger } from '../helpers/exporter';

const flush = () => new Promise((r) => setImmediate(r));

function app(name: string, deployedSeconds: number): ServeApp {
  return {
    name, status: 'RUNNING', messagePresent: false, message: '', routePrefix: `/${name}`, lastDeployedSeconds: deployedSeconds,
    deployments: [{
      name: 'Model', status: 'HEALTHY', messagePresent: false, autoscaling: false, scaledToZero: false, minReplicas: 1, maxReplicas: 1, targetReplicas: 1,
      replicas: { STARTING: 0, UPDATING: 0, RECOVERING: 0, RUNNING: 1, STOPPING: 0, PENDING_MIGRATION: 0 },
    }],
  };
}

function ray(apps: ServeApp[], requestedSeconds: number): RayClusterSample {
  return { cluster: 'a', health: { ...newSourceHealth('ray', 'a'), up: true }, appsDroppedTotal: 0, malformedTotal: 0, state: { apps, proxies: [], appsDropped: 0, requestedSeconds } };
}

function hypha(services: ServiceInfo[]): HyphaServerSample {
  return {
    target: 'main', health: { ...newSourceHealth('hypha', 'main'), up: true }, reconnectsTotal: 0, generation: 1, workspace: 'ws',
    listedSeconds: 1, connectionsListed: 1, registry: new Map([['ws', services]]), workers: [], malformedTotal: 0,
  };
}

const registered: ServiceInfo = { id: 'ws/bridge:x', workspace: 'ws', clientId: 'bridge', serviceId: 'x' };

function setup() {
  const store = new SnapshotStore();
  const mem = memoryLogger();
  const stage = new RegistrationStage(store, { request: () => undefined }, mem.log);
  const t: TemplateMapping = { service: '{workspace}/bridge:{app}' };
  const cluster: StageConfig['clusters'][number] = { cluster: 'a', hypha: 'main', mapping: { ...defaultClusterMapping('a'), bioengine: { enabled: false }, templates: [t] } };
  stage.configure({ reconnectSettleMs: 90_000, pageWaits: DEFAULT_PAGE_WAITS, clusters: [cluster] });
  stage.start();
  const lines = () => mem.lines.map((l) => JSON.parse(l) as { msg: string; level: number; state?: string; app?: string });
  return { store, stage, lines };
}

describe('registration transitions in the log', () => {
  it('a first glimpse of a missing registration that the next event contradicts is not logged as missing', async () => {
    const { store, stage, lines } = setup();
    const now = Date.now() / 1000;
    // Serve's reading was requested a moment ago and shows the app freshly deployed and RUNNING; the proxy has not registered yet.
    store.setRayCluster(ray([app('x', now)], now - 0.5));
    store.setHyphaServer(hypha([]));
    await flush();
    expect(store.get().registration?.apps[0].state).toBe('missing_never_registered');
    // 0.23 s later the proxy registers.
    store.setHyphaServer(hypha([registered]));
    await flush();
    expect(store.get().registration?.apps[0].state).toBe('registered');
    expect(lines().filter((l) => l.msg === 'hypha registration missing')).toEqual([]);
    expect(lines().filter((l) => l.app === 'x').map((l) => [l.msg, l.state])).toEqual([['hypha registration present', 'registered']]);
    stage.stop();
  });

  it('a missing registration still missing on a Serve sample requested after the spell began is logged, once', async () => {
    const { store, stage, lines } = setup();
    const now = Date.now() / 1000;
    store.setRayCluster(ray([app('x', now)], now - 0.5));
    store.setHyphaServer(hypha([]));
    await flush();
    expect(lines().filter((l) => l.msg === 'hypha registration missing')).toEqual([]);
    // The next Serve sample, requested after the spell began: a judged state.
    store.setRayCluster(ray([app('x', now)], Date.now() / 1000 + 0.01));
    await flush();
    store.setRayCluster(ray([app('x', now)], Date.now() / 1000 + 0.02));
    await flush();
    const missing = lines().filter((l) => l.msg === 'hypha registration missing');
    expect(missing.map((l) => [l.app, l.state, l.level])).toEqual([['x', 'missing_never_registered', 40]]);
    // Registered later: reported as a change of what was logged.
    store.setHyphaServer(hypha([registered]));
    await flush();
    expect(lines().filter((l) => l.app === 'x').map((l) => l.msg)).toEqual(['hypha registration missing', 'hypha registration changed']);
    stage.stop();
  });
});

describe('TransitionLog', () => {
  const reg = (state: AppRegistration['state'], since?: number, providerClientId?: string): AppRegistration => ({
    cluster: 'a', app: 'x', hypha: 'main', workspace: 'ws', service: 'ws/bridge:x', registered: state === 'registered', state,
    unregisteredSinceSeconds: since, clientIdMismatch: false, clientIdChangesTotal: 0, providerClientId, settled: true,
  });

  it('judges a missing state only on a Serve sample requested after the spell began; unknown request time judges at once', () => {
    const log = new TransitionLog();
    expect(log.due([reg('missing_other', 100)], () => 99)).toEqual([]);
    expect(log.due([reg('missing_other', 100)], () => 100).map((t) => [t.a.state, t.seenBefore])).toEqual([['missing_other', false]]);
    expect(log.due([reg('missing_other', 100)], () => 130)).toEqual([]);
    expect(new TransitionLog().due([reg('missing_other', 100)], () => undefined).length).toBe(1);
  });

  it('reports registered and provider changes against what it last logged, and forgets apps that are gone', () => {
    const log = new TransitionLog();
    expect(log.due([reg('registered', undefined, 'p1')], () => 1).map((t) => t.seenBefore)).toEqual([false]);
    expect(log.due([reg('registered', undefined, 'p1')], () => 2)).toEqual([]);
    expect(log.due([reg('registered', undefined, 'p2')], () => 3).map((t) => t.seenBefore)).toEqual([true]);
    expect(log.due([], () => 4)).toEqual([]);
    expect(log.due([reg('registered', undefined, 'p2')], () => 5).map((t) => t.seenBefore)).toEqual([false]);
  });

  it('says nothing about an unsettled app (a reconnect still settling)', () => {
    expect(new TransitionLog().due([{ ...reg('missing_other', 1), settled: false }], () => 5)).toEqual([]);
  });
});
