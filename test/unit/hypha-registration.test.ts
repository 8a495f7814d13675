import fs from 'node:fs';
import path from 'node:path';
import { checkHyphaRegistration, defaultClusterMapping, hyphaRegistrationSchema, resolveHyphaRegistration } from '../../src/config/hypha-schema';
import { bioengineProxyClientId, expectedService, WorkerDirectory } from '../../src/registration/expected';
import { mappedWorkspaces } from '../../src/sources/hypha/workspaces';
import { matchProviders, missingCause, ProviderIndex, RegistrationTracker, TrackerInput, WAKE_GRACE_SECONDS } from '../../src/registration/tracker';
import { registrationKey } from '../../src/snapshot/handover';
import { clusterOfWorker, parseWorkerApps, parseWorkerStatus } from '../../src/sources/hypha/workers';
import { classify, conciseMessage } from '../../src/sources/hypha/errors';
import { RegistryView } from '../../src/sources/hypha/registry-view';
import { HyphaEvent, parseConnectionInfo, parseEvent, parseServiceList, ServiceInfo } from '../../src/sources/hypha/types';
import type { ServeApp, ServeDeployment } from '../../src/snapshot/types';
import { Secret } from '../../src/util/secret';
import { parseDuration } from '../../src/util/duration';

// Fixtures recorded from hypha 0.21.137 with hypha-rpc 0.21.40 (test/fixtures/hypha).
const fixture = (f: string): unknown => JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'hypha', f), 'utf8'));

function dep(name: string, status: string, running: number): ServeDeployment {
  return {
    name, status, messagePresent: false,
    replicas: { STARTING: 0, UPDATING: 0, RECOVERING: 0, RUNNING: running, STOPPING: 0, PENDING_MIGRATION: 0 },
    autoscaling: true, scaledToZero: running === 0 && status === 'HEALTHY', minReplicas: 0, maxReplicas: 1, targetReplicas: running,
  };
}

function app(name: string, status: string, deps: ServeDeployment[], deployed = 1000): ServeApp {
  return { name, status, messagePresent: false, message: '', routePrefix: `/${name}`, lastDeployedSeconds: deployed, deployments: deps };
}

const noWorkers: WorkerDirectory = { samples: [], registeredWorkers: () => [] };

describe('wire parsing (recorded)', () => {
  it('parses a recorded listServices answer, including built-ins', () => {
    const parsed = parseServiceList(fixture('list-services-ws-user-root.json'));
    expect(parsed?.malformed).toBe(0);
    const app = parsed?.services.find((s) => s.serviceId === 'my-app');
    expect(app).toEqual(expect.objectContaining({ id: 'ws-user-root/wk-fixture-58f0c7a1:my-app', workspace: 'ws-user-root', clientId: 'wk-fixture-58f0c7a1', type: 'bioengine-app', visibility: 'public' }));
    expect(parsed?.services.filter((s) => s.type === 'built-in')).toHaveLength(3);
    expect(parseServiceList({ not: 'a list' })).toBeUndefined();
    expect(parseServiceList([{ id: 'no-slash' }, { id: 'ws/c:s' }])).toEqual({ services: [expect.objectContaining({ id: 'ws/c:s' })], malformed: 1 });
  });

  it('parses recorded events; client ids are bare in both client events', () => {
    const raw = fixture('events-register-unregister-disconnect.json') as unknown[];
    const events = raw.map((r) => parseEvent(r, 1, 1));
    expect(events.map((e) => e?.type)).toEqual(['client_connected', 'service_added', 'service_removed', 'service_added', 'client_disconnected']);
    expect(events[0]).toMatchObject({ clientId: 'wk-fixture-58f0c7a1', workspace: 'ws-user-root' });
    expect(events[4]).toMatchObject({ clientId: 'wk-fixture-58f0c7a1', workspace: 'ws-user-root' });
    expect(parseEvent({ type: 'service_added', data: { id: 'bad' } }, 1, 1)).toBeUndefined();
    expect(parseEvent({ type: 'something_custom', data: {} }, 1, 1)).toBeUndefined();
  });

  it('reads the connection info the JS client exposes', () => {
    expect(parseConnectionInfo(fixture('connection-config.json'))).toEqual({
      workspace: 'ws-user-root', clientId: 'exporter-fixture', managerId: 'manager-fixture-1', hyphaVersion: '0.21.137', serverId: 'fixture-1', userId: 'root',
    });
  });
});

