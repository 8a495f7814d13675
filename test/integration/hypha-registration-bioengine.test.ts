// Seed 000 end to end: real Ray Serve apps whose ProxyDeployment registers
// itself in a real Hypha server (test/ray-apps/bioengine_like.py), one per
// proxy behaviour, and the exporter's registration state for each.
import fs from 'node:fs';
import path from 'node:path';
import { Exporter } from '../../src/exporter';
import { HyphaMetrics } from '../../src/metrics/hypha';
import { planHyphaRegistration } from '../../src/sources/hypha/planner';
import { memoryLogger, seriesCount, seriesValue } from '../helpers/exporter';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { bioengineClientId, startWorkerStandIn, WorkerStandIn } from '../harness/hypha-registrant';
import { artifactsDir, waitFor } from '../harness/proc';
import { RayCluster, rayAppConfig, ServeAppConfig, startRay } from '../harness/ray';

jest.setTimeout(900_000);

const PREFIX = 'wk-be-test';

describe('BioEngine-like apps on real Ray Serve + real Hypha', () => {
  let ray: RayCluster;
  let hypha: HyphaHandle;
  let worker: WorkerStandIn;
  let exporter: Exporter;
  let lines: string[];
  const tmp = tmpDir();
  let tokenFile: string;
  const scrape = () => exporter.metrics.render();
  const state = async (app: string) => {
    const t = await scrape();
    for (const s of ['registered', 'missing_scaled_to_zero', 'missing_never_registered', 'missing_crashed', 'missing_other']) {
      if (seriesValue(t, 'hypha_serve_app_registration_state', { app, state: s }) === 1) return s;
    }
    return undefined;
  };

  function app(name: string, behaviour: string, initialReplicas: number | null, downscaleDelayS: number): ServeAppConfig {
    const base = rayAppConfig('bioengine-like.yaml').applications[0];
    const deployments = (base.deployments ?? []).map((d) => {
      if (d.name === 'ProxyDeployment') {
        return { ...d, user_config: { behaviour, poll_s: 1, server_url: hypha.url, token_file: tokenFile, client_id_prefix: PREFIX } };
      }
      const ac: Record<string, unknown> = { ...(d.autoscaling_config as Record<string, unknown>), downscale_delay_s: downscaleDelayS, downscale_to_zero_delay_s: downscaleDelayS };
      if (initialReplicas === null) delete ac.initial_replicas;
      else ac.initial_replicas = initialReplicas;
      return { ...d, autoscaling_config: ac };
    });
    return { ...base, name, route_prefix: `/${name}`, deployments };
  }

  beforeAll(async () => {
    [ray, hypha] = await Promise.all([startRay(), startHypha({ serverId: 'be-test' })]);
    process.stdout.write(`ray start: ${ray.startMs} ms; hypha start: ${hypha.startupMs[0]} ms\n`);
    tokenFile = tmp.write('hypha-token', hypha.rootToken);
    fs.chmodSync(tokenFile, 0o600);
    // What the worker says about the apps: deployed_by_worker_client_id is how the exporter learns the proxies' prefix.
    worker = await startWorkerStandIn({
      serverUrl: hypha.url, token: hypha.rootToken, clientId: PREFIX,
      apps: {
        'be-buggy': { status: 'RUNNING', service_registered: false, deployed_by_worker_client_id: PREFIX },
        'be-fixed': { status: 'RUNNING', service_registered: true, deployed_by_worker_client_id: PREFIX },
        'be-wait': { status: 'RUNNING', service_registered: null, deployed_by_worker_client_id: PREFIX },
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
    const mem = memoryLogger();
    lines = mem.lines;
    exporter = new Exporter({ configFile: cfg, log: mem.log, planners: [planHyphaRegistration], sections: [(r) => new HyphaMetrics(r)] });
    exporter.start();
  });

  afterAll(async () => {
    await exporter?.stop();
    await worker?.disconnect().catch(() => undefined);
    await ray?.stop();
    await hypha?.stop();
    tmp.cleanup();
  });

  it('buggy proxy: missing_scaled_to_zero while Serve says RUNNING; fixed: registered; wait_for_running: missing_never_registered', async () => {
    const t0 = Date.now();
    await ray.deploy({
      applications: [
        app('be-buggy', 'buggy_deregister_at_zero', 1, 15),
        app('be-fixed', 'fixed', 1, 2),
        app('be-wait', 'wait_for_running', null, 2),
      ],
    });
    const buggyId = `ws-user-root/${bioengineClientId(PREFIX, 'be-buggy')}:be-buggy`;
    await waitFor('be-buggy registered', async () => (await scrape()).includes(`service="${buggyId}"} 1`), 240_000, 100);
    process.stdout.write(`deploy → be-buggy registered in metrics: ${Date.now() - t0} ms\n`);

    await waitFor('be-fixed registered and idle at zero', async () => {
      const t = await scrape();
      return (await state('be-fixed')) === 'registered' && seriesValue(t, 'hypha_serve_deployment_scaled_to_zero', { app: 'be-fixed', deployment: 'Model' }) === 1;
    }, 240_000, 250);
    await waitFor('be-wait never registered', async () => (await state('be-wait')) === 'missing_never_registered', 120_000, 250);

    const tz = Date.now();
    await waitFor('be-buggy missing_scaled_to_zero', async () => (await state('be-buggy')) === 'missing_scaled_to_zero', 240_000, 100);
    process.stdout.write(`be-buggy: registered → missing_scaled_to_zero after ${Date.now() - tz} ms (Model downscale delay 15 s)\n`);

    const t = await scrape();
    for (const a of ['be-buggy', 'be-fixed', 'be-wait']) {
      expect(seriesValue(t, 'hypha_serve_app_status', { app: a, status: 'RUNNING' })).toBe(1);
    }
    expect(seriesValue(t, 'hypha_serve_app_registered', { app: 'be-buggy', workspace: 'ws-user-root', service: buggyId })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_deployment_scaled_to_zero', { app: 'be-buggy', deployment: 'Model' })).toBe(1);
    const since = seriesValue(t, 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: 'be-buggy' });
    expect(since).toBeGreaterThan(tz / 1000 - 60);
    expect(since).toBeLessThanOrEqual(Date.now() / 1000);
    expect(seriesValue(t, 'hypha_serve_app_registered', { app: 'be-fixed' })).toBe(1);
    expect(seriesCount(t, 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: 'be-fixed' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_app_registered', { app: 'be-wait' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_app_registration_client_id_mismatch', { app: 'be-fixed' })).toBe(0);
    // One state per app.
    for (const a of ['be-buggy', 'be-fixed', 'be-wait']) {
      expect(seriesCount(t, 'hypha_serve_app_registration_state', { app: a })).toBe(5);
    }
    // The worker's own view, alongside.
    expect(seriesValue(t, 'hypha_serve_worker_up', { worker: worker.serviceId })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_worker_app_status', { worker: worker.serviceId, app: 'be-buggy', status: 'RUNNING' })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_worker_app_service_registered', { worker: worker.serviceId, app: 'be-buggy' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_worker_app_service_registered', { worker: worker.serviceId, app: 'be-fixed' })).toBe(1);
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

  it('a request wakes the wait_for_running app: it registers once it has a RUNNING replica', async () => {
    const r = await ray.request('/be-wait?x=1', 60_000);
    expect(r.status).toBe(200);
    await waitFor('be-wait registered', async () => (await state('be-wait')) === 'registered', 60_000, 100);
  });
});
