// Soak run (not in CI): the real stack for SOAK_MINUTES (default 30) under periodic faults,
// reporting exporter memory growth, errors in its log, and transitions it missed.
//   npm run bench:soak
import fs from 'node:fs';
import path from 'node:path';
import { startStack, Stack } from '../test/harness/stack';
import { rayAppConfig } from '../test/harness/ray';
import { waitFor } from '../test/harness/proc';
import { repoRoot } from '../src/util/repo-root';
import { writeSection } from './stats';

const minutes = Number(process.env.SOAK_MINUTES ?? 30);
const t0 = Date.now();
const log = (m: string) => process.stdout.write(`[soak +${((Date.now() - t0) / 60000).toFixed(1)}m] ${m}\n`);

async function metric(stack: Stack, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const text = await (await fetch(`${stack.exporterUrl}/metrics`)).text();
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_:]+)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => (m[3] ?? '').includes(`${k}="${v}"`))) return Number(m[4]);
  }
  return undefined;
}

interface Fault { name: string; inject(s: Stack): Promise<void>; expect: string; check(s: Stack): Promise<boolean> }

const faults: Fault[] = [
  {
    name: 'Hypha restart under a new server id',
    inject: (s) => s.hypha.restart({ serverId: undefined }),
    expect: 'canary stale, then Hypha source up again',
    check: async (s) => (await metric(s, 'hypha_serve_service_cached_stale', { holder: 'exporter' })) === 1,
  },
  {
    name: 'Hypha down 40 s',
    inject: async (s) => { await s.hypha.stopServer(); await new Promise((r) => setTimeout(r, 40_000)); await s.hypha.startServer(); },
    expect: 'hypha source up again',
    check: async (s) => (await metric(s, 'hypha_serve_source_up', { source: 'hypha', hypha: 'public/artifact-manager' })) === 1,
  },
  {
    name: 'Ray dashboard stopped 30 s',
    inject: async (s) => { await s.ray.stopDashboard(); await new Promise((r) => setTimeout(r, 30_000)); await s.ray.restartDashboard(); },
    expect: 'ray source up again with the app listed',
    check: async (s) => (await metric(s, 'hypha_serve_source_up', { source: 'ray' })) === 1 && (await metric(s, 'hypha_serve_app_status', { app: 'two-step', status: 'RUNNING' })) === 1,
  },
  {
    name: 'app deleted and redeployed',
    inject: async (s) => { await s.ray.deleteAllApps(); await waitFor('gone', async () => (await metric(s, 'hypha_serve_app_status', { app: 'two-step' })) === undefined, 120_000, 500); await s.ray.deploy(rayAppConfig('two-step.yaml')); },
    expect: 'app RUNNING again',
    check: async (s) => (await metric(s, 'hypha_serve_app_status', { app: 'two-step', status: 'RUNNING' })) === 1,
  },
  {
    name: 'wake the scaled-to-zero Worker',
    inject: async (s) => { await s.ray.request('/two-step?text=soak', 120_000); },
    expect: 'Worker scaled to zero again',
    check: async (s) => (await metric(s, 'hypha_serve_deployment_scaled_to_zero', { deployment: 'Worker' })) === 1,
  },
];

/** Slope of the least-squares line through (x, y) points; NaN with fewer than two distinct x. */
function leastSquaresSlope(points: Array<[number, number]>): number {
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return n < 2 || sxx === 0 ? NaN : points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / sxx;
}