describe('errors', () => {
  it('classifies hypha-rpc error texts', () => {
    expect(classify(new Error('ConnectionAbortedError: Authentication error: Error decoding token headers.'))).toBe('auth');
    expect(classify(new Error("ConnectionAbortedError: Failed to establish connection: 'Workspace x does not exist or is not accessible'"))).toBe('auth');
    expect(classify(new Error('Method call timed out: */manager-a:services.default.list_services, context: …'))).toBe('timeout');
    expect(classify(new Error('RemoteError: Traceback …\nKeyError: \'Service not found: ws/*:x@*\''))).toBe('not_found');
    expect(classify(new Error('Client disconnected: ws-user-root/wk-1'))).toBe('not_found');
    expect(classify(new Error('Failed to send the request when calling method (x), error: Error: Connection is closed'))).toBe('never_sent');
    expect(classify(new Error('RPC connection closed'))).toBe('connection_lost');
    expect(classify(new Error('RemoteError: ValueError: nope'))).toBe('remote');
  });

  it('keeps the last traceback line and scrubs secrets and JWTs', () => {
    const tok = new Secret('super-secret-token-value-1234567890');
    const msg = conciseMessage(new Error(`RemoteError: Traceback (most recent call last):\n  File "x", line 1\n    ^^^^\nPermissionError: bad super-secret-token-value-1234567890 eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl`), [tok]);
    expect(msg).toBe('RemoteError: PermissionError: bad <secret> <jwt>');
  });
});

describe('RegistryView', () => {
  const svc = (id: string): ServiceInfo => {
    const [ws, rest] = id.split('/');
    const [clientId, serviceId] = rest.split(':');
    return { id, workspace: ws, clientId, serviceId, type: 'bioengine-app' };
  };
  const ev = (type: 'service_added' | 'service_removed', id: string): HyphaEvent => ({ type, service: svc(id), receivedAtMs: 0, generation: 1 });

  it('hands out the same snapshot until the view changes, and a fresh one after each change', () => {
    const v = new RegistryView();
    v.beginList('ws');
    v.finishList('ws', [svc('ws/c1:a')]);
    const first = v.snapshot();
    expect(v.snapshot()).toBe(first);
    // An event that changes nothing (a workspace never listed) keeps it.
    v.apply(ev('service_added', 'other/c:a'));
    expect(v.snapshot()).toBe(first);
    v.apply(ev('service_added', 'ws/c2:a'));
    const second = v.snapshot();
    expect(second).not.toBe(first);
    expect(second.get('ws')?.map((x) => x.id)).toEqual(['ws/c1:a', 'ws/c2:a']);
    expect(first.get('ws')?.map((x) => x.id)).toEqual(['ws/c1:a']);
    v.retain([]);
    expect(v.snapshot().size).toBe(0);
    v.beginList('ws');
    v.finishList('ws', []);
    expect(v.snapshot().size).toBe(1);
    v.invalidate();
    expect(v.snapshot().size).toBe(0);
  });

  it('applies events, drops a disconnected client\'s services, and replays events that raced a listing', () => {
    const v = new RegistryView();
    expect(v.known('ws')).toBe(false);
    v.beginList('ws');
    // Removed while the list call (which still contains it) was in flight:
    v.apply(ev('service_removed', 'ws/c1:a'));
    v.finishList('ws', [svc('ws/c1:a'), svc('ws/c1:b'), svc('ws/c2:a')]);
    expect(v.services('ws').map((s) => s.id)).toEqual(['ws/c1:b', 'ws/c2:a']);
    expect(v.apply(ev('service_added', 'ws/c3:a'))).toBe(true);
    expect(v.apply({ type: 'client_disconnected', clientId: 'c1', workspace: 'ws', receivedAtMs: 0, generation: 1 })).toBe(true);
    expect(v.services('ws').map((s) => s.id).sort()).toEqual(['ws/c2:a', 'ws/c3:a']);
    // Events for a workspace never listed are ignored (nothing to patch).
    expect(v.apply(ev('service_added', 'other/c:a'))).toBe(false);
    v.invalidate();
    expect(v.known('ws')).toBe(false);
  });
});

