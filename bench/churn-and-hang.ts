import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { Exporter } from '../src/exporter/exporter';
import { servePayload } from './serve-payload';
import { quantile } from './stats';
import { scrapeText } from '../test/helpers/exporter';
import { seriesValue } from '../test/helpers/exposition';

async function withUpstream<T>(handler: http.RequestListener, fn: (url: string) => Promise<T>): Promise<T> {
  const sockets = new Set<import('node:net').Socket>();
  const srv = http.createServer(handler);
  srv.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  try {
    return await fn(`http://127.0.0.1:${(srv.address() as AddressInfo).port}`);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => srv.close(() => r()));
  }
}

function exporterFor(url: string, extra = ''): { exporter: Exporter; cleanup(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  const cfg = path.join(dir, 'c.yml');
  fs.writeFileSync(cfg, `ray_clusters:\n  - name: bench\n    dashboard_url: ${url}\n    interval: 1h\n    proxy_probe: {enabled: false}\n${extra}`);
  const exporter = new Exporter({ configFile: cfg, log: pino({ level: 'silent' }) });
  return { exporter, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** N cycles, each with 10 fresh app names (the previous ones deleted): series must not accumulate. */
export async function churn(cycles: number): Promise<{ cycles: number; rssBeforeMb: number; rssAfterMb: number; heapBeforeMb: number; heapAfterMb: number; seriesFirst: number; seriesLast: number; ms: number }> {
  let seed = 0;
  return withUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(servePayload(10, 3, 1, seed)));
  }, async (url) => {
    const { exporter, cleanup } = exporterFor(url);
    exporter.start();
    await exporter.settled();
    const count = (t: string) => t.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    const seriesFirst = count(await scrapeText(exporter.metrics));
    const warm = Math.min(500, cycles / 10);
    for (let i = 0; i < warm; i++) { seed++; await exporter.sampleAll(); await scrapeText(exporter.metrics); }
    global.gc?.();
    const before = process.memoryUsage();
    const t0 = performance.now();
    for (let i = 0; i < cycles; i++) {
      seed++;
      await exporter.sampleAll();
      await scrapeText(exporter.metrics);
    }
    const ms = performance.now() - t0;
    global.gc?.();
    const after = process.memoryUsage();
    const seriesLast = count(await scrapeText(exporter.metrics));
    await exporter.stop();
    cleanup();
    return { cycles, rssBeforeMb: before.rss / 1048576, rssAfterMb: after.rss / 1048576, heapBeforeMb: before.heapUsed / 1048576, heapAfterMb: after.heapUsed / 1048576, seriesFirst, seriesLast, ms };
  });
}

/** /metrics latency while the Serve API accepts connections and never answers. */
export async function scrapeDuringHang(scrapes: number): Promise<{ p50: number; p99: number; max: number; sourceUp: string }> {
  let hang = false;
  return withUpstream((_req, res) => {
    if (hang) return; // accept, never answer
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(servePayload(100, 3, 2, 0)));
  }, async (url) => {
    const { exporter, cleanup } = exporterFor(url, '    timeout: 30s\n');
    exporter.start();
    await exporter.settled();
    hang = true;
    const inFlight = exporter.sampleAll(); // a sample stuck on the hung upstream for 30 s
    const xs: number[] = [];
    for (let i = 0; i < scrapes; i++) {
      const t0 = performance.now();
      await scrapeText(exporter.metrics);
      xs.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 5));
    }
    xs.sort((a, b) => a - b);
    const text = await scrapeText(exporter.metrics);
    const up = String(seriesValue(text, 'hypha_serve_source_up', { source: 'ray', target: 'bench' }) ?? '?');
    void inFlight;
    await exporter.stop().catch(() => undefined);
    cleanup();
    return { p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), max: xs[xs.length - 1], sourceUp: up };
  });
}
