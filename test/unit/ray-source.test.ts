import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exporterWithConfig, scrapeText } from '../helpers/exporter';
import { seriesCount, seriesValue } from '../helpers/exposition';
import { json, startUpstream } from '../helpers/http-upstream';

function serve(apps: Record<string, unknown>, proxyPort?: number) {
  return {
    controller_info: { node_id: 'n1', node_ip: '127.0.0.1' },
    http_options: proxyPort ? { host: '127.0.0.1', port: proxyPort } : undefined,
    proxies: proxyPort ? { n1: { node_id: 'n1', node_ip: '127.0.0.1', status: 'HEALTHY' } } : {},
    applications: apps,
  };
}
const zeroApp = {
  name: 'zero', route_prefix: '/zero', status: 'RUNNING', message: '', last_deployed_time_s: 1790000000.5,
  deployments: {
    Front: { name: 'Front', status: 'HEALTHY', message: '', deployment_config: { num_replicas: 1 }, target_num_replicas: 1, replicas: [{ replica_id: 'r', state: 'RUNNING', start_time_s: 1 }] },
    Worker: { name: 'Worker', status: 'HEALTHY', status_trigger: 'DOWNSCALE_COMPLETED', message: '', deployment_config: { autoscaling_config: { min_replicas: 0, max_replicas: 2 } }, target_num_replicas: 0, replicas: [] },
  },
};