describe('expected service ids', () => {
  it('derives the BioEngine proxy client id like BioEngine does (sha1 prefix, checked against Python hashlib)', () => {
    expect(bioengineProxyClientId('bioengine-worker-kth-abc', 'model-runner')).toBe('bioengine-worker-kth-abc-4dcbe5dc');
    expect(bioengineProxyClientId('wk', 'my-app')).toBe('wk-431cf07b');
  });

  const be = app('model-runner', 'RUNNING', [dep('ProxyDeployment', 'HEALTHY', 1), dep('RuntimeDeployment', 'HEALTHY', 1)]);
  const plain = app('two-step', 'RUNNING', [dep('Front', 'HEALTHY', 1)]);

  it('bioengine mapping: configured worker id, else deployed_by_worker_client_id, else the reporting worker, else the only registered worker', () => {
    const m = defaultClusterMapping('c');
    expect(expectedService('c', be, m, 'bio', noWorkers)).toMatchObject({ workspace: 'bio', clientId: undefined, label: 'bio/*:model-runner' });
    expect(expectedService('c', be, m, 'bio', { samples: [], registeredWorkers: () => ['w1'] })?.clientId).toBe(bioengineProxyClientId('w1', 'model-runner'));
    const dir: WorkerDirectory = {
      registeredWorkers: () => ['w1', 'w2'],
      samples: [
        { worker: 'bio/w2:bioengine-worker', workspace: 'bio', clientId: 'w2', up: true, apps: [{ app: 'model-runner', status: 'RUNNING', deployedByWorkerClientId: 'w-old' }] },
      ],
    };
    expect(expectedService('c', be, m, 'bio', dir)?.clientId).toBe(bioengineProxyClientId('w-old', 'model-runner'));
    const noDeployedBy: WorkerDirectory = { ...dir, samples: [{ ...dir.samples[0], apps: [{ app: 'model-runner', status: 'RUNNING' }] }] };
    expect(expectedService('c', be, m, 'bio', noDeployedBy)?.clientId).toBe(bioengineProxyClientId('w2', 'model-runner'));
    const configured = { ...m, bioengine: { enabled: true, workspace: 'other', workerClientId: 'cfg' } };
    expect(expectedService('c', be, configured, 'bio', dir)).toMatchObject({ workspace: 'other', clientId: bioengineProxyClientId('cfg', 'model-runner') });
    // A worker restart (old worker gone, new one registered but not yet cross-checked, or
    // get_status failing) keeps the last known id instead of falling back to "*" or guessing the new worker.
    const restarting: WorkerDirectory = { registeredWorkers: () => ['w-new'], samples: [] };
    expect(expectedService('c', be, m, 'bio', restarting, 'w-old')?.clientId).toBe(bioengineProxyClientId('w-old', 'model-runner'));
    expect(expectedService('c', be, m, 'bio', { registeredWorkers: () => [], samples: [] }, 'w-old')?.label).toBe(`bio/${bioengineProxyClientId('w-old', 'model-runner')}:model-runner`);
    const twoFlaky: WorkerDirectory = { registeredWorkers: () => ['w1', 'w2'], samples: [{ worker: 'bio/w1:bioengine-worker', workspace: 'bio', clientId: 'w1', up: false, apps: [] }] };
    expect(expectedService('c', be, m, 'bio', twoFlaky, 'w1')?.clientId).toBe(bioengineProxyClientId('w1', 'model-runner'));
    // What a worker reports still wins over the last known id (a redeploy by another worker).
    expect(expectedService('c', be, m, 'bio', dir, 'w1')?.clientId).toBe(bioengineProxyClientId('w-old', 'model-runner'));
    // Plain apps are not BioEngine apps.
    expect(expectedService('c', plain, m, 'bio', dir)).toBeUndefined();
  });

  it('ties a worker to a Ray cluster only when the config leaves no doubt', () => {
    const m = (cluster: string, workspace: string, workerClientId?: string) => ({ cluster, enabled: true, workspace, workerClientId });
    const w = { workspace: 'bio', clientId: 'w-a' };
    expect(clusterOfWorker(w, [m('A', 'bio')])).toBe('A');
    // Two clusters share the workspace and neither pins a worker: no guess.
    expect(clusterOfWorker(w, [m('A', 'bio'), m('B', 'bio')])).toBeUndefined();
    // Pinned ids decide, also with a shared workspace.
    expect(clusterOfWorker(w, [m('A', 'bio', 'w-a'), m('B', 'bio', 'w-b')])).toBe('A');
    expect(clusterOfWorker({ workspace: 'bio', clientId: 'w-b' }, [m('A', 'bio', 'w-a'), m('B', 'bio', 'w-b')])).toBe('B');
    // A worker pinned by no mapping in a workspace whose only mapping pins another worker: unattributable.
    expect(clusterOfWorker({ workspace: 'bio', clientId: 'w-c' }, [m('A', 'bio', 'w-a')])).toBeUndefined();
    expect(clusterOfWorker(w, [m('A', 'other')])).toBeUndefined();
    expect(clusterOfWorker(w, [{ ...m('A', 'bio'), enabled: false }])).toBeUndefined();
  });

  it('template mapping: placeholders, "*" client, include/exclude, first match wins', () => {
    const cfg = resolveHyphaRegistration(
      hyphaRegistrationSchema.parse({
        clusters: [{ cluster: 'c', bioengine: { enabled: false }, templates: [
          { service: '{workspace}/bridge-{cluster}:{app}', include: '^two', exclude: 'skip' },
          { service: 'fixed-ws/*:{app}' },
        ] }],
      }),
      { interval: '15s', timeout: '5s' },
    );
    const m = cfg.clusters[0];
    expect(expectedService('c', plain, m, 'conn', noWorkers)).toMatchObject({ mapping: 'template', workspace: 'conn', clientId: 'bridge-c', serviceId: 'two-step', label: 'conn/bridge-c:two-step' });
    expect(expectedService('c', app('two-skip', 'RUNNING', []), m, 'conn', noWorkers)).toMatchObject({ workspace: 'fixed-ws', clientId: undefined, label: 'fixed-ws/*:two-skip' });
    // bioengine disabled: a ProxyDeployment app goes through the templates too.
    expect(expectedService('c', be, m, 'conn', noWorkers)?.label).toBe('fixed-ws/*:model-runner');
    expect(mappedWorkspaces(cfg.clusters, 'conn').sort()).toEqual(['conn', 'fixed-ws']);
  });

  it('matches providers: exact client, any client, mismatch', () => {
    const exp = { cluster: 'c', app: 'a', mapping: 'bioengine' as const, workspace: 'ws', clientId: 'p-1', serviceId: 'a', label: 'ws/p-1:a' };
    const s = (client: string, ws = 'ws', sid = 'a'): ServiceInfo => ({ id: `${ws}/${client}:${sid}`, workspace: ws, clientId: client, serviceId: sid });
    expect(matchProviders(exp, new ProviderIndex([]))).toEqual({ registered: false, mismatch: false });
    expect(matchProviders(exp, new ProviderIndex([s('x'), s('p-1')]))).toEqual({ registered: true, mismatch: false, providerClientId: 'p-1' });
    expect(matchProviders(exp, new ProviderIndex([s('x')]))).toEqual({ registered: true, mismatch: true, providerClientId: 'x' });
    expect(matchProviders(exp, new ProviderIndex([s('p-1', 'other'), s('p-1', 'ws', 'a-rtc')]))).toEqual({ registered: false, mismatch: false });
    expect(matchProviders({ ...exp, clientId: undefined }, new ProviderIndex([s('x')]))).toEqual({ registered: true, mismatch: false, providerClientId: 'x' });
  });
});

