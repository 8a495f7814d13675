// `npm run bench` section "web-security" (BENCH_ONLY=web): the endpoints under hostile clients on
// loopback, against the real bin: auth timing, a wrong-password flood during scrapes (small config and
// 1,000 apps), half-open connections. The attacks are test/helpers/web-attack.ts, as the tests use them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { spawnExporter } from '../test/harness/exporter-process';
import { waitFor } from '../test/harness/proc';
import { authTiming, floodScrape, get, halfOpen, median, rssMb } from '../test/helpers/web-attack';
import { configFor, fakeRay as upstream, payloads } from './fake-ray';

const f = (x: number) => x.toFixed(1);
const ok = (c: boolean) => (c ? 'yes' : '**no**');

async function withExporter<T>(name: string, config: string | { file: string }, args: string[], fn: (url: string, port: number, pid: number) => Promise<T>): Promise<T> {
  const ex = await spawnExporter({ name, config, logLevel: 'warn', waitReady: false, args });
  try {
    await waitFor(`${name} listening`, async () => (await get(`${ex.url}/-/ready`, 'prom:right-pass')).status === 200, 90_000, 250);
    return await fn(ex.url, ex.port, ex.proc.child.pid as number);
  } finally {
    await ex.stop();
  }
}

export async function webSecurity(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-web-'));
  const web = path.join(dir, 'web.yml');
  fs.writeFileSync(web, `basic_auth_users:\n  prom: ${bcrypt.hashSync('right-pass', 10)}\n`);
  const rows: string[] = [];
  try {
    const small = await withExporter('bench-web-small', 'ray_clusters: []\n', [`--web.config.file=${web}`], async (url) => ({
      timing: await authTiming(`${url}/-/healthy`, 'prom', 15),
      flood: await floodScrape(`${url}/metrics`, 'prom:right-pass', { clients: 8, scrapes: 40, gapMs: 50 }),
    }));
    const [body] = payloads(1000, 0);
    const up = await upstream(() => body);
    const cfg = configFor(up.url);
    const big = await withExporter('bench-web-1k', { file: cfg.file }, [`--web.config.file=${web}`], async (url) => {
      await waitFor('1,000 apps sampled', async () => (await get(`${url}/metrics`, 'prom:right-pass')).bytes > 20_000, 60_000);
      return floodScrape(`${url}/metrics`, 'prom:right-pass', { clients: 8, scrapes: 40, gapMs: 50 });
    });
    await up.close();
    cfg.cleanup();
    const conns = await withExporter('bench-web-halfopen', 'ray_clusters: []\n', [], async (url, port, pid) => {
      const base: number[] = [];
      for (let i = 0; i < 20; i++) base.push((await get(`${url}/metrics`)).ms);
      const rssBefore = rssMb(pid);
      const r = await halfOpen('127.0.0.1', port, 'plain', 5000, 25_000, async () => {
        const xs: number[] = [];
        for (let i = 0; i < 20; i++) xs.push((await get(`${url}/metrics`)).ms);
        return { scrape: median(xs), rss: rssMb(pid) };
      });
      return { baseline: median(base), rssBefore, ...r };
    });
    const floodRow = (what: string, x: typeof small.flood) => `| ${what}: authenticated scrape (cached, gzip), worst under 8 wrong-password clients | ≤ 5× baseline or 250 ms `
      + `| ${f(x.baselineMs)} ms (max ${f(x.baselineMaxMs)}) | worst ${f(x.floodMaxMs)} ms, median ${f(x.floodMedianMs)} ms; ${x.wrongAnswered} wrong passwords answered 401 `
      + `| ${ok(x.floodMaxMs <= Math.max(5 * x.baselineMs, 250))} |`;
    rows.push(
      `| unknown user vs wrong password, median of 15 each (bcrypt cost 10) | within 2× | wrong ${f(small.timing.wrongMs)} ms | unknown ${f(small.timing.unknownMs)} ms `
        + `(${(small.timing.unknownMs / small.timing.wrongMs).toFixed(2)}×) | ${ok(small.timing.unknownMs <= 2 * small.timing.wrongMs && small.timing.wrongMs <= 2 * small.timing.unknownMs)} |`,
      floodRow('no apps', small.flood),
      floodRow('1,000 apps', big),
      `| 5,000 half-open HTTP connections (half a header), header timeout 10 s | closed within the timeout | | ${conns.result.closed} closed, longest open ${conns.result.closedByMs} ms, ${conns.result.leftOpen} left `
        + `| ${ok(conns.result.leftOpen === 0 && conns.result.closedByMs <= 10_500)} |`,
      `| scrape during that attack (median of 20) | ≤ 2× baseline | ${f(conns.baseline)} ms | ${f(conns.during.scrape)} ms | ${ok(conns.during.scrape <= 2 * conns.baseline)} |`,
      `| exporter RSS during that attack (cap 1,024 connections) | bounded | ${conns.rssBefore.toFixed(0)} MB | ${conns.during.rss.toFixed(0)} MB | |`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return [
    `Command: \`npm run bench\` (or \`npm run build && BENCH_ONLY=web node dist/bench/run.js\`), ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, Node ${process.version}.`,
    'The real bin on loopback with `--web.config.file` (one user, bcrypt cost 10); every request on a new connection. Plain HTTP; the TLS cases are in test/unit/web-connections.test.ts and web-security.test.ts.',
    '',
    '| measure | target | baseline | under attack | met |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
