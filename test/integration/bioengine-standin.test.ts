// The BioEngine stand-in (test/ray-apps/bioengine_like.py) against real Ray Serve and a real
// Hypha server, observed only through Hypha (listServices, workspace events), Serve's REST API
// and the proxy replicas' own logs: it must do what aicell-lab/bioengine 0.16.1's ProxyDeployment
// does in every point the exporter relies on (docs/runbooks/bioengine.md cites the upstream lines), and, as
// behaviour `fixed`, what the fixed proxy of 0.16.15 (commit 1a18956) does (bioengine_like.py
// cites its lines).
import fs from 'node:fs';
import path from 'node:path';
import { connect, HyphaConnection } from '../../src/sources/hypha/client';
import { HyphaEvent, SYSTEM_EVENTS } from '../../src/sources/hypha/types';
import { Secret } from '../../src/util/secret';
import { bioengineApp, bioengineServiceIds, callViaDeploymentHandle } from '../helpers/bioengine-apps';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { artifactsDir, waitFor, startTogether } from '../harness/proc';
import { AppJson, RayCluster, startRay } from '../harness/ray';

jest.setTimeout(900_000);

const WORKER = 'wk-standin';
const WS = 'ws-user-root';
const ZERO = 'st-zero'; // Model starts with 1 replica, idles to 0 after 20 s
const NEVER = 'st-never'; // Model deployed at 0 replicas
const PINNED = 'st-pinned'; // min_replicas 1 (the only upstream mitigation), proxy without aiortc

/** The ProxyDeployment replicas' log text of `app` (Ray writes one file per replica). */
function proxyLogOf(ray: RayCluster, app: string): string {
  const dir = path.join(ray.tempDir, 'session_latest', 'logs', 'serve');
  return fs.readdirSync(dir).filter((f) => f.startsWith(`replica_${app}_ProxyDeployment_`) && f.endsWith('.log'))
    .map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).join('\n');
}

/** Keeps each app's proxy log as a test artifact, then stops what the block started. */
async function stopStandinStack(
  s: { ray?: RayCluster; hypha?: HyphaHandle; conn?: HyphaConnection; tmp: { cleanup(): void } }, apps: readonly string[],
): Promise<void> {
  if (s.ray) {
    for (const app of apps) {
      try {
        fs.writeFileSync(path.join(artifactsDir(), `bioengine-standin-${app}-proxy.log`), proxyLogOf(s.ray, app));
      } catch {
        /* no log yet */
      }
    }
  }
  await s.conn?.disconnect().catch(() => undefined);
  await s.ray?.stop();
  await s.hypha?.stop();
  s.tmp.cleanup();
}