describe('missing causes', () => {
  const proxy = dep('ProxyDeployment', 'HEALTHY', 1);
  it.each([
    ['idle at zero, was registered', 'missing_scaled_to_zero', app('a', 'RUNNING', [proxy, dep('Model', 'HEALTHY', 0)]), true, true],
    ['waking (UPSCALING at zero)', 'missing_scaled_to_zero', app('a', 'RUNNING', [proxy, dep('Model', 'UPSCALING', 0)]), true, true],
    ['deployed at zero, never registered since birth', 'missing_never_registered', app('a', 'RUNNING', [proxy, dep('Model', 'HEALTHY', 0)]), true, false],
    // Without history the exporter must not claim either incident-1 path.
    ['birth not seen (exporter started later), never seen registered', 'missing_history_unknown', app('a', 'RUNNING', [proxy, dep('Model', 'HEALTHY', 0)]), false, false],
    ['birth not seen, seen registered since, now at zero', 'missing_scaled_to_zero', app('a', 'RUNNING', [proxy, dep('Model', 'HEALTHY', 0)]), false, true],
    ['running and serving, never registered', 'missing_never_registered', app('a', 'RUNNING', [proxy, dep('Model', 'HEALTHY', 1)]), true, false],
    ['running and serving, was registered', 'missing_other', app('a', 'RUNNING', [proxy, dep('Model', 'HEALTHY', 1)]), true, true],
    ['sibling UNHEALTHY', 'missing_crashed', app('a', 'UNHEALTHY', [proxy, dep('Model', 'UNHEALTHY', 0)]), true, true],
    ['sibling at zero and not serviceable', 'missing_crashed', app('a', 'RUNNING', [proxy, dep('Model', 'UPDATING', 0)]), true, true],
    ['deploy failed', 'missing_crashed', app('a', 'DEPLOY_FAILED', [proxy, dep('Model', 'DEPLOY_FAILED', 0)]), true, false],
    // An app Serve has not brought up owes no registration.
    ['still deploying', 'not_running', app('a', 'DEPLOYING', [proxy, dep('Model', 'UPDATING', 0)]), true, false],
    ['being deleted', 'not_running', app('a', 'DELETING', [proxy, dep('Model', 'HEALTHY', 1)]), true, true],
    ['not started', 'not_running', app('a', 'NOT_STARTED', []), true, false],
  ])('%s → %s', (_what, want, a, birth, ever) => {
    expect(missingCause(a, { birthObserved: birth, everRegistered: ever })).toBe(want);
  });

  it('a spell that began at the exporter\'s own reconnect is missing_after_reconnect, not scaled to zero', () => {
    const idleApp = app('a', 'RUNNING', [proxy, dep('Model', 'HEALTHY', 0)]);
    expect(missingCause(idleApp, { birthObserved: true, everRegistered: true, spellAfterReconnect: true })).toBe('missing_after_reconnect');
    // A crash is still told as a crash.
    expect(missingCause(app('a', 'UNHEALTHY', [proxy, dep('Model', 'UNHEALTHY', 0)]), { birthObserved: true, everRegistered: true, spellAfterReconnect: true })).toBe('missing_crashed');
  });
});

