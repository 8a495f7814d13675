// Resident memory of the plain `hypha-serve-exporter` bin as `npx` or `npm install -g` users run
// it: no NODE_OPTIONS, no MALLOC_* variables, no --expose-gc (so no forced GC: the figure is read
// after an idle pause, as between two scrapes). The bin's interpreter line applies its memory
// settings (src/cli/memory-settings.ts): one process, checked here, with the settings in effect.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { MMAP_THRESHOLD, MMAP_THRESHOLD_ENV, OPTIMIZE_FOR_SIZE_FLAG, SEMI_SPACE_FLAG } from '../src/cli/memory-settings';
import { fakeRay, payloads, rayConfig } from './fake-ray';
import { EXPORTER_BIN, type ExporterProcess, spawnExporter } from '../test/harness/exporter-process';

export interface BinMemoryResult {
  apps: number;
  cycles: number;
  /** The bin's process (the only one: a child would fail the run). */
  exporterRssMb: number;
  /** `ps` lines of the bench's children running the bin (1: no relauncher beside it). */
  psProcesses: number;
  /** Time to the last byte of the first scrape after each sample (the body is rebuilt), ms: gzip as Prometheus asks, plain as a browser. */
  gzipScrapeMs: number[];
  plainScrapeMs: number[];
  /** hypha_serve_source_sample_duration_seconds as served after each sample (fetch + parse + snapshot), ms. */
  sampleMs: number[];
}

/** VmRSS of `pid`, MB. */
export function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`/proc/${pid}/status has no VmRSS`);
  return Number(m[1]) / 1024;
}

/** This process's environment without the memory variables: the bin as `npx` or `npm install -g` users run it. */
export function plainEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ['NODE_OPTIONS', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_ARENA_MAX', 'MALLOC_TRIM_THRESHOLD_']) delete env[k];
  return env;
}

/**
 * Throws unless the bin started from here runs as one process, node itself (env(1) exec'd it), with its memory
 * settings in effect: `ps` lists one process of this process's children running the bin, and it has no child.
 * Returns that count (1).
 */
export function onlyProcess(pid: number): number {
  const ps = psChildren(process.pid).filter((l) => l.includes(EXPORTER_BIN));
  const children = psChildren(pid);
  if (ps.length !== 1 || children.length !== 0) throw new Error(`bin-memory: ps shows ${ps.length} bin processes (${ps.join('; ')}), children: ${children.join('; ')}`);
  const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  if (!argv.includes(SEMI_SPACE_FLAG) || !argv.includes(OPTIMIZE_FOR_SIZE_FLAG) || !environ.includes(`${MMAP_THRESHOLD_ENV}=${MMAP_THRESHOLD}`)) {
    throw new Error(`bin-memory: the bin runs without its memory settings: ${argv.join(' ')}`);
  }
  return ps.length;
}

/** `ps` lines (pid, ppid, rss, args) of the children of `ppid` (ps exits 1 when there is none). */
function psChildren(ppid: number): string[] {
  try {
    return execFileSync('ps', ['--no-headers', '-o', 'pid=,ppid=,rss=,args=', '--ppid', String(ppid)], { encoding: 'utf8' }).split('\n').filter((l) => l.trim() !== '');
  } catch {
    return [];
  }
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
  const up = await fakeRay(() => (up.requests() % 2 === 1 ? base : changed));
  let ex: ExporterProcess | undefined;
  try {
    ex = await spawnExporter({ name: 'bench-bin', config: rayConfig(up.url, { interval: '5s' }), baseEnv: plainEnv(), env: extraEnv, logLevel: 'warn', waitReady: false });
    const bin = ex.proc;
    const pid = bin.pid;
    const url = `${ex.url}/metrics`;
    await until('the bin to listen', async () => (await fetch(url).catch(() => undefined))?.ok === true, 60_000);
    const gzipScrapeMs: number[] = [];
    const plainScrapeMs: number[] = [];
    const sampleMs: number[] = [];
    for (let seen = up.requests(), i = 0; i < cycles; i++) {
      await until('a sample', () => up.requests() > seen, 60_000);
      seen = up.requests();
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
    const result: BinMemoryResult = { apps, cycles, exporterRssMb: rssMb(pid), psProcesses: onlyProcess(pid), gzipScrapeMs, plainScrapeMs, sampleMs };
    // SIGTERM to the bin's PID (not its process group) stops it with exit 0.
    process.kill(pid, 'SIGTERM');
    const code = await bin.exited;
    if (code !== 0) throw new Error(`bin-memory: the bin exited ${code} on SIGTERM`);
    return result;
  } finally {
    // A no-op after the clean exit above; otherwise SIGTERM then SIGKILL. Removes the temp config.
    await ex?.stop();
    await up.close();
  }
}
