// /metrics cost at scale, side by side with a bare prom-client registry holding the
// same series (the "floor"), and the exporter's memory measured in a process of its own.
import { fork } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import zlib from 'node:zlib';
import { Counter, Gauge, Registry } from 'prom-client';
import type { Exporter } from '../src/exporter/exporter';
import { configFor, fakeRay, payloads, rayConfig } from './fake-ray';
import { exporterWithConfig, type InProcessExporter } from '../test/helpers/exporter';
import { parseFamilies } from '../test/helpers/exposition';

/** The same series in a bare prom-client registry, built from an exposition text. */
export function floorRegistry(text: string): Registry {
  const r = new Registry();
  for (const [name, f] of parseFamilies(text)) {
    const labelNames = [...new Set(f.samples.flatMap((x) => Object.keys(x.labels)))];
    if (f.type === 'counter') {
      const c = new Counter({ name, help: f.help, labelNames, registers: [r] });
      for (const x of f.samples) c.inc(x.labels, x.value);
    } else {
      const g = new Gauge({ name, help: f.help, labelNames, registers: [r] });
      for (const x of f.samples) g.set(x.labels, x.value);
    }
  }
  return r;
}

export interface MetricsScaleResult {
  apps: number;
  series: number;
  floor: number;
  steady: number;
  after1: number;
  after100: number;
  gzipSteady: number;
  gzipAfter1: number;
  plainBytes: number;
  gzipBytes: number;
  /** Over HTTP on loopback, time to the last byte (p50, ms): the floor served by a bare http server, and /metrics plain and gzip, nothing changed. */
  http: { floor: number; plain: number; gzip: number };
}

/** GET `url` on a keep-alive agent; ms to the last byte of the body as sent. */
function timedGet(agent: http.Agent, url: string, encoding: 'gzip' | 'identity'): Promise<{ ms: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    http.get(url, { agent, headers: { 'accept-encoding': encoding } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ ms: performance.now() - t0, bytes }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function listen(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const srv = http.createServer(handler);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => {
      srv.closeAllConnections();
      srv.close(() => r());
    }),
  };
}

/**
 * Steady /metrics over HTTP (the in-process exporter served as src/main.ts serves it), alternating with the floor
 * (the same series in prom-client behind a bare http server).
 */