describe('RegistrationTracker', () => {
  const exp = (a: string) => new Map([[a, { cluster: 'c', app: a, mapping: 'bioengine' as const, workspace: 'ws', clientId: 'p', serviceId: a, label: `ws/p:${a}` }]]);
  const reg = (client = 'p', sid = 'a'): ServiceInfo => ({ id: `ws/${client}:${sid}`, workspace: 'ws', clientId: client, serviceId: sid });
  const input = (now: number, over: Partial<TrackerInput> = {}): TrackerInput => ({ nowSeconds: now, startedSeconds: 500, connectedSeconds: 600, afterReconnect: false, settleMs: 20_000, ...over });
  const idle = app('a', 'RUNNING', [dep('ProxyDeployment', 'HEALTHY', 1), dep('Model', 'HEALTHY', 0)], 1000);

  it('registered → scaled to zero: missing since the moment it went', () => {
    const t = new RegistrationTracker();
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([reg()]), input(1100))[0]).toMatchObject({ registered: true, state: 'registered', unregisteredSinceSeconds: undefined });
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1200))[0]).toMatchObject({ registered: false, state: 'missing_scaled_to_zero', unregisteredSinceSeconds: 1200 });
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1300))[0].unregisteredSinceSeconds).toBe(1200);
  });

  it('an app deployed after the exporter started and never registered is missing_never_registered; a redeploy starts over', () => {
    const t = new RegistrationTracker();
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1100))[0].state).toBe('missing_never_registered');
    t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([reg()]), input(1200));
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1300))[0].state).toBe('missing_scaled_to_zero');
    const redeployed = { ...idle, lastDeployedSeconds: 1350 };
    expect(t.evaluateCluster('c', [redeployed], exp('a'), new ProviderIndex([]), input(1400))[0].state).toBe('missing_never_registered');
  });

  it('after a reconnect a previously registered app is withheld during the settle window, then missing since the reconnect, with a cause of its own', () => {
    const t = new RegistrationTracker();
    t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([reg()]), input(1100));
    const after = { afterReconnect: true, connectedSeconds: 1200 };
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1205, after))[0]).toMatchObject({ settled: false, unregisteredSinceSeconds: undefined });
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1230, after))[0]).toMatchObject({
      settled: true, registered: false, unregisteredSinceSeconds: 1200, state: 'missing_after_reconnect',
    });
    // Back: the spell and its cause end; a later loss is judged on Serve's view again.
    t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([reg()]), input(1240, after));
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1250, after))[0]).toMatchObject({ state: 'missing_scaled_to_zero', unregisteredSinceSeconds: 1250 });
  });

  it('the default settle window outlasts hypha-rpc\'s 60 s ±10 % reconnect backoff', () => {
    const cfg = hyphaRegistrationSchema.parse({});
    expect(parseDuration(cfg.reconnect_settle)).toBeGreaterThan(66_000);
  });

  it('an app that is not running is not missing: no spell, and a spell ends when Serve redeploys it', () => {
    const t = new RegistrationTracker();
    const deploying = app('a', 'DEPLOYING', [dep('ProxyDeployment', 'UPDATING', 0), dep('Model', 'UPDATING', 0)], 1000);
    expect(t.evaluateCluster('c', [deploying], exp('a'), new ProviderIndex([]), input(1100))[0]).toMatchObject({ state: 'not_running', unregisteredSinceSeconds: undefined });
    const running = app('a', 'RUNNING', [dep('ProxyDeployment', 'HEALTHY', 1), dep('Model', 'HEALTHY', 1)], 1000);
    expect(t.evaluateCluster('c', [running], exp('a'), new ProviderIndex([]), input(1110))[0]).toMatchObject({ state: 'missing_never_registered', unregisteredSinceSeconds: 1110 });
    expect(t.evaluateCluster('c', [deploying], exp('a'), new ProviderIndex([]), input(1120))[0]).toMatchObject({ state: 'not_running', unregisteredSinceSeconds: undefined });
  });

  it('a woken app keeps missing_scaled_to_zero while its proxy re-registers, then says other', () => {
    const t = new RegistrationTracker();
    t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([reg()]), input(1100));
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1200))[0].state).toBe('missing_scaled_to_zero');
    const woken = app('a', 'RUNNING', [dep('ProxyDeployment', 'HEALTHY', 1), dep('Model', 'HEALTHY', 1)], 1000);
    expect(t.evaluateCluster('c', [woken], exp('a'), new ProviderIndex([]), input(1203))[0]).toMatchObject({ state: 'missing_scaled_to_zero', unregisteredSinceSeconds: 1200 });
    expect(t.evaluateCluster('c', [woken], exp('a'), new ProviderIndex([]), input(1203 + WAKE_GRACE_SECONDS - 1))[0].state).toBe('missing_scaled_to_zero');
    expect(t.evaluateCluster('c', [woken], exp('a'), new ProviderIndex([]), input(1203 + WAKE_GRACE_SECONDS))[0].state).toBe('missing_other');
    expect(t.evaluateCluster('c', [woken], exp('a'), new ProviderIndex([reg()]), input(1240))[0].state).toBe('registered');
  });

  it('a restarted tracker given the published histories continues spells and history (restart)', () => {
    const t = new RegistrationTracker();
    t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([reg()]), input(1100));
    t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1200));
    const next = new RegistrationTracker();
    next.takeHandover(new Map(t.histories().map((a) => [registrationKey(a.cluster, a.app), a.history])));
    expect(next.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1300))[0]).toMatchObject({ state: 'missing_scaled_to_zero', unregisteredSinceSeconds: 1200 });
    // Without them the history is unknown: the honest cause, and the spell restarts.
    // (The app was deployed at 1000; this exporter started at 1250.)
    expect(new RegistrationTracker().evaluateCluster('c', [idle], exp('a'), new ProviderIndex([]), input(1300, { startedSeconds: 1250 }))[0]).toMatchObject({ state: 'missing_history_unknown', unregisteredSinceSeconds: 1300 });
  });

  it('counts client-id changes of the registered provider, flags a mismatch, forgets vanished apps', () => {
    const t = new RegistrationTracker();
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([reg('p')]), input(1100))[0].clientIdChangesTotal).toBe(0);
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([reg('q')]), input(1101))[0]).toMatchObject({ clientIdMismatch: true, clientIdChangesTotal: 1, providerClientId: 'q' });
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([reg('p')]), input(1102))[0]).toMatchObject({ clientIdMismatch: false, clientIdChangesTotal: 2 });
    expect(t.evaluateCluster('c', [], exp('a'), new ProviderIndex([]), input(1103))).toEqual([]);
    expect(t.evaluateCluster('c', [idle], exp('a'), new ProviderIndex([reg('q')]), input(1104))[0].clientIdChangesTotal).toBe(0);
  });
});

