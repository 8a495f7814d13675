// The registration stage joins each Ray cluster's apps with the registry of the Hypha server its
// mapping names. It is started once and reconfigured in place on a reload, so a reload that adds a
// cluster or changes a mapping leaves the apps it does not touch (their series, spell start) alone.
import { DEFAULT_PAGE_WAITS } from '../../src/registration/tracker';
import { defaultClusterMapping, TemplateMapping } from '../../src/config/hypha-schema';
import { RegistrationStage, StageConfig } from '../../src/registration/stage';
import type { HyphaServerSample } from '../../src/snapshot/hypha';
import { SnapshotStore } from '../../src/snapshot/store';
import { newSourceHealth, RayClusterSample, ServeApp, ServeDeployment } from '../../src/snapshot/types';
import type { ServiceInfo } from '../../src/sources/hypha/types';
import { memoryLogger } from '../helpers/exporter';

function dep(name: string, running: number): ServeDeployment {
  return {
    name, status: 'HEALTHY', messagePresent: false,
    replicas: { STARTING: 0, UPDATING: 0, RECOVERING: 0, RUNNING: running, STOPPING: 0, PENDING_MIGRATION: 0 },
    autoscaling: true, scaledToZero: running === 0, minReplicas: 0, maxReplicas: 1, targetReplicas: running,
  };
}

function app(name: string, running = 1): ServeApp {
  return { name, status: 'RUNNING', messagePresent: false, message: '', routePrefix: `/${name}`, lastDeployedSeconds: 1, deployments: [dep('Model', running)] };
}

function ray(cluster: string, apps: ServeApp[], requestedSeconds?: number): RayClusterSample {
  return { cluster, health: { ...newSourceHealth('ray', cluster), up: true }, appsDroppedTotal: 0, malformedTotal: 0, state: { apps, proxies: [], appsDropped: 0, requestedSeconds } };
}

function svc(workspace: string, clientId: string, serviceId: string): ServiceInfo {
  return { id: `${workspace}/${clientId}:${serviceId}`, workspace, clientId, serviceId };
}

function hypha(target: string, services: ServiceInfo[], up = true): HyphaServerSample {
  return {
    target, health: { ...newSourceHealth('hypha', target), up }, reconnectsTotal: 0, generation: 1, workspace: 'ws',
    listedSeconds: up ? 1 : 0, connectionsListed: 1, registry: up ? new Map([['ws', services]]) : new Map(), workers: [], malformedTotal: 0,
  };
}