async function httpScrapes(h: InProcessExporter, floor: Registry, rounds: number): Promise<{ floor: number; plain: number; gzip: number }> {
  const ours = await h.serve();
  const bare = await listen((_req, res) => {
    void floor.metrics().then((text) => {
      res.setHeader('content-type', floor.contentType);
      res.end(text);
    });
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const times = { floor: [] as number[], plain: [] as number[], gzip: [] as number[] };
    for (let i = -2; i < rounds; i++) {
      const f = await timedGet(agent, bare.url, 'identity');
      const p = await timedGet(agent, `${ours.url}/metrics`, 'identity');
      const g = await timedGet(agent, `${ours.url}/metrics`, 'gzip');
      if (p.bytes < g.bytes * 5) throw new Error('the plain /metrics body is not plain');
      // Two warm-up rounds (connections, JIT).
      if (i < 0) continue;
      times.floor.push(f.ms);
      times.plain.push(p.ms);
      times.gzip.push(g.ms);
    }
    return { floor: median(times.floor), plain: median(times.plain), gzip: median(times.gzip) };
  } finally {
    agent.destroy();
    await bare.close();
  }
}

async function scrapeMs(exporter: Exporter, encoding: 'gzip' | 'identity'): Promise<{ ms: number; bytes: number }> {
  const t0 = performance.now();
  const b = await exporter.metrics.scrape('prometheus', encoding);
  const ms = performance.now() - t0;
  return { ms, bytes: b.bytes };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Scrape timings at `apps` apps × 3 deployments (p50 over `rounds`, ms), in this process. */
export async function metricsScale(apps: number, rounds = 15): Promise<MetricsScaleResult> {
  const [base, some] = payloads(apps, 0.01);
  const [, all] = payloads(apps, 1);
  let body = base;
  const up = await fakeRay(() => body);
  const h = exporterWithConfig(rayConfig(up.url), { logLevel: 'silent' });
  const { exporter } = h;
  exporter.start();
  await exporter.settled();
  await exporter.metrics.scrape('prometheus', 'gzip');
  const text = await h.scrape();
  const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
  const floor = floorRegistry(text);
  await floor.metrics();

  // Alternate floor and ours in one loop, so both see the same machine load.
  const floorTimes: number[] = [];
  const steadyTimes: number[] = [];
  const gzipTimes: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await floor.metrics();
    floorTimes.push(performance.now() - t0);
    steadyTimes.push((await scrapeMs(exporter, 'identity')).ms);
    gzipTimes.push((await scrapeMs(exporter, 'gzip')).ms);
  }
  const httpTimes = await httpScrapes(h, floor, rounds);
  const after = async (changed: string, encoding: 'gzip' | 'identity'): Promise<number> => {
    const xs: number[] = [];
    for (let i = 0; i < rounds; i++) {
      body = i % 2 === 0 ? changed : base;
      await exporter.sampleAll();
      xs.push((await scrapeMs(exporter, encoding)).ms);
    }
    return median(xs);
  };
  const after1 = await after(some, 'identity');
  const after100 = await after(all, 'identity');
  const gzipAfter1 = await after(some, 'gzip');
  body = base;
  await exporter.sampleAll();
  const plainBytes = (await scrapeMs(exporter, 'identity')).bytes;
  const gz = await exporter.metrics.scrape('prometheus', 'gzip');
  const gzipBytes = gz.bytes;
  // The gzip body decodes to the plain one (sanity: the benchmark measures a real answer).
  const gzBody = Buffer.concat(gz.chunks);
  if (zlib.gunzipSync(gzBody).length < plainBytes * 0.99) throw new Error('gzip body does not decode to the plain body');
  await h.close();
  await up.close();
  return {
    apps, series, floor: median(floorTimes), steady: median(steadyTimes), after1, after100, gzipSteady: median(gzipTimes), gzipAfter1, plainBytes, gzipBytes,
    http: httpTimes,
  };
}

export interface ProcessMemoryResult {
  apps: number;
  cycles: number;
  rssMb: number;
  heapUsedMb: number;
  externalMb: number;
  /** Per cycle: sample (fetch + parse + snapshot) and the first scrape after it, ms (p50 / max). */
  sampleP50: number;
  sampleMax: number;
  renderP50: number;
  renderMax: number;
  top?: { what: string; mb: number }[];
}

/** The exporter alone in a child process (the upstream lives here): RSS after `cycles` sample+scrape cycles. */
export async function processMemory(
  apps: number, cycles: number, fraction: number, opts: { heapSnapshot?: boolean; nodeFlags?: string[]; env?: Record<string, string> } = {},
): Promise<ProcessMemoryResult> {
  const [base, changed] = payloads(apps, fraction);
  let n = 0;
  // Every cycle a changed payload (`fraction` of the apps differ from the previous cycle's).
  const up = await fakeRay(() => (n++ % 2 === 0 ? base : changed));
  const cfg = configFor(up.url);
  try {
    const child = fork(path.join(__dirname, 'metrics-child.js'), [cfg.file, String(cycles), opts.heapSnapshot ? '1' : '0'], {
      execArgv: ['--expose-gc', ...(opts.nodeFlags ?? [])], env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    const result = await new Promise<ProcessMemoryResult>((resolve, reject) => {
      child.on('message', (m) => resolve({ apps, cycles, ...(m as Omit<ProcessMemoryResult, 'apps' | 'cycles'>) }));
      child.on('exit', (code) => reject(new Error(`metrics-child exited ${code}`)));
    });
    child.kill();
    return result;
  } finally {
    await up.close();
    cfg.cleanup();
  }
}

export { median };