describe('BioEngine stand-in behaves like BioEngine 0.16.1 ProxyDeployment', () => {
  let ray: RayCluster;
  let hypha: HyphaHandle;
  let conn: HyphaConnection;
  const events: HyphaEvent[] = [];
  const tmp = tmpDir();
  const ids = (app: string) => bioengineServiceIds(WS, WORKER, app);
  // Serve's view of ZERO's Model, sampled all along: when it last dropped to no RUNNING replica. A sample is
  // timed when its request was sent (the state it reads is no older), one at a time: under load the dashboard
  // answered seconds late, and overlapping answers arrived out of order.
  const modelAtZeroSince: number[] = [];
  let lastRunning = -1;
  let poller: NodeJS.Timeout | undefined;
  let polling = true;

  const services = async () => (await conn.listServices()).filter((s) => s.clientId.startsWith(`${WORKER}-`));
  const running = (a: AppJson | undefined, dep: string) => (a?.deployments[dep]?.replicas ?? []).filter((r) => r.state === 'RUNNING').length;
  const proxyLog = (app: string) => proxyLogOf(ray, app);
  const clientEvents = (clientId: string, from: number, to = Infinity) =>
    events.filter((e) => (e.type === 'client_connected' || e.type === 'client_disconnected') && e.clientId === clientId && e.receivedAtMs >= from && e.receivedAtMs <= to).map((e) => e.type);

  beforeAll(async () => {
    [ray, hypha] = await startTogether([startRay(), startHypha({ serverId: 'standin-test' })]);
    const tokenFile = tmp.write('hypha-token', hypha.rootToken);
    fs.chmodSync(tokenFile, 0o600);
    conn = await connect({ serverUrl: hypha.url, token: new Secret(hypha.rootToken), callTimeoutMs: 5000 });
    expect(conn.workspace).toBe(WS);
    await conn.subscribe([...SYSTEM_EVENTS], (e) => events.push(e));
    await ray.deploy({
      applications: [
        bioengineApp({ name: ZERO, behaviour: 'upstream', hyphaUrl: hypha.url, tokenFile, initialReplicas: 1, downscaleDelayS: 20, clientIdPrefix: WORKER }),
        bioengineApp({ name: NEVER, behaviour: 'upstream', hyphaUrl: hypha.url, tokenFile, initialReplicas: null, clientIdPrefix: WORKER }),
        bioengineApp({ name: PINNED, behaviour: 'upstream', hyphaUrl: hypha.url, tokenFile, initialReplicas: 1, minReplicas: 1, rtc: false, clientIdPrefix: WORKER }),
      ],
    });
    const poll = () => {
      const sentAt = Date.now();
      ray.getApplications().then((d) => {
        const n = running(d.applications[ZERO], 'Model');
        if (n === 0 && lastRunning > 0) modelAtZeroSince.push(sentAt);
        if (d.applications[ZERO]) lastRunning = n;
      }, () => undefined).finally(() => {
        if (polling) poller = setTimeout(poll, 500);
      });
    };
    poll();
  });

  afterAll(async () => {
    polling = false;
    clearTimeout(poller);
    await stopStandinStack({ ray, hypha, conn, tmp }, [ZERO, NEVER, PINNED]);
  });

  it('registers `{ws}/{worker}-{sha1(app)[:8]}:{app}` (bioengine-app, public) and `{app}-rtc` (generic, public) from check_health', async () => {
    // The proxy registers the two services one after the other: wait for both before reading the list.
    await waitFor(`${ZERO} registered`, async () => {
      const l = await services();
      return l.some((s) => s.id === ids(ZERO).ws) && l.some((s) => s.id === ids(ZERO).rtc);
    }, 240_000, 250);
    const list = await services();
    const ws = list.find((s) => s.id === ids(ZERO).ws);
    const rtc = list.find((s) => s.id === ids(ZERO).rtc);
    expect(ws).toMatchObject({ type: 'bioengine-app', visibility: 'public', clientId: ids(ZERO).clientId, serviceId: ZERO });
    expect(rtc).toMatchObject({ type: 'generic', visibility: 'public', clientId: ids(ZERO).clientId, serviceId: `${ZERO}-rtc` });
    const log = proxyLog(ZERO);
    expect(log).toContain(`✅ All deployments of app '${ZERO}' are RUNNING.`);
    expect(log).toContain(`✅ Successfully registered WebSocket service for '${ZERO}' with ID: ${ids(ZERO).ws}`);
    expect(log).toContain(`✅ Registered WebRTC service for '${ZERO}' with ID: ${ids(ZERO).rtc}`);
  });

  it('without aiortc (rtc: false) only the main service exists, with upstream\'s warning; min_replicas 1 keeps it registered', async () => {
    await waitFor(`${PINNED} registered`, async () => (await services()).some((s) => s.id === ids(PINNED).ws), 120_000, 250);
    expect((await services()).some((s) => s.id === ids(PINNED).rtc)).toBe(false);
    expect(proxyLog(PINNED)).toContain(`⚠️ Warning: Failed to register WebRTC service for '${PINNED}': aiortc is not installed`);
  });

  it('never registers an app whose sibling starts at 0 replicas; the gate logs "Waiting ..." once per health check', async () => {
    const a = await ray.waitApp(NEVER, (x) => x.status === 'RUNNING', 120_000);
    expect(running(a, 'Model')).toBe(0);
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 45_000));
    expect((await services()).some((s) => s.clientId === ids(NEVER).clientId)).toBe(false);
    // It never even connected: upstream connects only to register.
    expect(clientEvents(ids(NEVER).clientId, 0)).toEqual([]);
    const waits = proxyLog(NEVER).split('\n').filter((l) => l.includes(`⏳ Waiting for app '${NEVER}' deployments to run (pending: ['Model']).`));
    process.stdout.write(`${NEVER}: ${waits.length} "Waiting" lines in ${Math.round((Date.now() - t0) / 1000)} s since RUNNING (+ startup)\n`);
    // Serve's 10 s health-check period: ~5 in 45 s (more would mean a faster loop than upstream's).
    expect(waits.length).toBeGreaterThanOrEqual(3);
    expect(waits.length).toBeLessThanOrEqual(9);
    expect((await ray.getApplications()).applications[NEVER].status).toBe('RUNNING');
  });

  it('no __call__: a request through Serve\'s HTTP route fails with 500, and does not wake the app', async () => {
    const r = await ray.request(`/${NEVER}?x=1`, 60_000);
    expect(r.status).toBe(500);
    await waitFor('the replica logs why', async () => proxyLog(NEVER).includes("Tried to call a method '__call__' that does not exist"), 10_000, 250);
    expect(running((await ray.getApplications()).applications[NEVER], 'Model')).toBe(0);
  });

  it('deregisters ws and rtc within one health-check period after the sibling (seen RUNNING) has no RUNNING replica; the connection stays', async () => {
    const removedWs = await waitFor('ws service_removed', async () => events.find((e) => e.type === 'service_removed' && e.service.id === ids(ZERO).ws), 240_000, 100);
    const removedRtc = await waitFor('rtc service_removed', async () => events.find((e) => e.type === 'service_removed' && e.service.id === ids(ZERO).rtc), 5_000, 100);
    const tZero = modelAtZeroSince.filter((t) => t <= removedWs.receivedAtMs + 1_000).pop();
    expect(tZero).toBeDefined();
    const lag = removedWs.receivedAtMs - (tZero as number);
    process.stdout.write(`${ZERO}: deregistered ${lag} ms after Serve showed Model without a RUNNING replica\n`);
    expect(lag).toBeGreaterThan(-1_000); // never before Serve shows the sibling at zero (500 ms sampling)
    expect(lag).toBeLessThan(16_000); // one 10 s period, plus sampling and scheduling slack
    expect(Math.abs(removedRtc.receivedAtMs - removedWs.receivedAtMs)).toBeLessThan(2_000);
    expect((await ray.getApplications()).applications[ZERO].status).toBe('RUNNING');
    const log = proxyLog(ZERO);
    expect(log).toContain(`❌ Deployment 'Model' of app '${ZERO}' has no RUNNING replica. Deregistering Hypha service until it recovers.`);
    expect(log).toContain(`🔌 Unregistered WebSocket service '${ids(ZERO).ws}' for '${ZERO}'`);
    expect(log).toContain(`🔌 Unregistered WebRTC service '${ids(ZERO).rtc}' for '${ZERO}'`);
    // Deregistered, then back at the gate: the same line as before the first registration.
    await new Promise((r) => setTimeout(r, 12_000));
    const after = proxyLog(ZERO).split(`Deregistering Hypha service until it recovers.`).pop() ?? '';
    expect(after).toContain(`⏳ Waiting for app '${ZERO}' deployments to run (pending: ['Model']).`);
    // Unregistering a service is not a disconnect: the client stays connected, without services.
    expect(clientEvents(ids(ZERO).clientId, removedWs.receivedAtMs)).toEqual([]);
    expect((await services()).filter((s) => s.clientId === ids(ZERO).clientId && s.serviceId !== 'built-in')).toEqual([]);
  });

  it('a DeploymentHandle call wakes it; the proxy re-registers within a period, disconnecting and reconnecting under the same client id', async () => {
    const t0 = Date.now();
    const out = await callViaDeploymentHandle(ray.dashboardUrl, ZERO, 'Model', 'predict', 'wake');
    expect(out).toContain('HANDLE_RESULT predicted:wake');
    const added = await waitFor('ws service_added again', async () => events.find((e) => e.type === 'service_added' && e.service.id === ids(ZERO).ws && e.receivedAtMs >= t0), 60_000, 100);
    process.stdout.write(`${ZERO}: handle call → re-registered in ${added.receivedAtMs - t0} ms (includes the job's start)\n`);
    await waitFor('rtc back', async () => (await services()).some((s) => s.id === ids(ZERO).rtc), 10_000, 100);
    // Same client id, via a disconnect then a connect, before the service came back.
    expect(clientEvents(ids(ZERO).clientId, t0, added.receivedAtMs)).toEqual(['client_disconnected', 'client_connected']);
    const log = proxyLog(ZERO);
    expect(log.split(`✅ Successfully connected to Hypha server as client '${ids(ZERO).clientId}' for '${ZERO}'`).length - 1).toBeGreaterThanOrEqual(2);
  });

  it('the app pinned at min_replicas 1 was registered the whole time, once', async () => {
    const adds = events.filter((e) => e.type === 'service_added' && e.service.id === ids(PINNED).ws);
    const removes = events.filter((e) => e.type === 'service_removed' && e.service.id === ids(PINNED).ws);
    expect(adds.length).toBe(1);
    expect(removes.length).toBe(0);
    expect(proxyLog(PINNED)).not.toContain('Deregistering Hypha service');
  });
});

