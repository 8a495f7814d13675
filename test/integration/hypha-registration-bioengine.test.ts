// Seed 000 end to end: real Ray Serve apps whose ProxyDeployment registers
// itself in a real Hypha server the way BioEngine 0.16.1's does
// (test/ray-apps/bioengine_like.py; its fidelity: bioengine-standin.test.ts),
// and the exporter's registration state (contract v0.2) for each: deregistered
// at zero, never registered (deployed at zero), and pinned at min_replicas 1.
import fs from 'node:fs';
import path from 'node:path';
import type { Exporter } from '../../src/exporter/exporter';
import { exporterWithConfig, scrapeText } from '../helpers/exporter';
import { seriesCount, seriesValue } from '../helpers/exposition';
import { bioengineApp, bioengineServiceIds, callViaDeploymentHandle } from '../helpers/bioengine-apps';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { startWorkerStandIn, WorkerStandIn } from '../harness/hypha-registrant';
import { artifactsDir, waitFor, startTogether } from '../harness/proc';
import { RayCluster, startRay } from '../harness/ray';

jest.setTimeout(900_000);

const PREFIX = 'wk-be-test';
const STATES = ['registered', 'not_running', 'missing_scaled_to_zero', 'missing_never_registered', 'missing_crashed', 'missing_after_reconnect', 'missing_history_unknown', 'missing_other'];

