// Resident memory of the plain `hypha-serve-exporter` bin as `npx` or `npm install -g` users run
// it: no NODE_OPTIONS, no MALLOC_* variables, no --expose-gc (so no forced GC: the figure is read
// after an idle pause, as between two scrapes). The bin relaunches itself with its memory
// settings (src/cli/relaunch.ts); both the exporter and the parent it leaves behind are measured.
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { RELAUNCHED_ENV } from '../src/cli/relaunch';
import { payloads, upstream } from './metrics-scale';

export interface BinMemoryResult {
  apps: number;
  cycles: number;
  /** The process that runs the exporter (the relaunched child, or the bin itself when it did not relaunch). */
  exporterRssMb: number;
  /** The parent left behind by the relaunch (0 when there is none); most of its pages are the node binary, shared. */
  parentRssMb: number;
  /** Proportional set size of the parent: what it adds beyond the pages it shares with the exporter. */
  parentPssMb: number;
  relaunched: boolean;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function statusKb(pid: number, file: 'status' | 'smaps_rollup', field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/${file}`, 'utf8'));
  if (!m) throw new Error(`/proc/${pid}/${file} has no ${field}`);
  return Number(m[1]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  const env = { ...process.env };
  for (const k of ['NODE_OPTIONS', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_ARENA_MAX', 'MALLOC_TRIM_THRESHOLD_', RELAUNCHED_ENV]) delete env[k];
  Object.assign(env, extraEnv);
  const port = await freePort();
  const main = path.resolve(__dirname, '..', 'src', 'main.js');
  let bin: ChildProcess | undefined;
  try {
    bin = spawn(process.execPath, [main, `--config.file=${cfg}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    const pid = bin.pid as number;
    const url = `http://127.0.0.1:${port}/metrics`;
    await until('the bin to listen', async () => (await fetch(url).catch(() => undefined))?.ok === true, 60_000);
    for (let seen = requests, i = 0; i < cycles; i++) {
      await until('a sample', () => requests > seen, 60_000);
      seen = requests;
      // Let the sample land in the snapshot, then scrape as Prometheus (gzip) and a browser (plain) would.
      await sleep(500);
      await (await fetch(url, { headers: { 'accept-encoding': 'gzip' } })).arrayBuffer();
      await (await fetch(url, { headers: { 'accept-encoding': 'identity' } })).arrayBuffer();
    }
    // Between two samples (the interval is 5 s), as a scrape would find it.
    await sleep(Number(process.env.BENCH_IDLE_MS ?? 3000));
    const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    const exporterPid = children[0] ?? pid;
    const relaunched = children.length > 0;
    const result: BinMemoryResult = {
      apps, cycles, relaunched,
      exporterRssMb: statusKb(exporterPid, 'status', 'VmRSS') / 1024,
      parentRssMb: relaunched ? statusKb(pid, 'status', 'VmRSS') / 1024 : 0,
      parentPssMb: relaunched ? statusKb(pid, 'smaps_rollup', 'Pss') / 1024 : 0,
    };
    // SIGTERM to the bin's PID must stop the exporter too (the relaunch forwards it) and exit 0.
    const exited = new Promise<number | string>((r) => bin?.once('exit', (code, sig) => r(code ?? sig ?? 'unknown')));
    bin.kill('SIGTERM');
    const code = await exited;
    if (code !== 0) throw new Error(`bin-memory: the bin exited ${code} on SIGTERM`);
    if (relaunched && fs.existsSync(`/proc/${exporterPid}`)) throw new Error('bin-memory: the relaunched exporter outlived the bin');
    return result;
  } finally {
    if (bin && bin.exitCode === null && bin.signalCode === null) bin.kill('SIGKILL');
    await up.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
