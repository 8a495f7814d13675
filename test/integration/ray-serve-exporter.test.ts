// The exporter against a real Ray Serve 2.60 cluster: every state the
// foundation issue names, seen through /metrics over HTTP.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { exporterWithConfig } from '../helpers/exporter';
import { seriesCount, seriesValue } from '../helpers/exposition';
import { artifactsDir, waitFor } from '../harness/proc';
import { RayCluster, rayAppConfig, startRay } from '../harness/ray';

jest.setTimeout(600_000);

describe('exporter against real Ray Serve', () => {
  let ray: RayCluster;
  let h: ReturnType<typeof exporterWithConfig>;
  let base: string;
  const scrape = async () => (await fetch(`${base}/metrics`)).text();
  const v = async (name: string, labels: Record<string, string>) => seriesValue(await scrape(), name, labels);

  beforeAll(async () => {
    ray = await startRay();
    process.stdout.write(`ray start → Serve API answering: ${ray.startMs} ms (Ray ${ray.rayVersion})\n`);
    h = exporterWithConfig(`ray_clusters:\n  - name: test\n    dashboard_url: ${ray.dashboardUrl}\n    interval: 500ms\n    timeout: 5s\n`);
    h.exporter.start();
    base = (await h.serve()).url;
  });

  afterAll(async () => {
    await h?.close();
    await ray?.stop();
  });

  it('reports an empty Serve as up with no apps', async () => {
    await waitFor('source up', async () => (await v('hypha_serve_source_up', { source: 'ray', ray_cluster: 'test' })) === 1, 30_000);
    expect(seriesCount(await scrape(), 'hypha_serve_app_status')).toBe(0);
  });

  it('follows deploy → RUNNING, scale to zero, wake-up by request, delete; promtool-clean', async () => {
    const seen = new Set<string>();
    const watch = setInterval(() => {
      void scrape().then((t) => {
        for (const s of ['DEPLOYING', 'RUNNING']) if (seriesValue(t, 'hypha_serve_app_status', { app: 'two-step', status: s }) === 1) seen.add(s);
      }).catch(() => undefined);
    }, 200);
    const t0 = Date.now();
    await ray.deploy(rayAppConfig('two-step.yaml'));
    await waitFor('two-step RUNNING in metrics', async () => (await v('hypha_serve_app_status', { app: 'two-step', status: 'RUNNING' })) === 1, 180_000, 250);
    clearInterval(watch);
    process.stdout.write(`deploy → RUNNING seen in /metrics: ${Date.now() - t0} ms; states seen: ${[...seen].join(', ')}\n`);
    expect(seen.has('DEPLOYING')).toBe(true);

    let text = await scrape();
    expect(seriesValue(text, 'hypha_serve_app_status', { ray_cluster: 'test', app: 'two-step', status: 'DEPLOYING' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_deployment_status', { app: 'two-step', deployment: 'Front', status: 'HEALTHY' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_deployment_replicas', { deployment: 'Front', state: 'RUNNING' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_deployment_min_replicas', { deployment: 'Worker' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_deployment_max_replicas', { deployment: 'Worker' })).toBe(2);
    expect(seriesValue(text, 'hypha_serve_app_info', { app: 'two-step', route_prefix: '/two-step' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_proxy_head', { ray_cluster: 'test' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_proxy_ready', { ray_cluster: 'test' })).toBe(1);
    // Real output through promtool's lint; kept for the rules' metric check.
    const f = path.join(artifactsDir(), 'metrics-ray-running.txt');
    fs.writeFileSync(f, text);
    expect(execFileSync('sh', ['-c', `promtool check metrics < '${f}' 2>&1; echo rc=$?`]).toString().trim()).toBe('rc=0');

    // Idle: Worker scales to zero; the app stays RUNNING.
    const tz = Date.now();
    await waitFor('Worker scaled to zero', async () => (await v('hypha_serve_deployment_scaled_to_zero', { app: 'two-step', deployment: 'Worker' })) === 1, 120_000, 250);
    process.stdout.write(`last request → scaled_to_zero 1: ${Date.now() - tz} ms\n`);
    // scaled_to_zero already holds while DOWNSCALING with the last replica STOPPING; wait for it to settle.
    await waitFor('Worker settled HEALTHY at zero', async () => (await v('hypha_serve_deployment_status', { deployment: 'Worker', status: 'HEALTHY' })) === 1, 60_000, 250);
    text = await scrape();
    expect(seriesValue(text, 'hypha_serve_app_status', { app: 'two-step', status: 'RUNNING' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_deployment_status', { deployment: 'Worker', status: 'HEALTHY' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_deployment_replicas', { deployment: 'Worker', state: 'RUNNING' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_deployment_target_replicas', { deployment: 'Worker' })).toBe(0);
    // Every replica state is present at zero: a 0, not a missing series.
    expect(seriesCount(text, 'hypha_serve_deployment_replicas', { deployment: 'Worker' })).toBe(6);
    // The head proxy stays ready at zero replicas (it is the one that can wake the app).
    expect(seriesValue(text, 'hypha_serve_proxy_ready', { ray_cluster: 'test' })).toBe(1);
    fs.writeFileSync(path.join(artifactsDir(), 'metrics-ray-zero.txt'), text);

    // Wake up by an HTTP request.
    const reply = await ray.request('/two-step?text=hi', 120_000);
    expect(reply.status).toBe(200);
    await waitFor('Worker awake', async () => ((await v('hypha_serve_deployment_replicas', { deployment: 'Worker', state: 'RUNNING' })) ?? 0) >= 1, 60_000, 250);
    expect(await v('hypha_serve_deployment_scaled_to_zero', { deployment: 'Worker' })).toBe(0);

    // Deleted: every series of the app goes.
    await ray.deleteAllApps();
    await waitFor('app series gone', async () => seriesCount(await scrape(), 'hypha_serve_app_status', { app: 'two-step' }) === 0, 120_000, 250);
    text = await scrape();
    expect(seriesCount(text, 'hypha_serve_deployment_replicas', { app: 'two-step' })).toBe(0);
    expect(seriesCount(text, 'hypha_serve_deployment_scaled_to_zero', { app: 'two-step' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_source_up', { ray_cluster: 'test' })).toBe(1);
  });

  it('a failed deploy shows DEPLOY_FAILED with a message', async () => {
    await ray.deploy(rayAppConfig('bad-import.yaml'));
    const name = rayAppConfig('bad-import.yaml').applications[0].name;
    await waitFor('DEPLOY_FAILED', async () => (await v('hypha_serve_app_status', { app: name, status: 'DEPLOY_FAILED' })) === 1, 120_000, 250);
    expect(await v('hypha_serve_app_message_present', { app: name })).toBe(1);
    await ray.deleteAllApps();
  });

  it('dashboard stopped: source_up 0 and no stale app series; /metrics still answers fast', async () => {
    await ray.deploy(rayAppConfig('two-step.yaml'));
    await waitFor('RUNNING', async () => (await v('hypha_serve_app_status', { app: 'two-step', status: 'RUNNING' })) === 1, 180_000, 250);
    await ray.stopDashboard();
    await waitFor('source down', async () => (await v('hypha_serve_source_up', { ray_cluster: 'test' })) === 0, 30_000, 250);
    const t0 = performance.now();
    const text = await scrape();
    const ms = performance.now() - t0;
    process.stdout.write(`/metrics with the Ray dashboard down: ${ms.toFixed(1)} ms\n`);
    expect(seriesCount(text, 'hypha_serve_app_status')).toBe(0);
    expect(seriesCount(text, 'hypha_serve_proxy_ready')).toBe(0);
    expect((seriesValue(text, 'hypha_serve_source_errors_total', { ray_cluster: 'test', reason: 'connect' }) ?? 0)
      + (seriesValue(text, 'hypha_serve_source_errors_total', { ray_cluster: 'test', reason: 'timeout' }) ?? 0)
      + (seriesValue(text, 'hypha_serve_source_errors_total', { ray_cluster: 'test', reason: 'http_status' }) ?? 0)).toBeGreaterThan(0);
  });
});
