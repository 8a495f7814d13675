// Resident memory of the plain `hypha-serve-exporter` bin as `npx` or `npm install -g` users run
// it: no NODE_OPTIONS, no MALLOC_* variables, no --expose-gc (so no forced GC: the figure is read
// after an idle pause, as between two scrapes). The bin's interpreter line applies its memory
// settings (src/cli/memory-settings.ts): one process, checked here, with the settings in effect.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { MMAP_THRESHOLD, MMAP_THRESHOLD_ENV, OPTIMIZE_FOR_SIZE_FLAG, SEMI_SPACE_FLAG } from '../src/cli/memory-settings';
import { payloads, upstream } from './metrics-scale';
import { spawnExporter } from '../test/harness/exporter-process';
import type { Proc } from '../test/harness/proc';

export interface BinMemoryResult {
  apps: number;
  cycles: number;
  /** The bin's process (the only one: a child would fail the run). */
  exporterRssMb: number;
  /** Time to the last byte of the first scrape after each sample (the body is rebuilt), ms: gzip as Prometheus asks, plain as a browser. */
  gzipScrapeMs: number[];
  plainScrapeMs: number[];
  /** hypha_serve_source_sample_duration_seconds as served after each sample (fetch + parse + snapshot), ms. */
  sampleMs: number[];
}

function statusKb(pid: number, file: 'status', field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/${file}`, 'utf8'));
  if (!m) throw new Error(`/proc/${pid}/${file} has no ${field}`);
  return Number(m[1]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One scrape, timed to its last byte; the body as sent (no decompression on this side). */
function timedScrape(url: string, encoding: 'gzip' | 'identity'): Promise<{ ms: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    http.get(url, { headers: { 'accept-encoding': encoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ ms: performance.now() - t0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function until(what: string, cond: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`bin-memory: timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The plain bin against a synthetic Serve API of `apps` apps; RSS after `cycles` samples, each followed by a plain and a gzip scrape. */
export async function binMemory(apps: number, cycles: number, fraction: number, extraEnv: Record<string, string> = {}): Promise<BinMemoryResult> {
  const [base, changed] = payloads(apps, fraction);
  let requests = 0;
  const up = await upstream(() => (requests++ % 2 === 0 ? base : changed));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-bin-'));
  const cfg = path.join(dir, 'c.yml');
  fs.writeFileSync(cfg, `ray_clusters:\n  - name: bench\n    dashboard_url: ${up.url}\n    interval: 5s\n    timeout: 60s\n    max_apps: 100000\n    max_response_bytes: 1000000000\n    proxy_probe: {enabled: false}\n`);
  const baseEnv = { ...process.env };
  for (const k of ['NODE_OPTIONS', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_ARENA_MAX', 'MALLOC_TRIM_THRESHOLD_']) delete baseEnv[k];
  let bin: Proc | undefined;
  try {
    const ex = await spawnExporter({ name: 'bench-bin', config: { file: cfg }, baseEnv, env: extraEnv, logLevel: 'warn', waitReady: false });
    bin = ex.proc;
    const pid = bin.pid;
    const url = `${ex.url}/metrics`;
    await until('the bin to listen', async () => (await fetch(url).catch(() => undefined))?.ok === true, 60_000);
    const gzipScrapeMs: number[] = [];
    const plainScrapeMs: number[] = [];
    const sampleMs: number[] = [];
    for (let seen = requests, i = 0; i < cycles; i++) {
      await until('a sample', () => requests > seen, 60_000);
      seen = requests;
      // Let the sample land in the snapshot, then scrape as Prometheus (gzip) and a browser (plain) would.
      await sleep(500);
      gzipScrapeMs.push((await timedScrape(url, 'gzip')).ms);
      const plain = await timedScrape(url, 'identity');
      plainScrapeMs.push(plain.ms);
      const m = /^hypha_serve_source_sample_duration_seconds\{source="ray"[^}]*\} (\S+)$/m.exec(plain.body.toString('utf8'));
      if (m) sampleMs.push(Number(m[1]) * 1000);
    }
    // Between two samples (the interval is 5 s), as a scrape would find it.
    await sleep(Number(process.env.BENCH_IDLE_MS ?? 3000));
    // One process, node itself (env(1) exec'd it), with the settings in effect.
    const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    if (children !== '') throw new Error(`bin-memory: the bin has child processes (${children})`);
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    if (!argv.includes(SEMI_SPACE_FLAG) || !argv.includes(OPTIMIZE_FOR_SIZE_FLAG) || !environ.includes(`${MMAP_THRESHOLD_ENV}=${MMAP_THRESHOLD}`)) {
      throw new Error(`bin-memory: the bin runs without its memory settings: ${argv.join(' ')}`);
    }
    const result: BinMemoryResult = { apps, cycles, exporterRssMb: statusKb(pid, 'status', 'VmRSS') / 1024, gzipScrapeMs, plainScrapeMs, sampleMs };
    // SIGTERM to the bin's PID (not its process group) stops it with exit 0.
    process.kill(pid, 'SIGTERM');
    const code = await bin.exited;
    if (code !== 0) throw new Error(`bin-memory: the bin exited ${code} on SIGTERM`);
    return result;
  } finally {
    await bin?.stop('SIGKILL');
    await up.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
