// What a hostile client on loopback does to the exporter's endpoints, measured from outside the
// process (the real bin): auth timing, a wrong-password flood during scrapes, half-open connections.
// Shared by test/unit/web-security.test.ts, test/unit/web-connections.test.ts and bench/web-security.ts.
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';

export interface Answer {
  status: number;
  ms: number;
  bytes: number;
}

/** One GET on a new connection (as Prometheus after its keep-alive expired), gzip asked for. */
export function get(url: string, auth?: string): Promise<Answer> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'accept-encoding': 'gzip' };
    if (auth !== undefined) headers.authorization = `Basic ${Buffer.from(auth).toString('base64')}`;
    const req = http.get(url, { headers, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (d: Buffer) => (bytes += d.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
export const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)];
export const worst = (xs: number[]) => Math.max(...xs);

/** A password no one has sent before: never cached, so each one costs a bcrypt comparison. */
const fresh = () => crypto.randomBytes(9).toString('base64');

/**
 * Medians of `rounds` answers to an unknown user and to a known user with a wrong password, taken
 * alternately (so load on the machine falls on both alike), each with a fresh password.
 */
export async function authTiming(url: string, user: string, rounds: number): Promise<{ unknownMs: number; wrongMs: number; statuses: number[] }> {
  const unknown: number[] = [];
  const wrong: number[] = [];
  const statuses = new Set<number>();
  for (let i = 0; i < rounds; i++) {
    const a = await get(url, `nobody-${i}:${fresh()}`);
    const b = await get(url, `${user}:${fresh()}`);
    unknown.push(a.ms);
    wrong.push(b.ms);
    statuses.add(a.status).add(b.status);
  }
  return { unknownMs: median(unknown), wrongMs: median(wrong), statuses: [...statuses] };
}

export interface FloodResult {
  baselineMs: number;
  baselineMaxMs: number;
  /** The worst authenticated scrape while the flood ran. */
  floodMaxMs: number;
  floodMedianMs: number;
  scrapes: number;
  /** Wrong-password requests answered during the flood (all 401). */
  wrongAnswered: number;
  statuses: number[];
}

/**
 * The authenticated scrape (credentials already cached, gzip) alone, then while `clients` clients loop
 * wrong passwords for a known user, each waiting for its answer before the next (a fresh password each time).
 */
export async function floodScrape(metricsUrl: string, auth: string, o: { clients: number; scrapes: number; gapMs: number }): Promise<FloodResult> {
  const statuses = new Set<number>();
  for (let i = 0; i < 3; i++) statuses.add((await get(metricsUrl, auth)).status); // warm: the credentials are now cached
  const base: number[] = [];
  for (let i = 0; i < o.scrapes; i++) {
    const a = await get(metricsUrl, auth);
    statuses.add(a.status);
    base.push(a.ms);
    await new Promise((r) => setTimeout(r, o.gapMs));
  }
  let stop = false;
  let wrongAnswered = 0;
  const user = auth.split(':')[0];
  const flooders = Array.from({ length: o.clients }, async () => {
    while (!stop) {
      const a = await get(metricsUrl, `${user}:${fresh()}`).catch(() => undefined);
      if (a?.status === 401) wrongAnswered++;
    }
  });
  await new Promise((r) => setTimeout(r, 500)); // the flood is under way
  const during: number[] = [];
  for (let i = 0; i < o.scrapes; i++) {
    const a = await get(metricsUrl, auth);
    statuses.add(a.status);
    during.push(a.ms);
    await new Promise((r) => setTimeout(r, o.gapMs));
  }
  stop = true;
  await Promise.all(flooders);
  return {
    baselineMs: median(base), baselineMaxMs: worst(base), floodMaxMs: worst(during), floodMedianMs: median(during), scrapes: during.length, wrongAnswered,
    statuses: [...statuses],
  };
}

/** The soft limit on open files of processes started from here. */
export function openFileLimit(): { soft: number; hard: number } {
  const read = (flag: string) => {
    const v = execFileSync('sh', ['-c', `ulimit ${flag} -n`], { encoding: 'utf8' }).trim();
    return v === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(v);
  };
  return { soft: read('-S'), hard: read('-H') };
}

export interface HalfOpenResult {
  opened: number;
  /** Connections the exporter closed; closedByMs: the longest one stayed open (from its opening). */
  closed: number;
  closedByMs: number;
  /** Still open when the client gave up. */
  leftOpen: number;
}

/**
 * `count` connections that stop half way (plain: half a request header; tls: a finished handshake, then
 * half a header; tls-hello: half a ClientHello), opened by a child process (half-open-client.ts) whose
 * open-file limit is raised to what it needs when the hard limit allows (Node cannot raise its own).
 * `during` runs once all are open; the result says when the exporter closed them.
 */
export async function halfOpen<T>(
  host: string, port: number, kind: 'plain' | 'tls' | 'tls-hello', count: number, giveUpMs: number, during: () => Promise<T>,
): Promise<{ result: HalfOpenResult; during: T }> {
  const need = count + 200;
  const { soft, hard } = openFileLimit();
  if (hard < need) throw new Error(`open-file hard limit ${hard} < ${need}: raise it (ulimit -Hn) to open ${count} connections`);
  const script = path.join(__dirname, 'half-open-client.js');
  const compiled = fs.existsSync(script) ? script : path.resolve(__dirname, '..', '..', 'dist', 'test', 'helpers', 'half-open-client.js');
  const raise = soft < need ? `ulimit -S -n ${need} && ` : '';
  const child = spawn('sh', ['-c', `${raise}exec "$0" "$@"`, process.execPath, compiled, host, String(port), kind, String(count), String(giveUpMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout });
  let duringResult: Promise<T> | undefined;
  const result = await new Promise<HalfOpenResult>((resolve, reject) => {
    lines.on('line', (line) => {
      const m = JSON.parse(line) as { opened?: number } & Partial<HalfOpenResult>;
      if (m.closedByMs !== undefined) resolve(m as HalfOpenResult);
      else if (m.opened !== undefined) duringResult = during();
    });
    child.on('exit', (code) => reject(new Error(`half-open client exited (${code}) without a result`)));
  });
  if (!duringResult) throw new Error('half-open client never reported its connections open');
  return { result, during: await duringResult };
}

/** Resident memory of a process (kB in /proc), in MB. */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}