describe('Ray Serve source through the exporter', () => {
  let up: Awaited<ReturnType<typeof startUpstream>>;
  let proxy: Awaited<ReturnType<typeof startUpstream>>;
  beforeAll(async () => {
    up = await startUpstream(json({}));
    proxy = await startUpstream((_q, r) => { r.writeHead(200); r.end('success'); });
  });
  afterAll(async () => {
    await up.close();
    await proxy.close();
  });

  function config(extra = '') {
    return `ray_clusters:\n  - name: c1\n    dashboard_url: ${up.url}\n    interval: 1h\n    timeout: 300ms\n    max_response_bytes: 100000\n${extra}`;
  }

  it('exports state sets, explicit zeros, bounds, scaled-to-zero, proxies; removes vanished apps', async () => {
    up.set(json(serve({ zero: zeroApp }, proxy.port)));
    const h = exporterWithConfig(config());
    h.exporter.start();
    await h.exporter.settled();
    let text = await scrapeText(h.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_source_up', { source: 'ray', ray_cluster: 'c1' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_app_status', { ray_cluster: 'c1', app: 'zero', status: 'RUNNING' })).toBe(1);
    expect(seriesCount(text, 'hypha_serve_app_status', { app: 'zero' })).toBe(6);
    expect(seriesValue(text, 'hypha_serve_app_status', { app: 'zero', status: 'DEPLOY_FAILED' })).toBe(0);
    expect(seriesCount(text, 'hypha_serve_deployment_replicas', { deployment: 'Worker' })).toBe(6);
    expect(seriesValue(text, 'hypha_serve_deployment_replicas', { deployment: 'Worker', state: 'RUNNING' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_deployment_replicas', { deployment: 'Front', state: 'RUNNING' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_deployment_scaled_to_zero', { deployment: 'Worker' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_deployment_scaled_to_zero', { deployment: 'Front' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_deployment_min_replicas', { deployment: 'Worker' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_deployment_max_replicas', { deployment: 'Worker' })).toBe(2);
    expect(seriesValue(text, 'hypha_serve_deployment_target_replicas', { deployment: 'Worker' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_app_deployed_timestamp_seconds', { app: 'zero' })).toBe(1790000000.5);
    expect(seriesValue(text, 'hypha_serve_app_info', { app: 'zero', route_prefix: '/zero' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_proxy_ready', { node_id: 'n1', node_ip: '127.0.0.1' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_proxy_head', { node_id: 'n1' })).toBe(1);

    // App deleted upstream: its series go in the same cycle.
    up.set(json(serve({}, proxy.port)));
    await h.exporter.sampleAll();
    text = await scrapeText(h.exporter.metrics);
    expect(seriesCount(text, 'hypha_serve_app_status')).toBe(0);
    expect(seriesCount(text, 'hypha_serve_deployment_replicas')).toBe(0);
    expect(seriesValue(text, 'hypha_serve_source_up', { ray_cluster: 'c1' })).toBe(1);
    await h.close();
  });

  it('proxy readiness 0 on 503 (worker proxy without replicas)', async () => {
    proxy.set((_q, r) => { r.writeHead(503); r.end('No replicas are available yet.'); });
    up.set(json(serve({ zero: zeroApp }, proxy.port)));
    const h = exporterWithConfig(config());
    h.exporter.start();
    await h.exporter.settled();
    const text = await scrapeText(h.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_proxy_ready', { node_id: 'n1' })).toBe(0);
    await h.close();
    proxy.set((_q, r) => { r.writeHead(200); r.end('success'); });
  });

  it.each([
    ['503 with a text body', (_q: unknown, r: import('node:http').ServerResponse) => { r.writeHead(503, { 'content-type': 'text/plain' }); r.end('Failed to get a response from the controller.'); }, 'http_status'],
    ['truncated JSON', json('{"applications": {"a": {"status": "RUN'), 'bad_json'],
    ['wrong types', json({ applications: 'none' }), 'schema'],
    ['an oversized body', json({ applications: {}, pad: 'x'.repeat(200000) }), 'too_large'],
    ['a hang', () => { /* never answers */ }, 'timeout'],
    ['401', json({}, 401), 'auth'],
  ])('%s: source_up 0, counted by reason, no stale app series, recovers', async (_name, handler, reason) => {
    up.set(json(serve({ zero: zeroApp })));
    const h = exporterWithConfig(config());
    h.exporter.start();
    await h.exporter.settled();
    expect(seriesValue(await scrapeText(h.exporter.metrics), 'hypha_serve_app_status', { app: 'zero', status: 'RUNNING' })).toBe(1);
    up.set(handler as Parameters<typeof up.set>[0]);
    const t0 = Date.now();
    await h.exporter.sampleAll();
    expect(Date.now() - t0).toBeLessThan(5000);
    // /metrics answers from the snapshot, whatever the upstream does.
    const text = await scrapeText(h.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_source_up', { ray_cluster: 'c1' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_source_errors_total', { ray_cluster: 'c1', reason })).toBe(1);
    expect(seriesCount(text, 'hypha_serve_app_status')).toBe(0);
    up.set(json(serve({ zero: zeroApp })));
    await h.exporter.sampleAll();
    expect(seriesValue(await scrapeText(h.exporter.metrics), 'hypha_serve_source_up', { ray_cluster: 'c1' })).toBe(1);
    await h.close();
  });

  it('caps apps per cluster and counts what was dropped', async () => {
    const apps: Record<string, unknown> = {};
    for (let i = 0; i < 5; i++) apps[`app${i}`] = { ...zeroApp, name: `app${i}` };
    up.set(json(serve(apps)));
    const h = exporterWithConfig(config('    max_apps: 3\n'));
    h.exporter.start();
    await h.exporter.settled();
    const text = await scrapeText(h.exporter.metrics);
    expect(seriesCount(text, 'hypha_serve_app_status', { status: 'RUNNING' })).toBe(3);
    expect(seriesValue(text, 'hypha_serve_cluster_apps_dropped_total', { ray_cluster: 'c1' })).toBe(2);
    await h.close();
  });

  it('sends the bearer token and never shows it in metrics or logs', async () => {
    const token = 'ray-token-very-secret-42';
    let seen = '';
    let agent = '';
    up.set((req, res) => { seen = String(req.headers.authorization); agent = String(req.headers['user-agent']); res.writeHead(500); res.end(`echo ${seen}`); });
    const h = exporterWithConfig(config('    bearer_token_env: RAYTOK\n'), { env: { RAYTOK: token } });
    h.exporter.start();
    await h.exporter.settled();
    expect(seen).toBe(`Bearer ${token}`);
    // Ray 2.40 answers 500 without a User-Agent.
    expect(agent).toMatch(/^hypha-serve-exporter\//);
    const text = await scrapeText(h.exporter.metrics);
    expect(text).not.toContain(token);
    expect(h.lines.join('')).not.toContain(token);
    await h.close();
  });

  it('reload with a bad config keeps the old one running', async () => {
    up.set(json(serve({ zero: zeroApp })));
    const h = exporterWithConfig(config());
    h.exporter.start();
    await h.exporter.settled();
    h.rewrite('ray_clusters:\n  - name: c1\n    dashboard_url: nope\n');
    const r = h.exporter.reload();
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/config\.yml:3:\d+: ray_clusters\[0\]\.dashboard_url/);
    let text = await scrapeText(h.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_exporter_config_last_reload_successful')).toBe(0);
    expect(seriesValue(text, 'hypha_serve_app_status', { app: 'zero', status: 'RUNNING' })).toBe(1);
    expect(h.exporter.config?.rayClusters[0].dashboardUrl).toBe(up.url);
    // A good reload that renames the cluster replaces its series.
    h.rewrite(config().replace('name: c1', 'name: c2'));
    expect(h.exporter.reload().ok).toBe(true);
    await h.exporter.settled();
    await new Promise((r) => setTimeout(r, 50));
    text = await scrapeText(h.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_exporter_config_last_reload_successful')).toBe(1);
    expect(seriesCount(text, 'hypha_serve_app_status', { ray_cluster: 'c1' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_app_status', { ray_cluster: 'c2', app: 'zero', status: 'RUNNING' })).toBe(1);
    expect(seriesCount(text, 'hypha_serve_source_up', { ray_cluster: 'c1' })).toBe(0);
    await h.close();
  });

  it('a reload that restarts the source carries its health, counters and data over: no up 0, no gap', async () => {
    up.set(json(serve({ zero: zeroApp })));
    const h = exporterWithConfig(config());
    h.exporter.start();
    await h.exporter.settled();
    let text = await scrapeText(h.exporter.metrics);
    const lastSuccess = seriesValue(text, 'hypha_serve_source_last_success_timestamp_seconds', { source: 'ray', ray_cluster: 'c1' });
    expect(seriesValue(text, 'hypha_serve_source_interval_seconds', { source: 'ray', ray_cluster: 'c1' })).toBe(3600);
    // One failed sample counts an error; the reload must not reset that counter.
    up.set((_req, res) => { res.writeHead(500); res.end('boom'); });
    await h.exporter.sampleAll();
    up.set(json(serve({ zero: zeroApp })));
    await h.exporter.sampleAll();
    text = await scrapeText(h.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_source_errors_total', { ray_cluster: 'c1', reason: 'http_status' })).toBe(1);
    // A changed interval restarts the source; while its first sample is pending nothing may read as down.
    up.set((_req, res) => { setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(serve({ zero: zeroApp }))), 300); });
    h.rewrite(config().replace('interval: 1h', 'interval: 30m'));
    expect(h.exporter.reload().ok).toBe(true);
    text = await scrapeText(h.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_source_up', { source: 'ray', ray_cluster: 'c1' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_source_last_success_timestamp_seconds', { source: 'ray', ray_cluster: 'c1' })).toBeGreaterThanOrEqual(lastSuccess ?? Infinity);
    expect(seriesValue(text, 'hypha_serve_source_errors_total', { ray_cluster: 'c1', reason: 'http_status' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_app_status', { ray_cluster: 'c1', app: 'zero', status: 'RUNNING' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_source_interval_seconds', { source: 'ray', ray_cluster: 'c1' })).toBe(1800);
    await h.exporter.settled();
    await h.close();
  });

  it('an unchanged answer is not parsed again: the same app objects, a fresh request time; a changed one is', async () => {
    up.set(json(serve({ zero: zeroApp }, proxy.port)));
    const h = exporterWithConfig(config());
    h.exporter.start();
    await h.exporter.settled();
    const state = () => h.exporter.store.get().ray.get('c1')?.state;
    const first = state();
    expect(first?.apps.map((a) => a.name)).toEqual(['zero']);
    await new Promise((r) => setTimeout(r, 20));
    await h.exporter.sampleAll();
    const second = state();
    expect(second?.apps[0]).toBe(first?.apps[0]);
    expect(second?.requestedSeconds).toBeGreaterThan(first?.requestedSeconds ?? Infinity);

    up.set(json(serve({ zero: { ...zeroApp, status: 'DEPLOYING' } }, proxy.port)));
    await h.exporter.sampleAll();
    const third = state();
    expect(third?.apps[0]).not.toBe(first?.apps[0]);
    expect(third?.apps[0].status).toBe('DEPLOYING');
    const text = await scrapeText(h.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_app_status', { app: 'zero', status: 'DEPLOYING' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_app_status', { app: 'zero', status: 'RUNNING' })).toBe(0);
    await h.close();
  });

  it('output passes promtool check metrics', async () => {
    up.set(json(serve({ zero: zeroApp, weird: { ...zeroApp, name: 'weird', status: 'HIBERNATING' } }, proxy.port)));
    const h = exporterWithConfig(config());
    h.exporter.start();
    await h.exporter.settled();
    const text = await scrapeText(h.exporter.metrics);
    await h.close();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pm-'));
    const f = path.join(dir, 'metrics.txt');
    fs.writeFileSync(f, text);
    const out = execFileSync('sh', ['-c', `promtool check metrics < ${f} 2>&1; echo rc=$?`]).toString();
    fs.rmSync(dir, { recursive: true, force: true });
    expect(out.trim()).toBe('rc=0');
  });

  it('a 50 MB streamed body is cut off at the default limit, not buffered', async () => {
    let written = 0;
    let closedEarly = false;
    up.set((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      const pump = () => {
        while (written < 50 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => { if (written < 50 * 1024 * 1024) closedEarly = true; });
      res.write('{"applications": {}, "pad": "');
      pump();
    });
    const h = exporterWithConfig(`ray_clusters:\n  - name: c1\n    dashboard_url: ${up.url}\n    interval: 1h\n    timeout: 20s\n`);
    h.exporter.start();
    await h.exporter.settled();
    const text = await scrapeText(h.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_source_errors_total', { ray_cluster: 'c1', reason: 'too_large' })).toBe(1);
    await new Promise((r) => setTimeout(r, 200));
    expect(closedEarly).toBe(true);
    await h.close();
  });

  it('a slow answer within the deadline is a success; beyond it, a timeout', async () => {
    up.set((_req, res) => { setTimeout(() => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(serve({ zero: zeroApp }))); }, 150); });
    const ok = exporterWithConfig(`ray_clusters:\n  - name: c1\n    dashboard_url: ${up.url}\n    interval: 1h\n    timeout: 2s\n`);
    ok.exporter.start();
    await ok.exporter.settled();
    expect(seriesValue(await scrapeText(ok.exporter.metrics), 'hypha_serve_source_up', { ray_cluster: 'c1' })).toBe(1);
    await ok.close();
    const late = exporterWithConfig(`ray_clusters:\n  - name: c1\n    dashboard_url: ${up.url}\n    interval: 1h\n    timeout: 50ms\n`);
    late.exporter.start();
    await late.exporter.settled();
    const text = await scrapeText(late.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_source_up', { ray_cluster: 'c1' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_source_errors_total', { ray_cluster: 'c1', reason: 'timeout' })).toBe(1);
    await late.close();
  });

  it.each([
    ['YAML syntax', 'ray_clusters: [\n'],
    ['unknown key', 'ray_clusterz: []\n'],
    ['wrong type', 'ray_clusters:\n  - name: c1\n    dashboard_url: http://h:1\n    max_apps: lots\n'],
    ['bad URL', 'ray_clusters:\n  - name: c1\n    dashboard_url: "ftp://h"\n'],
    ['missing token file', 'ray_clusters:\n  - name: c1\n    dashboard_url: http://h:1\n    bearer_token_file: /nonexistent/token\n'],
  ])('reload with %s is rejected and the old config keeps serving', async (_n, bad) => {
    up.set(json(serve({ zero: zeroApp })));
    const h = exporterWithConfig(config());
    h.exporter.start();
    await h.exporter.settled();
    h.rewrite(bad as string);
    const r = h.exporter.reload();
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/config\.yml(:\d+:\d+)?: /);
    await h.exporter.sampleAll();
    const text = await scrapeText(h.exporter.metrics);
    expect(seriesValue(text, 'hypha_serve_exporter_config_last_reload_successful')).toBe(0);
    expect(seriesValue(text, 'hypha_serve_app_status', { ray_cluster: 'c1', app: 'zero', status: 'RUNNING' })).toBe(1);
    await h.close();
  });
});