describe('BioEngine-like apps on real Ray Serve + real Hypha', () => {
  let ray: RayCluster;
  let hypha: HyphaHandle;
  let worker: WorkerStandIn;
  let exporter: Exporter;
  let lines: string[];
  const tmp = tmpDir();
  let tokenFile: string;
  const scrape = () => scrapeText(exporter.metrics);
  const state = async (app: string) => {
    const t = await scrape();
    for (const s of STATES) {
      if (seriesValue(t, 'hypha_serve_app_registration_state', { app, state: s }) === 1) return s;
    }
    return undefined;
  };

  const app = (name: string, initialReplicas: number | null, downscaleDelayS: number, minReplicas?: number) =>
    bioengineApp({ name, behaviour: 'upstream', hyphaUrl: hypha.url, tokenFile, initialReplicas, downscaleDelayS, minReplicas, clientIdPrefix: PREFIX });

  beforeAll(async () => {
    [ray, hypha] = await startTogether([startRay(), startHypha({ serverId: 'be-test' })]);
    process.stdout.write(`ray start: ${ray.startMs} ms; hypha start: ${hypha.startupMs[0]} ms\n`);
    tokenFile = tmp.write('hypha-token', hypha.rootToken);
    fs.chmodSync(tokenFile, 0o600);
    // What the worker says about the apps: deployed_by_worker_client_id is how the exporter learns the proxies' prefix.
    worker = await startWorkerStandIn({
      serverUrl: hypha.url, token: hypha.rootToken, clientId: PREFIX,
      apps: {
        // Workers up to 0.16.2 do not report service_registered, later upstream does (from the proxy);
        // be-buggy's and be-pinned's stand for such a worker (the exporter reads it if present), be-wait's
        // is absent as with a 0.16.2 worker.
        'be-buggy': { status: 'RUNNING', service_registered: false, deployed_by_worker_client_id: PREFIX },
        'be-pinned': { status: 'RUNNING', service_registered: true, deployed_by_worker_client_id: PREFIX },
        'be-wait': { status: 'RUNNING', deployed_by_worker_client_id: PREFIX },
      },
    });
    const cfg = tmp.write('config.yml', [
      'global: {interval: 2s, timeout: 3s}',
      'ray_clusters:',
      // A slow Ray interval: when the buggy proxy deregisters, the exporter's last Serve
      // reading almost surely predates Model reaching zero, so a cause judged on it would be wrong.
      `  - {name: test, dashboard_url: "${ray.dashboardUrl}", interval: 10s}`,
      'hypha:',
      '  name: local',
      `  server_url: "${hypha.url}"`,
      `  bearer_token_file: "${tokenFile}"`,
      'watched_services: []',
      'hypha_registration:',
      '  workers: {interval: 2s}',
      '',
    ].join('\n'));
    const h = exporterWithConfig({ file: cfg });
    lines = h.lines;
    exporter = h.exporter;
    exporter.start();
  });

  afterAll(async () => {
    await exporter?.stop();
    await worker?.disconnect().catch(() => undefined);
    await ray?.stop();
    await hypha?.stop();
    tmp.cleanup();
  });

  it('upstream proxy: missing_scaled_to_zero while Serve says RUNNING; min_replicas 1: registered; deployed at 0: missing_never_registered', async () => {
    const t0 = Date.now();
    await ray.deploy({
      applications: [
        // The gate runs every 10 s: Model must stay up long enough for the proxy to register first.
        app('be-buggy', 1, 30),
        app('be-pinned', 1, 2, 1),
        app('be-wait', null, 30),
      ],
    });
    const buggyId = bioengineServiceIds('ws-user-root', PREFIX, 'be-buggy').ws;
    await waitFor('be-buggy registered', async () => (await state('be-buggy')) === 'registered', 240_000, 100);
    process.stdout.write(`deploy → be-buggy registered in metrics: ${Date.now() - t0} ms\n`);
    expect(seriesValue(await scrape(), 'hypha_serve_app_expected_service_info', { app: 'be-buggy', workspace: 'ws-user-root', service: buggyId })).toBe(1);

    await waitFor('be-pinned registered', async () => (await state('be-pinned')) === 'registered', 240_000, 250);
    await waitFor('be-wait never registered', async () => (await state('be-wait')) === 'missing_never_registered', 120_000, 250);

    const tz = Date.now();
    await waitFor('be-buggy missing_scaled_to_zero', async () => (await state('be-buggy')) === 'missing_scaled_to_zero', 240_000, 100);
    process.stdout.write(`be-buggy: registered → missing_scaled_to_zero after ${Date.now() - tz} ms (Model downscale delay 30 s)\n`);

    const t = await scrape();
    for (const a of ['be-buggy', 'be-pinned', 'be-wait']) {
      expect(seriesValue(t, 'hypha_serve_app_status', { app: a, status: 'RUNNING', ray_cluster: 'test' })).toBe(1);
    }
    expect(seriesValue(t, 'hypha_serve_app_registered', { app: 'be-buggy', ray_cluster: 'test', hypha: 'local' })).toBe(0);
    // The expected id is an info series of its own, not a label of the registration series.
    expect(seriesValue(t, 'hypha_serve_app_expected_service_info', { app: 'be-buggy', service: buggyId })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_deployment_scaled_to_zero', { app: 'be-buggy', deployment: 'Model' })).toBe(1);
    const since = seriesValue(t, 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: 'be-buggy' });
    expect(since).toBeGreaterThan(tz / 1000 - 60);
    expect(since).toBeLessThanOrEqual(Date.now() / 1000);
    expect(seriesValue(t, 'hypha_serve_app_registered', { app: 'be-pinned' })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_deployment_scaled_to_zero', { app: 'be-pinned', deployment: 'Model' })).toBe(0);
    expect(seriesCount(t, 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: 'be-pinned' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_app_registered', { app: 'be-wait' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_app_registration_client_id_mismatch', { app: 'be-pinned' })).toBe(0);
    // Every state of the set, one of them 1, per app.
    for (const a of ['be-buggy', 'be-pinned', 'be-wait']) {
      expect(seriesCount(t, 'hypha_serve_app_registration_state', { app: a })).toBe(STATES.length);
    }
    // The worker's own view, alongside.
    expect(seriesValue(t, 'hypha_serve_worker_up', { worker: worker.serviceId })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_worker_app_status', { worker: worker.serviceId, app: 'be-buggy', status: 'RUNNING' })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_worker_app_service_registered', { worker: worker.serviceId, app: 'be-buggy' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_worker_app_service_registered', { worker: worker.serviceId, app: 'be-pinned' })).toBe(1);
    expect(seriesCount(t, 'hypha_serve_worker_app_service_registered', { app: 'be-wait' })).toBe(0);
    fs.writeFileSync(path.join(artifactsDir(), 'metrics-hypha-bioengine.txt'), t);
    // The cause was right from the first report: the loss waited for a Serve sample
    // taken after it (not the 10 s old one still showing a Model replica).
    const parsed = lines.map((l) => JSON.parse(l) as { msg: string; app?: string; state?: string; waited_ms?: number; fresh?: boolean });
    const judged = parsed.filter((l) => l.msg === 'registration loss judged on a fresh Serve sample');
    expect(judged.length).toBeGreaterThan(0);
    expect(judged.every((l) => l.fresh)).toBe(true);
    process.stdout.write(`registration loss held for a fresh Serve sample: ${judged.map((l) => `${l.waited_ms} ms`).join(', ')}\n`);
    const buggyLog = parsed.filter((l) => l.app === 'be-buggy');
    const afterRegistered = buggyLog.slice(buggyLog.findIndex((l) => l.state === 'registered'));
    expect(afterRegistered.filter((l) => l.msg === 'hypha registration missing').map((l) => l.state)).toEqual(['missing_scaled_to_zero']);
    expect(lines.join('').includes(hypha.rootToken)).toBe(false);
  });

  it('an HTTP request cannot wake the never-registered app (no __call__); a DeploymentHandle call does, and it registers', async () => {
    const r = await ray.request('/be-wait?x=1', 60_000);
    expect(r.status).toBe(500);
    expect(await state('be-wait')).toBe('missing_never_registered');
    await callViaDeploymentHandle(ray.dashboardUrl, 'be-wait');
    await waitFor('be-wait registered', async () => (await state('be-wait')) === 'registered', 60_000, 100);
  });
});
