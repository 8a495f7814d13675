// Registration presence of a Serve app in a real Hypha server, through the
// exporter's metrics: event-driven detection, client-id mismatch and changes,
// a Hypha restart with a new server id, and bad connection settings.
import fs from 'node:fs';
import type { Exporter } from '../../src/exporter/exporter';
import { buildStatus } from '../../src/status-page/build';
import { exporterWithConfig } from '../helpers/exporter';
import { seriesCount, seriesValue } from '../helpers/exposition';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, newRootToken, startHypha } from '../harness/hypha';
import { Registrant, startRegistrant, startWorkerProcess } from '../harness/hypha-registrant';
import { freePort } from '../harness/ports';
import { waitFor, startTogether } from '../harness/proc';
import { RayCluster, rayAppConfig, startRay } from '../harness/ray';

jest.setTimeout(900_000);

const APP = 'two-step';
const BRIDGE = 'serve-bridge';
const EXPECTED = `ws-user-root/${BRIDGE}:${APP}`;

interface Running {
  exporter: Exporter;
  lines: string[];
  scrape(): Promise<string>;
  stop(): Promise<void>;
}

describe('Hypha registration of a Serve app (template mapping)', () => {
  let ray: RayCluster;
  let hypha: HyphaHandle;
  const tmp = tmpDir();
  const started: Running[] = [];
  const registrants: Registrant[] = [];

  function configText(opts: { url: string; tokenFile?: string; workspace?: string; settle?: string }): string {
    return [
      'global: {interval: 2s, timeout: 2s}',
      'ray_clusters:',
      `  - {name: test, dashboard_url: "${ray.dashboardUrl}", interval: 500ms}`,
      'hypha:',
      '  name: local',
      `  server_url: "${opts.url}"`,
      ...(opts.tokenFile ? [`  bearer_token_file: "${opts.tokenFile}"`] : []),
      ...(opts.workspace ? [`  workspace: ${opts.workspace}`] : []),
      'watched_services: []',
      'hypha_registration:',
      `  reconnect_settle: ${opts.settle ?? '20s'}`,
      '  clusters:',
      '    - cluster: test',
      '      templates:',
      `        - {service: "{workspace}/${BRIDGE}:{app}", include: "^${APP}$"}`,
      '',
    ].join('\n');
  }

  function runExporter(text: string, name: string): Running {
    const h = exporterWithConfig({ file: tmp.write(`${name}.yml`, text) });
    h.exporter.start();
    const r: Running = { exporter: h.exporter, lines: h.lines, scrape: h.scrape, stop: h.close };
    started.push(r);
    return r;
  }

  /** Scrapes for 5 s after a reload: the source stays up, the app stays missing, its spell keeps its start. */
  async function gapsAfterReload(ex: Running, since: number | undefined): Promise<string[]> {
    const gaps = new Set<string>();
    const app = { ray_cluster: 'test', app: APP };
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      const t = await ex.scrape();
      if (seriesValue(t, 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' }) !== 1) gaps.add('source_up not 1');
      if (seriesValue(t, 'hypha_serve_app_registered', app) !== 0) gaps.add('app_registered not 0');
      if (seriesValue(t, 'hypha_serve_app_unregistered_since_timestamp_seconds', app) !== since) gaps.add('unregistered_since moved');
      await new Promise((r) => setTimeout(r, 50));
    }
    return [...gaps];
  }

  const tokenFile = () => {
    const f = tmp.write('root-token', hypha.rootToken);
    fs.chmodSync(f, 0o600);
    return f;
  };

  async function registrant(clientId: string): Promise<Registrant> {
    const r = await startRegistrant({ serverUrl: hypha.url, token: hypha.rootToken, prefix: 'unused', app: APP, clientId, type: 'generic' });
    registrants.push(r);
    return r;
  }

  beforeAll(async () => {
    [ray, hypha] = await startTogether([startRay(), startHypha({ serverId: 'reg-a' })]);
    process.stdout.write(`ray start: ${ray.startMs} ms; hypha start: ${hypha.startupMs[0]} ms\n`);
    await ray.deploy(rayAppConfig('two-step.yaml'));
    await ray.waitApp(APP, (a) => a.status === 'RUNNING', 240_000);
  });

  afterEach(async () => {
    await Promise.all(registrants.splice(0).map((r) => r.disconnect().catch(() => undefined)));
    await Promise.all(started.splice(0).map((r) => r.stop()));
  });

  afterAll(async () => {
    await ray?.stop();
    await hypha?.stop();
    tmp.cleanup();
  });

  it('register / unregister / disconnect show in the metrics within a second (events, not the poll)', async () => {
    const ex = runExporter(configText({ url: hypha.url, tokenFile: tokenFile() }), 'events');
    await waitFor('sources up and app evaluated', async () => {
      const t = await ex.scrape();
      return seriesValue(t, 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' }) === 1 && seriesValue(t, 'hypha_serve_app_registered', { app: APP }) === 0;
    }, 60_000, 100);
    let t = await ex.scrape();
    expect(seriesValue(t, 'hypha_serve_app_registered', { ray_cluster: 'test', app: APP, hypha: 'local' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_app_expected_service_info', { ray_cluster: 'test', app: APP, workspace: 'ws-user-root', service: EXPECTED })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_app_unregistered_since_timestamp_seconds', { ray_cluster: 'test', app: APP })).toBeGreaterThan(0);
    expect(seriesValue(t, 'hypha_serve_hypha_connection_generation', { hypha: 'local' })).toBe(1);
    // Making the first connection is startup, not a failure to count or to show.
    expect(seriesValue(t, 'hypha_serve_source_errors_total', { source: 'hypha', hypha: 'local', reason: 'connect' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_source_errors_total', { source: 'hypha', hypha: 'local', reason: 'timeout' })).toBe(0);
    expect(ex.exporter.store.get().hypha?.get('local')?.health.lastError).toBeUndefined();
    expect(ex.lines.filter((l) => /hypha source down/.test(l))).toEqual([]);

    const reg = await registrant(BRIDGE);
    const latency = async (what: string, value: number, act: () => Promise<unknown>): Promise<number> => {
      const t0 = performance.now();
      await act();
      await waitFor(what, async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registered', { app: APP }) === value, 10_000, 5);
      return performance.now() - t0;
    };
    const tAdd = await latency('registered 1', 1, () => reg.register());
    const tRemove = await latency('registered 0 after unregister', 0, () => reg.unregister());
    await latency('registered 1 again', 1, () => reg.register());
    const tDisc = await latency('registered 0 after disconnect', 0, () => reg.disconnect());
    process.stdout.write(
      `detection latency (call → /metrics): register ${tAdd.toFixed(0)} ms, unregister_service ${tRemove.toFixed(0)} ms, client disconnect ${tDisc.toFixed(0)} ms (poll interval 2 s)\n`,
    );
    expect(tRemove).toBeLessThan(1000);
    expect(tDisc).toBeLessThan(1000);
    t = await ex.scrape();
    const states = ['registered', 'not_running', 'missing_scaled_to_zero', 'missing_never_registered', 'missing_crashed', 'missing_after_reconnect', 'missing_history_unknown', 'missing_other'];
    expect(states.filter((s) => seriesValue(t, 'hypha_serve_app_registration_state', { app: APP, state: s }) === 1)).toHaveLength(1);
    expect(seriesValue(t, 'hypha_serve_app_registration_state', { app: APP, state: 'registered' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: APP })).toBeGreaterThan(Date.now() / 1000 - 5);
  });

  it('a provider under another client id counts as registered with client_id_mismatch 1; a provider change is counted', async () => {
    const ex = runExporter(configText({ url: hypha.url, tokenFile: tokenFile() }), 'mismatch');
    await waitFor('app evaluated', async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registered', { app: APP }) === 0, 60_000, 100);
    const other = await registrant('some-other-client');
    await other.register();
    await waitFor('registered via the other client', async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registered', { app: APP }) === 1, 10_000, 20);
    let t = await ex.scrape();
    expect(seriesValue(t, 'hypha_serve_app_registration_client_id_mismatch', { ray_cluster: 'test', app: APP })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_app_registration_client_id_changes_total', { ray_cluster: 'test', app: APP })).toBe(0);
    const right = await registrant(BRIDGE);
    await right.register();
    await waitFor('mismatch cleared', async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registration_client_id_mismatch', { app: APP }) === 0, 10_000, 20);
    t = await ex.scrape();
    expect(seriesValue(t, 'hypha_serve_app_registration_client_id_changes_total', { ray_cluster: 'test', app: APP })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_app_registered', { app: APP })).toBe(1);
  });

  it('Hypha restart with a new server id: recovers without an exporter restart, and never reports registered 0 meanwhile', async () => {
    const ex = runExporter(configText({ url: hypha.url, tokenFile: tokenFile() }), 'restart');
    const reg = await registrant(BRIDGE);
    await reg.register();
    await waitFor('registered', async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registered', { app: APP }) === 1, 60_000, 50);
    const samples: { at: number; up?: number; registered?: number }[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const t = await ex.scrape();
        samples.push({ at: Date.now(), up: seriesValue(t, 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' }), registered: seriesValue(t, 'hypha_serve_app_registered', { app: APP }) });
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const tStop = Date.now();
    await hypha.restart({ serverId: 'reg-b' });
    const tReady = Date.now();
    await waitFor('source up again', async () => seriesValue(await ex.scrape(), 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' }) === 1, 30_000, 50);
    const tUp = Date.now();
    await waitFor('registered again', async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registered', { app: APP }) === 1, 60_000, 50);
    const tFresh = Date.now();
    await new Promise((r) => setTimeout(r, 1000));
    watching = false;
    await watch;
    const down = samples.find((s) => s.at > tStop && s.up === 0);
    const zeros = samples.filter((s) => s.registered === 0);
    const t = await ex.scrape();
    process.stdout.write(
      `hypha restart (new server id): source_up 0 seen ${down ? down.at - tStop : 'never'} ms after stop began; server restart took ${tReady - tStop} ms; ` +
        `source_up 1 ${tUp - tReady} ms and registered 1 ${tFresh - tReady} ms after the new server was ready; ${samples.length} scrapes, registered 0 in ${zeros.length}\n`,
    );
    expect(down).toBeDefined();
    expect(zeros).toEqual([]);
    expect(tUp - tReady).toBeLessThan(15_000);
    expect(seriesValue(t, 'hypha_serve_hypha_connection_generation', { hypha: 'local' })).toBe(2);
    expect(seriesValue(t, 'hypha_serve_hypha_reconnects_total', { hypha: 'local' })).toBe(1);
    // While Hypha was down the registration series were absent, and source_up said why.
    const during = samples.filter((s) => s.up === 0);
    expect(during.length).toBeGreaterThan(0);
    expect(during.every((s) => s.registered === undefined)).toBe(true);
    expect(ex.lines.some((l) => l.includes('hypha connection lost'))).toBe(true);
  });

  it('a provider that does not come back after a restart is reported missing once the settle window ends', async () => {
    const ex = runExporter(configText({ url: hypha.url, tokenFile: tokenFile(), settle: '3s' }), 'settle');
    const reg = await registrant(BRIDGE);
    await reg.register();
    await waitFor('registered', async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registered', { app: APP }) === 1, 60_000, 50);
    await hypha.stopServer();
    await reg.disconnect(); // gone for good
    await hypha.startServer({ serverId: 'reg-c' });
    const tReady = Date.now();
    await waitFor('source up', async () => seriesValue(await ex.scrape(), 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' }) === 1, 30_000, 50);
    expect(seriesCount(await ex.scrape(), 'hypha_serve_app_registered', { app: APP })).toBe(0); // settling
    await waitFor('missing after settle', async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registered', { app: APP }) === 0, 20_000, 50);
    const since = seriesValue(await ex.scrape(), 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: APP }) ?? 0;
    process.stdout.write(`provider gone after restart: registered 0 reported ${Date.now() - tReady} ms after the server was ready (settle 3 s)\n`);
    // The spell starts when the registry could be seen again, not when the settle window ended.
    expect(since).toBeLessThan(Date.now() / 1000 - 2);
    // The exporter knows the spell began at its own reconnect and says so, rather than
    // sending on-call to a branch Serve's view does not support.
    const t = await ex.scrape();
    expect(seriesValue(t, 'hypha_serve_app_registration_state', { app: APP, state: 'missing_after_reconnect' })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_app_registration_state', { app: APP, state: 'missing_scaled_to_zero' })).toBe(0);
  });

  it('a reload that restarts the Hypha source keeps registration series and the missing spell', async () => {
    const text = configText({ url: hypha.url, tokenFile: tokenFile() });
    const ex = runExporter(text, 'reload');
    await waitFor('missing', async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registered', { app: APP }) === 0, 60_000, 100);
    const before = await ex.scrape();
    const since = seriesValue(before, 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: APP });
    const connectErrors = seriesValue(before, 'hypha_serve_source_errors_total', { source: 'hypha', reason: 'connect' });
    await new Promise((r) => setTimeout(r, 1100));
    // A changed registry interval restarts the source (a new connection).
    tmp.write('reload.yml', text.replace('global: {interval: 2s, timeout: 2s}', 'global: {interval: 3s, timeout: 2s}'));
    expect(ex.exporter.reload().ok).toBe(true);
    expect(await gapsAfterReload(ex, since)).toEqual([]);
    const after = await ex.scrape();
    expect(seriesValue(after, 'hypha_serve_source_errors_total', { source: 'hypha', reason: 'connect' })).toBe(connectErrors);
    expect(seriesValue(after, 'hypha_serve_hypha_connection_generation', { hypha: 'local' })).toBe(1);
    expect(seriesValue(after, 'hypha_serve_source_interval_seconds', { source: 'hypha', hypha: 'local' })).toBe(3);
  });

  it('a reload that adds a Ray cluster and a mapping keeps the Hypha connection, the series and the spell', async () => {
    const text = configText({ url: hypha.url, tokenFile: tokenFile() });
    const ex = runExporter(text, 'reload-cluster');
    await waitFor('missing', async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registered', { app: APP }) === 0, 60_000, 100);
    const since = seriesValue(await ex.scrape(), 'hypha_serve_app_unregistered_since_timestamp_seconds', { ray_cluster: 'test', app: APP });
    expect(since).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 1100));
    // The same Ray dashboard under a second name, with its own mapping: an added cluster and a changed mapping list.
    const added = text
      .replace('ray_clusters:\n', `ray_clusters:\n  - {name: twin, dashboard_url: "${ray.dashboardUrl}", interval: 500ms}\n`)
      .replace('  clusters:\n', `  clusters:\n    - cluster: twin\n      templates:\n        - {service: "{workspace}/other-bridge:{app}", include: "^${APP}$"}\n`);
    tmp.write('reload-cluster.yml', added);
    expect(ex.exporter.reload().ok).toBe(true);
    expect(await gapsAfterReload(ex, since)).toEqual([]);
    await waitFor('the added cluster judged', async () => seriesValue(await ex.scrape(), 'hypha_serve_app_registered', { ray_cluster: 'twin', app: APP }) === 0, 30_000, 100);
    const after = await ex.scrape();
    expect(seriesValue(after, 'hypha_serve_app_expected_service_info', { ray_cluster: 'twin', app: APP, service: `ws-user-root/other-bridge:${APP}` })).toBe(1);
    // One connection throughout: the websocket was never rebuilt.
    expect(ex.lines.filter((l) => /"connected to hypha"|"reconnected to hypha"|rebuilding hypha connection/.test(l))).toHaveLength(1);
    expect(seriesValue(after, 'hypha_serve_hypha_reconnects_total', { hypha: 'local' })).toBe(0);
  });

  it('two Hypha servers: each mapping is judged on its own server, and one server down silences only its apps', async () => {
    const lab = await startHypha({ serverId: 'reg-lab' });
    try {
      const labToken = tmp.write('lab-token', lab.rootToken);
      fs.chmodSync(labToken, 0o600);
      const text = [
        'global: {interval: 2s, timeout: 2s}',
        'ray_clusters:',
        `  - {name: test, dashboard_url: "${ray.dashboardUrl}", interval: 500ms}`,
        `  - {name: twin, dashboard_url: "${ray.dashboardUrl}", interval: 500ms}`,
        'hypha:',
        `  - {name: local, server_url: "${hypha.url}", bearer_token_file: "${tokenFile()}"}`,
        `  - {name: lab, server_url: "${lab.url}", bearer_token_file: "${labToken}"}`,
        // The app's service is watched too, on the server it lives on (local has no provider of it).
        'watched_services:',
        `  - {service: "ws-user-root/${APP}", hypha: lab, interval: 1s}`,
        'hypha_registration:',
        '  clusters:',
        '    - cluster: test',
        '      templates:',
        `        - {service: "{workspace}/${BRIDGE}:{app}", include: "^${APP}$"}`,
        '    - cluster: twin',
        '      hypha: lab',
        '      templates:',
        `        - {service: "{workspace}/${BRIDGE}:{app}", include: "^${APP}$"}`,
        '',
      ].join('\n');
      const ex = runExporter(text, 'two-servers');
      // The app registers on the lab server only.
      const r = await startRegistrant({ serverUrl: lab.url, token: lab.rootToken, prefix: 'unused', app: APP, clientId: BRIDGE, type: 'generic' });
      registrants.push(r);
      await r.register();
      await waitFor('both clusters judged', async () => {
        const t = await ex.scrape();
        return seriesValue(t, 'hypha_serve_app_registered', { ray_cluster: 'twin', app: APP, hypha: 'lab' }) === 1
          && seriesValue(t, 'hypha_serve_app_registered', { ray_cluster: 'test', app: APP, hypha: 'local' }) === 0;
      }, 60_000, 100);
      let t = await ex.scrape();
      expect(seriesCount(t, 'hypha_serve_app_registered', { app: APP })).toBe(2);
      expect(seriesValue(t, 'hypha_serve_source_up', { source: 'hypha', hypha: 'lab' })).toBe(1);
      expect(seriesValue(t, 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' })).toBe(1);
      await waitFor('the watched service resolved on lab', async () => seriesValue(await ex.scrape(), 'hypha_serve_service_providers', { service: `ws-user-root/${APP}` }) === 1, 30_000, 100);
      // The status page names the server of each registration.
      const status = buildStatus({ snapshot: ex.exporter.store.get(), transitions: [], transitionsCapacity: 0, ready: true, version: 'test', revision: 'test', now: Date.now() / 1000 });
      const regs = status.apps.filter((a) => a.app === APP).map((a) => [a.cluster, a.registration?.hypha, a.registration?.state]).sort();
      expect(regs).toEqual([['test', 'local', 'missing_history_unknown'], ['twin', 'lab', 'registered']]);

      await lab.stop();
      await waitFor('lab down', async () => seriesValue(await ex.scrape(), 'hypha_serve_source_up', { source: 'hypha', hypha: 'lab' }) === 0, 30_000, 100);
      t = await ex.scrape();
      // Unknown, not "not registered": the lab apps' gauges are absent; the local ones carry on.
      expect(seriesValue(t, 'hypha_serve_app_registered', { ray_cluster: 'twin', app: APP })).toBeUndefined();
      expect(seriesValue(t, 'hypha_serve_app_registered', { ray_cluster: 'test', app: APP, hypha: 'local' })).toBe(0);
      expect(seriesValue(t, 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' })).toBe(1);
    } finally {
      await lab.stop().catch(() => undefined);
    }
  });

  it('a frozen BioEngine worker that Hypha still lists times out alone: the registry connection is not rebuilt', async () => {
    const worker = await startWorkerProcess({ serverUrl: hypha.url, token: hypha.rootToken, clientId: 'frozen-worker' });
    try {
      const text = configText({ url: hypha.url, tokenFile: tokenFile() }).replace('hypha_registration:\n', 'hypha_registration:\n  workers: {interval: 1s, timeout: 1s}\n');
      const ex = runExporter(text, 'frozen');
      await waitFor('worker answers', async () => seriesValue(await ex.scrape(), 'hypha_serve_worker_up', { worker: worker.serviceId }) === 1, 60_000, 100);
      process.kill(worker.proc.pid, 'SIGSTOP');
      await waitFor('worker down', async () => seriesValue(await ex.scrape(), 'hypha_serve_worker_up', { worker: worker.serviceId }) === 0, 30_000, 100);
      // Several more cycles against the frozen worker (1 s each, 1 s timeout).
      await new Promise((r) => setTimeout(r, 6000));
      const t = await ex.scrape();
      expect(seriesValue(t, 'hypha_serve_hypha_connection_generation', { hypha: 'local' })).toBe(1);
      expect(seriesValue(t, 'hypha_serve_hypha_reconnects_total', { hypha: 'local' })).toBe(0);
      expect(seriesValue(t, 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' })).toBe(1);
      expect(seriesValue(t, 'hypha_serve_app_registered', { app: APP })).toBe(0);
      expect(ex.lines.some((l) => l.includes('makes the connection suspect'))).toBe(false);
    } finally {
      await worker.stop();
    }
  });

  it('wrong token: clear log line, source_up 0 (reason auth), no registration series; a fixed token file and a reload recover', async () => {
    const bad = tmp.write('bad-token', newRootToken());
    const ex = runExporter(configText({ url: hypha.url, tokenFile: bad }), 'badtoken');
    await waitFor('auth error counted', async () => (seriesValue(await ex.scrape(), 'hypha_serve_source_errors_total', { source: 'hypha', reason: 'auth' }) ?? 0) > 0, 30_000, 100);
    // The Ray source samples on its own (its first sample may still be under way on a loaded machine): the
    // Hypha source failing must not take it down.
    await waitFor('Ray source sampled', async () => seriesValue(await ex.scrape(), 'hypha_serve_source_up', { source: 'ray', ray_cluster: 'test' }) !== undefined, 30_000, 100);
    const t = await ex.scrape();
    expect(seriesValue(t, 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' })).toBe(0);
    expect(seriesCount(t, 'hypha_serve_app_registered')).toBe(0);
    expect(seriesValue(t, 'hypha_serve_source_up', { source: 'ray', ray_cluster: 'test' })).toBe(1);
    const line = ex.lines.find((l) => l.includes('cannot connect to hypha'));
    expect(line).toContain('Authentication error');
    process.stdout.write(`wrong token log line: ${line?.trim()}\n`);
    expect(ex.lines.join('').includes(fs.readFileSync(bad, 'utf8'))).toBe(false);
    fs.writeFileSync(bad, hypha.rootToken);
    expect(ex.exporter.reload().ok).toBe(true);
    await waitFor('up after reload', async () => seriesValue(await ex.scrape(), 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' }) === 1, 30_000, 100);
    expect(ex.lines.join('').includes(hypha.rootToken)).toBe(false);
  });

  it('unknown workspace: clear log line and source_up 0 (reason auth)', async () => {
    const ex = runExporter(configText({ url: hypha.url, tokenFile: tokenFile(), workspace: 'no-such-ws' }), 'nows');
    await waitFor('auth error counted', async () => (seriesValue(await ex.scrape(), 'hypha_serve_source_errors_total', { source: 'hypha', reason: 'auth' }) ?? 0) > 0, 30_000, 100);
    expect(seriesValue(await ex.scrape(), 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' })).toBe(0);
    const line = ex.lines.find((l) => l.includes('cannot connect to hypha'));
    expect(line).toContain('no-such-ws');
    process.stdout.write(`unknown workspace log line: ${line?.trim()}\n`);
  });

  it('server down at start: source_up 0 (reason connect), the exporter keeps running and recovers when the server comes', async () => {
    const port = await freePort();
    const token = newRootToken();
    const f = tmp.write('late-token', token);
    const ex = runExporter(configText({ url: `http://127.0.0.1:${port}`, tokenFile: f }), 'late');
    await waitFor('connect error counted, ray sampled', async () => {
      const m = await ex.scrape();
      return (seriesValue(m, 'hypha_serve_source_errors_total', { source: 'hypha', reason: 'connect' }) ?? 0) > 0 && seriesValue(m, 'hypha_serve_source_up', { source: 'ray' }) === 1;
    }, 30_000, 100);
    let t = await ex.scrape();
    expect(seriesValue(t, 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_app_status', { app: APP, status: 'RUNNING' })).toBe(1);
    expect(ex.lines.some((l) => l.includes('cannot connect to hypha') && l.includes('WebSocket connection error'))).toBe(true);
    const late = await startHypha({ port, rootToken: token, serverId: 'late' });
    try {
      const tReady = Date.now();
      await waitFor('up once the server is there', async () => seriesValue(await ex.scrape(), 'hypha_serve_source_up', { source: 'hypha', hypha: 'local' }) === 1, 30_000, 50);
      process.stdout.write(`server down at start: source_up 1 ${Date.now() - tReady} ms after the late server was ready\n`);
      t = await ex.scrape();
      expect(seriesValue(t, 'hypha_serve_app_registered', { app: APP })).toBe(0);
      expect(seriesValue(t, 'hypha_serve_app_expected_service_info', { app: APP, service: EXPECTED })).toBe(1);
    } finally {
      await ex.stop();
      await late.stop();
    }
  });
});