async function main(): Promise<void> {
  const stack = await startStack({
    forDivisor: 10, sampleInterval: '2s', sampleTimeout: '3s', scrapeInterval: '2s', evaluationInterval: '2s',
    groupWait: '2s', groupInterval: '5s', canaryWitnessMax: '1m', hyphaServerId: 'soak', log,
  });
  const stopping = async (code: number) => { await stack.stop(); process.exit(code); };
  process.on('SIGINT', () => void stopping(130));
  const mem: Array<{ t: number; rss: number; heap: number }> = [];
  const results: Array<{ fault: string; ok: boolean; seconds: number }> = [];
  try {
    await stack.ray.deploy(rayAppConfig('two-step.yaml'));
    await waitFor('app up', async () => (await metric(stack, 'hypha_serve_app_status', { app: 'two-step', status: 'RUNNING' })) === 1, 180_000, 1000);
    const memTimer = setInterval(() => {
      void (async () => {
        const rss = await metric(stack, 'process_resident_memory_bytes');
        const heap = await metric(stack, 'nodejs_heap_size_used_bytes');
        if (rss !== undefined && heap !== undefined) mem.push({ t: (Date.now() - t0) / 60000, rss, heap });
      })().catch(() => undefined);
    }, 30_000);
    let i = 0;
    while (Date.now() - t0 < minutes * 60_000) {
      const f = faults[i++ % faults.length];
      log(`fault: ${f.name}`);
      const fs0 = Date.now();
      try {
        await f.inject(stack);
        await waitFor(f.expect, () => f.check(stack), 180_000, 1000);
        results.push({ fault: f.name, ok: true, seconds: (Date.now() - fs0) / 1000 });
        log(`  observed: ${f.expect} (${((Date.now() - fs0) / 1000).toFixed(1)} s)`);
      } catch (e) {
        results.push({ fault: f.name, ok: false, seconds: (Date.now() - fs0) / 1000 });
        log(`  MISSED: ${f.expect}: ${(e as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 60_000));
    }
    clearInterval(memTimer);
    const exporterLog = stack.exporter.output();
    const errors = exporterLog.split('\n').filter((l) => /"level":"(error|fatal)"/.test(l));
    const unhandled = exporterLog.split('\n').filter((l) => /Unhandled|unhandledRejection|TypeError/.test(l));
    const alive = stack.exporter.child.exitCode === null;
    const first = mem[1] ?? mem[0];
    const last = mem[mem.length - 1];
    // Heap is read without forcing a GC, so two end points are noise; a fitted line over every
    // sample, and over the second half alone (ring buffers and histograms fill early), is not.
    const slope = leastSquaresSlope(mem.map((m) => [m.t, m.heap / 1048576]));
    const lateSlope = leastSquaresSlope(mem.filter((m) => last && m.t >= last.t / 2).map((m) => [m.t, m.heap / 1048576]));
    // The lowest reading of each 10-minute window approximates the heap right after a GC: a leak raises it.
    const floors: string[] = [];
    for (let w = 0; last && w <= last.t; w += 10) {
      const inWindow = mem.filter((m) => m.t >= w && m.t < w + 10).map((m) => m.heap);
      if (inWindow.length > 0) floors.push((Math.min(...inWindow) / 1048576).toFixed(1));
    }
    const missed = results.filter((r) => !r.ok);
    const text = [
      `Command: \`npm run build && SOAK_MINUTES=${minutes} node dist/bench/soak.js\` (real Hypha + moto S3, real Ray Serve 2.60, the exporter CLI, Prometheus and Alertmanager; a fault every ~1-2 min in rotation: ${faults.map((f) => f.name).join('; ')}).`,
      '',
      '| duration | faults injected | transitions missed | exporter alive at end | error log lines | unhandled-rejection/TypeError lines | RSS first → last | heap first → last | heap slope, fitted: whole run / second half |',
      '|---|---|---|---|---|---|---|---|---|',
      `| ${((Date.now() - t0) / 60000).toFixed(0)} min | ${results.length} | ${missed.length}${missed.length ? ` (${missed.map((m) => m.fault).join(', ')})` : ''} | ${alive ? 'yes' : 'NO'} | ${errors.length} | ${unhandled.length} | ${first ? (first.rss / 1048576).toFixed(0) : '?'} → ${last ? (last.rss / 1048576).toFixed(0) : '?'} MB | ${first ? (first.heap / 1048576).toFixed(1) : '?'} → ${last ? (last.heap / 1048576).toFixed(1) : '?'} MB | ${slope.toFixed(3)} / ${lateSlope.toFixed(3)} MB/min |`,
      '',
      `Heap floor (lowest reading) per 10-minute window: ${floors.join(' / ')} MB. The heap is read without forcing a GC, so the floor, not the end points, is the leak indicator.`,
      '',
      'Fault → expected transition observed (seconds): ' + results.map((r) => `${r.fault}: ${r.ok ? r.seconds.toFixed(0) : 'missed'}`).join('; ') + '.',
    ].join('\n');
    process.stdout.write(`\n${text}\n`);
    fs.writeFileSync(path.join(repoRoot(), 'test-artifacts', 'soak-exporter.log'), exporterLog);
    fs.writeFileSync(path.join(repoRoot(), 'test-artifacts', 'soak-memory.csv'),
      ['minute,rss_bytes,heap_used_bytes', ...mem.map((m) => `${m.t.toFixed(2)},${m.rss},${m.heap}`)].join('\n') + '\n');
    writeSection(path.join(repoRoot(), 'BENCHMARKS.md'), 'soak', `## Soak run under periodic faults\n\n${text}`);
  } finally {
    await stack.stop();
  }
}

void main();