/** A template mapping (no BioEngine): app `x` is expected as `ws/bridge:x`. */
function templated(cluster: string, server: string, template = '{workspace}/bridge:{app}'): StageConfig['clusters'][number] {
  const t: TemplateMapping = { service: template };
  return { cluster, hypha: server, mapping: { ...defaultClusterMapping(cluster), bioengine: { enabled: false }, templates: [t] } };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('RegistrationStage', () => {
  function setup() {
    const store = new SnapshotStore();
    const fresh: string[] = [];
    const stage = new RegistrationStage(store, { request: (c) => fresh.push(c) }, memoryLogger().log);
    return { store, fresh, stage };
  }

  /** Clusters a (on public) and b (on lab), both running app x, with the given registries published. */
  async function twoServers(publicServices: ServiceInfo[], labServices: ServiceInfo[]) {
    const s = setup();
    s.stage.configure({ reconnectSettleMs: 90_000, pageWaits: DEFAULT_PAGE_WAITS, clusters: [templated('a', 'public'), templated('b', 'lab')] });
    s.stage.start();
    s.store.setRayCluster(ray('a', [app('x')]));
    s.store.setRayCluster(ray('b', [app('x')]));
    s.store.setHyphaServer(hypha('public', publicServices));
    s.store.setHyphaServer(hypha('lab', labServices));
    await flush();
    return s;
  }

  it('judges each cluster on the registry of the Hypha server its mapping names', async () => {
    // x is registered on the public server only (deployed before the stage started: history unknown).
    const { store, stage } = await twoServers([svc('ws', 'bridge', 'x')], []);
    const apps = store.get().registration?.apps ?? [];
    expect(apps.map((a) => [a.cluster, a.hypha, a.state])).toEqual([['a', 'public', 'registered'], ['b', 'lab', 'missing_history_unknown']]);
    stage.stop();
  });

  it('a server that cannot be read holds only the clusters mapped to it', async () => {
    const { store, stage } = await twoServers([svc('ws', 'bridge', 'x')], [svc('ws', 'bridge', 'x')]);
    // lab goes down, and public loses the registration: only a's verdict may move.
    store.setHyphaServer(hypha('lab', [], false));
    store.setHyphaServer(hypha('public', []));
    await flush();
    const byCluster = new Map((store.get().registration?.apps ?? []).map((a) => [a.cluster, a]));
    expect(byCluster.get('a')?.state).toBe('missing_other');
    expect(byCluster.get('b')).toMatchObject({ state: 'registered', hypha: 'lab' });
    stage.stop();
  });

  it('a loss seen against an older Serve sample asks that cluster (only) for a fresh sample, through its interface', async () => {
    const { store, fresh, stage } = setup();
    stage.configure({ reconnectSettleMs: 90_000, pageWaits: DEFAULT_PAGE_WAITS, clusters: [templated('a', 'public'), templated('b', 'public')] });
    stage.start();
    const then = Date.now() / 1000 - 5;
    store.setRayCluster(ray('a', [app('x')], then));
    store.setRayCluster(ray('b', [app('y')], then));
    store.setHyphaServer(hypha('public', [svc('ws', 'bridge', 'x'), svc('ws', 'bridge', 'y')]));
    await flush();
    store.setHyphaServer(hypha('public', [svc('ws', 'bridge', 'y')]));
    await flush();
    expect(fresh).toEqual(['a']);
    // Held: the previous evaluation stays published until the fresh sample arrives.
    expect(store.get().registration?.apps.find((a) => a.cluster === 'a')?.state).toBe('registered');
    store.setRayCluster(ray('a', [app('x')], Date.now() / 1000 + 1));
    await flush();
    expect(store.get().registration?.apps.find((a) => a.cluster === 'a')?.state).toBe('missing_other');
    stage.stop();
  });

  it('a reload that adds a cluster or changes another mapping keeps an app\'s spell and published state', async () => {
    const { store, stage } = setup();
    const a = templated('a', 'public');
    stage.configure({ reconnectSettleMs: 90_000, pageWaits: DEFAULT_PAGE_WAITS, clusters: [a] });
    stage.start();
    store.setRayCluster(ray('a', [app('x')]));
    store.setHyphaServer(hypha('public', [svc('ws', 'bridge', 'x')]));
    await flush();
    store.setHyphaServer(hypha('public', []));
    await flush();
    const before = store.get().registration?.apps[0];
    expect(before?.state).toBe('missing_other');
    const since = before?.unregisteredSinceSeconds;
    expect(since).toBeDefined();

    // Reload: cluster b added (mapped to another server, not yet sampled) and a's mapping untouched.
    stage.configure({ reconnectSettleMs: 90_000, pageWaits: DEFAULT_PAGE_WAITS, clusters: [a, templated('b', 'lab', 'ws/other:{app}')] });
    // Published at once, before any source sampled again: a is still there with its spell.
    expect(store.get().registration?.apps).toEqual([expect.objectContaining({ cluster: 'a', state: 'missing_other', unregisteredSinceSeconds: since })]);
    store.setRayCluster(ray('b', [app('z')]));
    await flush();
    expect(store.get().registration?.apps.find((x) => x.cluster === 'a')?.unregisteredSinceSeconds).toBe(since);

    // Removing b drops b's apps and nothing else.
    stage.configure({ reconnectSettleMs: 90_000, pageWaits: DEFAULT_PAGE_WAITS, clusters: [a] });
    expect(store.get().registration?.apps.map((x) => x.cluster)).toEqual(['a']);
    expect(store.get().registration?.apps[0].unregisteredSinceSeconds).toBe(since);
    stage.stop();
  });

  it('a template answer is reused only while the connection workspace is the same, and only for apps Serve still lists', async () => {
    const { store, stage } = setup();
    stage.configure({ reconnectSettleMs: 90_000, pageWaits: DEFAULT_PAGE_WAITS, clusters: [templated('a', 'public')] });
    stage.start();
    store.setRayCluster(ray('a', [app('x'), app('y')]));
    store.setHyphaServer(hypha('public', [svc('ws', 'bridge', 'x')]));
    await flush();
    const services = () => (store.get().registration?.apps ?? []).map((a) => [a.app, a.service, a.state]);
    expect(services()).toEqual([['x', 'ws/bridge:x', 'registered'], ['y', 'ws/bridge:y', 'missing_history_unknown']]);
    // A reconnect into another workspace: the templates render again against it.
    store.setHyphaServer({ ...hypha('public', []), workspace: 'ws2', registry: new Map([['ws2', [svc('ws2', 'bridge', 'x')]]]) });
    await flush();
    expect(services()).toEqual([['x', 'ws2/bridge:x', 'registered'], ['y', 'ws2/bridge:y', 'missing_history_unknown']]);
    // y leaves Serve (dropped from the cache) and comes back: expected on the same service again.
    store.setRayCluster(ray('a', [app('x')]));
    await flush();
    store.setRayCluster(ray('a', [app('x'), app('y')]));
    await flush();
    expect(services()).toEqual([['x', 'ws2/bridge:x', 'registered'], ['y', 'ws2/bridge:y', 'missing_history_unknown']]);
    stage.stop();
  });

  it('without a Hypha server nothing is judged and the registration part is absent', async () => {
    const { store, stage } = setup();
    stage.configure({ reconnectSettleMs: 90_000, pageWaits: DEFAULT_PAGE_WAITS, clusters: [templated('a', 'public')] });
    stage.start();
    store.setRayCluster(ray('a', [app('x')]));
    store.setHyphaServer(hypha('public', []));
    await flush();
    expect(store.get().registration).toBeDefined();
    stage.configure(undefined);
    expect(store.get().registration).toBeUndefined();
    stage.stop();
  });
});