const FX_WORKER = 'wk-fixed';
const FX_COLD = 'fx-cold'; // Model deployed at 0 replicas (min_replicas 0, no initial_replicas)
const FX_IDLE = 'fx-idle'; // Model starts with 1 replica, idles to 0 after 20 s

describe('BioEngine stand-in `fixed` behaves like the fixed ProxyDeployment of BioEngine 0.16.15', () => {
  let ray: RayCluster;
  let hypha: HyphaHandle;
  let conn: HyphaConnection;
  const events: HyphaEvent[] = [];
  const tmp = tmpDir();
  const ids = (app: string) => bioengineServiceIds(WS, FX_WORKER, app);
  // Serve's view, sampled every 250 ms from the deploy on: when each app first read RUNNING (and
  // its Model's RUNNING replicas then), and when FX_IDLE's Model dropped to no RUNNING replica.
  const firstRunning: Record<string, { at: number; model: number }> = {};
  const idleAtZeroSince: number[] = [];
  const idleModelStatusAtZero = new Set<string>();
  let idleLast = -1;
  let poller: NodeJS.Timeout | undefined;

  const services = async () => (await conn.listServices()).filter((s) => s.clientId.startsWith(`${FX_WORKER}-`));
  const running = (a: AppJson | undefined, dep: string) => (a?.deployments[dep]?.replicas ?? []).filter((r) => r.state === 'RUNNING').length;
  const proxyLog = (app: string) => proxyLogOf(ray, app);

  beforeAll(async () => {
    [ray, hypha] = await startTogether([startRay(), startHypha({ serverId: 'standin-fixed-test' })]);
    const tokenFile = tmp.write('hypha-token', hypha.rootToken);
    fs.chmodSync(tokenFile, 0o600);
    conn = await connect({ serverUrl: hypha.url, token: new Secret(hypha.rootToken), callTimeoutMs: 5000 });
    expect(conn.workspace).toBe(WS);
    await conn.subscribe([...SYSTEM_EVENTS], (e) => events.push(e));
    await ray.deploy({
      applications: [
        bioengineApp({ name: FX_COLD, behaviour: 'fixed', hyphaUrl: hypha.url, tokenFile, initialReplicas: null, clientIdPrefix: FX_WORKER }),
        bioengineApp({ name: FX_IDLE, behaviour: 'fixed', hyphaUrl: hypha.url, tokenFile, initialReplicas: 1, downscaleDelayS: 20, clientIdPrefix: FX_WORKER }),
      ],
    });
    poller = setInterval(() => {
      const at = Date.now();
      ray.getApplications().then((d) => {
        for (const app of [FX_COLD, FX_IDLE]) {
          const a = d.applications[app];
          if (a?.status === 'RUNNING' && !firstRunning[app]) firstRunning[app] = { at, model: running(a, 'Model') };
        }
        const idle = d.applications[FX_IDLE];
        if (!idle) return;
        const n = running(idle, 'Model');
        if (n === 0 && idleLast > 0) idleAtZeroSince.push(at);
        if (n === 0 && idleAtZeroSince.length > 0) idleModelStatusAtZero.add(idle.deployments.Model?.status ?? '?');
        idleLast = n;
      }, () => undefined);
    }, 250);
  });

  afterAll(async () => {
    clearInterval(poller);
    await stopStandinStack({ ray, hypha, conn, tmp }, [FX_COLD, FX_IDLE]);
  });

  it('registers an app deployed cold at min_replicas 0 within seconds of Serve saying RUNNING (0.16.1 never does)', async () => {
    const listedAt = await waitFor(`${FX_COLD} listed`, async () => ((await services()).some((s) => s.id === ids(FX_COLD).ws) ? Date.now() : undefined), 240_000, 200);
    const running0 = await waitFor(`${FX_COLD} seen RUNNING`, async () => firstRunning[FX_COLD], 10_000, 100);
    const added = events.find((e) => e.type === 'service_added' && e.service.id === ids(FX_COLD).ws);
    const delay = listedAt - running0.at;
    console.log(`${FX_COLD}: Serve RUNNING -> listed by Hypha in ${delay} ms (service_added event ${added ? added.receivedAtMs - running0.at : 'n/a'} ms; Model RUNNING replicas at RUNNING: ${running0.model})`);
    expect(running0.model).toBe(0); // deployed cold: no Model replica
    expect(delay).toBeLessThan(30_000);
    await waitFor(`${FX_COLD} rtc listed`, async () => (await services()).some((s) => s.id === ids(FX_COLD).rtc), 10_000, 200);
    const app = (await ray.getApplications()).applications[FX_COLD];
    expect(app.status).toBe('RUNNING');
    expect(running(app, 'Model')).toBe(0); // still cold: registering did not wake it
  });

  it('an app whose Model idles to zero stays registered through the idle period', async () => {
    await waitFor(`${FX_IDLE} listed`, async () => (await services()).some((s) => s.id === ids(FX_IDLE).ws), 240_000, 250);
    const tZero = await waitFor(`${FX_IDLE} Model at 0`, async () => idleAtZeroSince[0], 180_000, 250);
    const until = tZero + 40_000;
    let samples = 0;
    while (Date.now() < until) {
      const l = await services();
      expect(l.some((s) => s.id === ids(FX_IDLE).ws)).toBe(true);
      expect(l.some((s) => s.id === ids(FX_IDLE).rtc)).toBe(true);
      samples += 1;
      await new Promise((r) => setTimeout(r, 500));
    }
    const d = (await ray.getApplications()).applications[FX_IDLE];
    console.log(`${FX_IDLE}: listed in all ${samples} samples over 40 s after Model reached 0 RUNNING replicas; Model status at zero: ${[...idleModelStatusAtZero].join(', ')}`);
    expect(running(d, 'Model')).toBe(0);
    expect(d.status).toBe('RUNNING');
    expect(events.filter((e) => e.type === 'service_removed' && (e.service.id === ids(FX_IDLE).ws || e.service.id === ids(FX_IDLE).rtc))).toEqual([]);
    const log = proxyLog(FX_IDLE);
    expect(log).not.toContain('Deregistering Hypha service');
    expect(log).toContain(`✅ Successfully registered WebSocket service for '${FX_IDLE}' with ID: ${ids(FX_IDLE).ws}`);
  });

  it('the proxy logs upstream\'s gate-open line (not 0.16.1\'s) and registers from its maintenance task', async () => {
    for (const app of [FX_COLD, FX_IDLE]) {
      const log = proxyLog(app);
      expect(log).toContain(`✅ All deployments of app '${app}' are serviceable.`);
      expect(log).not.toContain(`✅ All deployments of app '${app}' are RUNNING.`);
      // Registration follows the gate, from the background task (check_health makes no Hypha calls).
      const open = log.indexOf(`are serviceable.`);
      const registered = log.indexOf(`✅ Successfully registered WebSocket service for '${app}'`);
      expect(open).toBeGreaterThanOrEqual(0);
      expect(registered).toBeGreaterThan(open);
    }
  });
});
