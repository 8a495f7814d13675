// /metrics content negotiation: gzip and identity from Accept-Encoding, OpenMetrics
// from Accept, through the real HTTP app; the cached gzip body is reused while nothing changed.
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import zlib from 'node:zlib';
import { negotiateEncoding, negotiateFormat } from '../../src/metrics/negotiate';
import { servePayload } from '../../bench/serve-payload';
import { exporterWithConfig } from '../helpers/exporter';
import { json, startUpstream } from '../helpers/http-upstream';
import { parseExposition, seriesSet } from '../helpers/exposition';

function get(url: string, headers: Record<string, string>, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { headers, method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

// Clock-dependent lines differ between two scrapes.
const stable = (text: string) => [...seriesSet(parseExposition(text))].filter((l) => !/^(hypha_serve_(exporter_|source_sample_age)|process_|nodejs_)/.test(l)).sort();

describe('negotiation rules', () => {
  it('picks OpenMetrics 1.0.0 only when preferred, gzip only with q > 0', () => {
    // Prometheus 2.x with OpenMetrics enabled (its default scrape_protocols order).
    expect(negotiateFormat('application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1')).toBe('openmetrics');
    expect(negotiateFormat('text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5')).toBe('prometheus');
    expect(negotiateFormat('application/openmetrics-text;version=0.0.1')).toBe('prometheus');
    expect(negotiateFormat('application/openmetrics-text')).toBe('openmetrics');
    expect(negotiateFormat('application/openmetrics-text;q=0')).toBe('prometheus');
    expect(negotiateFormat(undefined)).toBe('prometheus');
    expect(negotiateFormat('*/*')).toBe('prometheus');
    expect(negotiateEncoding('gzip')).toBe('gzip');
    expect(negotiateEncoding('deflate, gzip;q=0.8')).toBe('gzip');
    expect(negotiateEncoding('gzip;q=0')).toBe('identity');
    expect(negotiateEncoding('*')).toBe('gzip');
    expect(negotiateEncoding('identity')).toBe('identity');
    expect(negotiateEncoding('br')).toBe('identity');
    expect(negotiateEncoding(undefined)).toBe('identity');
  });
});

describe('/metrics over HTTP', () => {
  let base = '';
  let upstreamClose: () => Promise<void>;
  let up: Awaited<ReturnType<typeof startUpstream>>;
  let h: ReturnType<typeof exporterWithConfig>;

  beforeAll(async () => {
    up = await startUpstream(json(servePayload(200, 3, 2, 0)));
    upstreamClose = up.close;
    h = exporterWithConfig(`ray_clusters:\n  - name: c1\n    dashboard_url: ${up.url}\n    interval: 1h\n    proxy_probe: {enabled: false}\n`);
    h.exporter.start();
    await h.exporter.settled();
    base = (await h.serve()).url;
  });
  afterAll(async () => {
    await h.close();
    await upstreamClose();
  });

  it('identity by default; gzip when accepted, the same series, ≤ 10% of the bytes', async () => {
    const plain = await get(`${base}/metrics`, {});
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(Number(plain.headers['content-length'])).toBe(plain.body.length);
    expect(plain.headers.vary).toMatch(/Accept-Encoding/);
    const gz = await get(`${base}/metrics`, { 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(Number(gz.headers['content-length'])).toBe(gz.body.length);
    const unzipped = zlib.gunzipSync(gz.body).toString('utf8');
    expect(stable(unzipped)).toEqual(stable(plain.body.toString('utf8')));
    expect(stable(unzipped).length).toBeGreaterThan(200 * 9);
    expect(gz.body.length).toBeLessThan(plain.body.length * 0.1);
    // The multi-member stream also decodes with the gzip tool (as Go's gzip.Reader, which Prometheus uses, reads every member).
    const viaTool = execFileSync('gzip', ['-dc'], { input: gz.body, maxBuffer: 256 * 1024 * 1024 }).toString('utf8');
    expect(viaTool).toBe(unzipped);
  });

  it('the cached gzip part is reused while nothing changed, and through a sample that changed only clock data; a changed app replaces it', async () => {
    await get(`${base}/metrics`, { 'accept-encoding': 'gzip' });
    await get(`${base}/metrics`, {});
    const { updates, bodiesAssembled, bodiesCompressed, unitsRendered } = h.exporter.metrics.stats;
    for (let i = 0; i < 3; i++) await get(`${base}/metrics`, { 'accept-encoding': 'gzip' });
    await get(`${base}/metrics`, {});
    expect(h.exporter.metrics.stats).toMatchObject({ updates, bodiesAssembled, bodiesCompressed });
    // The same Serve answer again: a new snapshot (sample time and duration moved), no unit changed.
    await h.exporter.sampleAll();
    const b = await get(`${base}/metrics`, { 'accept-encoding': 'gzip' });
    expect(h.exporter.metrics.stats).toMatchObject({ updates: updates + 1, bodiesAssembled, bodiesCompressed, unitsRendered });
    expect(zlib.gunzipSync(b.body).toString()).toMatch(/^hypha_serve_source_last_success_timestamp_seconds\{source="ray",/m);
    // One app fails: its units re-render and the body is assembled and compressed anew.
    const payload = servePayload(200, 3, 2, 0) as { applications: Record<string, { status: string }> };
    payload.applications['app-0-199'].status = 'DEPLOY_FAILED';
    up.set(json(payload));
    await h.exporter.sampleAll();
    const c = await get(`${base}/metrics`, { 'accept-encoding': 'gzip' });
    expect(h.exporter.metrics.stats).toMatchObject({ updates: updates + 2, bodiesAssembled: bodiesAssembled + 1, bodiesCompressed: bodiesCompressed + 1 });
    expect(h.exporter.metrics.stats.unitsRendered).toBeGreaterThan(unitsRendered);
    const text = zlib.gunzipSync(c.body).toString();
    expect(text).toContain('hypha_serve_app_status{ray_cluster="c1",app="app-0-199",status="DEPLOY_FAILED"} 1');
    expect(text).toContain('hypha_serve_app_status{ray_cluster="c1",app="app-0-199",status="RUNNING"} 0');
    up.set(json(servePayload(200, 3, 2, 0)));
    await h.exporter.sampleAll();
  });

  it('OpenMetrics when asked, with # EOF; HEAD sends headers only', async () => {
    const om = await get(`${base}/metrics`, { accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5', 'accept-encoding': 'gzip' });
    expect(om.headers['content-type']).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
    const text = zlib.gunzipSync(om.body).toString('utf8');
    expect(text.endsWith('# EOF\n')).toBe(true);
    expect(text).toMatch(/^# TYPE hypha_serve_cluster_apps_dropped counter$/m);
    const head = await get(`${base}/metrics`, {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(Number(head.headers['content-length'])).toBeGreaterThan(1000);
  });
});