describe('worker answers', () => {
  it('parses get_status and get_app_status (dict keyed by app; null service_registered = unknown)', () => {
    expect(parseWorkerStatus({ client_id: 'w', workspace: 'ws', is_ready: true, extra: 1 })).toEqual({ clientId: 'w', workspace: 'ws', isReady: true, version: undefined });
    expect(parseWorkerApps({
      b: { status: 'RUNNING', service_registered: null },
      a: { status: 'RUNNING', service_registered: false, deployed_by_worker_client_id: 'w-old' },
      broken: { no: 'status' },
    })).toEqual([
      { app: 'a', status: 'RUNNING', serviceRegistered: false, deployedByWorkerClientId: 'w-old' },
      { app: 'b', status: 'RUNNING', serviceRegistered: undefined, deployedByWorkerClientId: undefined },
    ]);
    expect(parseWorkerApps(['not', 'a', 'dict'])).toBeUndefined();
  });
});

describe('hypha_registration config', () => {
  it('defaults to the BioEngine mapping everywhere', () => {
    const r = resolveHyphaRegistration(undefined, { interval: '15s', timeout: '5s' });
    expect(r).toMatchObject({ intervalMs: 15_000, timeoutMs: 5000, reconnectSettleMs: 90_000, clusters: [], workers: { discover: true, intervalMs: 60_000, timeoutMs: 5000, logsTail: 0 } });
  });

  it('refuses bad templates, regexes, unknown keys, duplicate and unknown clusters', () => {
    const bad = (v: unknown) => hyphaRegistrationSchema.safeParse(v).success;
    expect(bad({ clusters: [{ cluster: 'c', templates: [{ service: 'no-colon' }] }] })).toBe(false);
    expect(bad({ clusters: [{ cluster: 'c', templates: [{ service: '{workspace}/x:{nope}' }] }] })).toBe(false);
    expect(bad({ clusters: [{ cluster: 'c', templates: [{ service: '{app}/x:{app}' }] }] })).toBe(false);
    expect(bad({ clusters: [{ cluster: 'c', templates: [{ service: '{workspace}/x:{app}', include: '(' }] }] })).toBe(false);
    expect(bad({ clusters: [{ cluster: 'c' }, { cluster: 'c' }] })).toBe(false);
    expect(bad({ interval: '1s', typo: true })).toBe(false);
    expect(bad({ clusters: [{ cluster: 'c', templates: [{ service: '{workspace}/*:{app}' }] }] })).toBe(true);
    const raw = hyphaRegistrationSchema.parse({ clusters: [{ cluster: 'nope' }] });
    expect(checkHyphaRegistration(raw, ['c'], [])).toEqual({ path: ['hypha_registration', 'clusters', 0, 'cluster'], problem: 'no ray_clusters entry is named "nope"' });
    expect(checkHyphaRegistration(raw, ['nope'], [])).toBeUndefined();
    const named = hyphaRegistrationSchema.parse({ clusters: [{ cluster: 'c', hypha: 'lab' }] });
    expect(checkHyphaRegistration(named, ['c'], ['public'])).toEqual({ path: ['hypha_registration', 'clusters', 0, 'hypha'], problem: 'no hypha server is named "lab"' });
    expect(checkHyphaRegistration(named, ['c'], ['public', 'lab'])).toBeUndefined();
  });
});

describe('Hypha error texts', () => {
  it('are one readable line without "[object Object]" or repeated prefixes', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { conciseMessage } = require('../../src/sources/hypha/errors') as typeof import('../../src/sources/hypha/errors');
    expect(conciseMessage(new Error('WebSocket connection error: [object Object]'))).toBe('WebSocket connection error (server unreachable or connection refused)');
    expect(conciseMessage(new Error('RemoteError: RemoteError: Target peer ws/x is not connected'))).toBe('RemoteError: Target peer ws/x is not connected');
  });
});
