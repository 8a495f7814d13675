// `npm run bench`: measured figures, printed as a table and written into BENCHMARKS.md.
import os from 'node:os';
import path from 'node:path';
import { serveScale } from './serve-scale';
import { churn, scrapeDuringHang } from './churn-and-hang';
import { registrationEval } from './registration-eval';
import { writeSection } from './stats';
import { metricsScale, processMemory } from './metrics-scale';
import { binMemory, BinMemoryResult } from './bin-memory';
import { webSecurity } from './web-security';
import { rulesCost, rulesCostText } from './rules-cost';
import { prometheus3, prometheus3Missing } from '../test/harness/prometheus-versions';

const f = (x: number) => x.toFixed(1);

/** The /metrics targets, each ratio measured side by side with a bare prom-client registry in one run. */
async function metricsTargets(file: string, write: boolean, churned?: Awaited<ReturnType<typeof churn>>): Promise<void> {
  const x = (a: number, b: number) => `${(a / b).toFixed(3)}×`;
  const ok = (cond: boolean) => (cond ? 'yes' : '**no**');
  const m = await metricsScale(1000, Number(process.env.BENCH_ROUNDS ?? 21));
  process.stdout.write(`metrics scale done; over HTTP: floor ${m.http.floor.toFixed(1)} ms, plain ${m.http.plain.toFixed(2)} ms, gzip ${m.http.gzip.toFixed(2)} ms\n`);
  if (process.env.BENCH_ONLY === 'metrics-http') return;
  const tuned = { nodeFlags: ['--max-semi-space-size=1'], env: { MALLOC_MMAP_THRESHOLD_: '131072' } };
  const mem = await processMemory(1000, 10, 0.01);
  const memTuned = await processMemory(1000, 10, 0.01, tuned);
  const memWorst = await processMemory(1000, 10, 1);
  const big = await processMemory(10000, 5, 0.01);
  const bigTuned = await processMemory(10000, 5, 0.01, tuned);
  const where = await processMemory(1000, 10, 0.01, { heapSnapshot: true });
  const bins = await binMemoryRuns();
  process.stdout.write('metrics memory done\n');
  const cycles = Number(process.env.BENCH_CHURN_CYCLES ?? 10000);
  const c = churned ?? (await churn(cycles));
  const tunedNote = '`NODE_OPTIONS=--max-semi-space-size=1` and `MALLOC_MMAP_THRESHOLD_=131072`';
  const text = [
    `Command: \`npm run bench\` (or \`npm run build && BENCH_ONLY=metrics node --expose-gc dist/bench/run.js\`), ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, Node ${process.version}.`,
    `1,000 apps × 3 deployments (${m.series} series, ${(m.plainBytes / 1e6).toFixed(1)} MB of text), synthetic Ray 2.60 payload from the benchmarks' fake Ray (bench/fake-ray.ts on test/helpers/http-upstream.ts), proxy probes off; `
      + 'figures measured while the machine\'s cores were shared with other jobs. Exporters come from the two test helpers: in-process `exporterWithConfig` (test/helpers/exporter.ts), process `spawnExporter` (test/harness/exporter-process.ts). '
      + 'Times are p50 in ms of `MetricsRenderer.scrape()` (the /metrics handler without the socket) of the in-process exporter,',
    'measured in one loop alternating with the floor: a bare prom-client registry holding the same series (`registry.metrics()`);',
    'the "over HTTP" rows time a GET to its last byte on a keep-alive loopback connection to the in-process exporter served as src/main.ts serves it (`serve()` of the helper: `createApp` on the listener of src/server/listen.ts), alternating with the same registry behind a bare `http` server.',
    '"after N% change" = the first scrape after a Ray sample in which N% of the apps changed (deploy time and every deployment status).',
    `RSS of the plain bin = \`spawnExporter\` with no NODE_OPTIONS (bench/bin-memory.ts; \`ps\` checked: one process, no child); the comparison rows = the in-process exporter alone in a child process (bench/metrics-child.ts; its upstream is the parent), after the cycles and a GC; "tuned" = ${tunedNote}.`,
    '',
    '| measure | target | floor (prom-client) | exporter | ratio | met |',
    '|---|---|---|---|---|---|',
    `| steady scrape (no change) | ≤ 0.1× floor | ${m.floor.toFixed(1)} | ${m.steady.toFixed(2)} | ${x(m.steady, m.floor)} | ${ok(m.steady <= 0.1 * m.floor)} |`,
    `| first scrape after 1% change | ≤ 0.3× | ${m.floor.toFixed(1)} | ${m.after1.toFixed(1)} | ${x(m.after1, m.floor)} | ${ok(m.after1 <= 0.3 * m.floor)} |`,
    `| first scrape after 100% change | ≤ 1.0× | ${m.floor.toFixed(1)} | ${m.after100.toFixed(1)} | ${x(m.after100, m.floor)} | ${ok(m.after100 <= m.floor)} |`,
    `| gzip body size | ≤ 10% of plain | ${(m.plainBytes / 1e6).toFixed(2)} MB plain | ${(m.gzipBytes / 1e6).toFixed(3)} MB | ${((100 * m.gzipBytes) / m.plainBytes).toFixed(1)}% | ${ok(m.gzipBytes <= 0.1 * m.plainBytes)} |`,
    `| cached gzip scrape | ≤ 0.2× floor | ${m.floor.toFixed(1)} | ${m.gzipSteady.toFixed(2)} | ${x(m.gzipSteady, m.floor)} | ${ok(m.gzipSteady <= 0.2 * m.floor)} |`,
    `| gzip scrape after 1% change | — | ${m.floor.toFixed(1)} | ${m.gzipAfter1.toFixed(1)} | ${x(m.gzipAfter1, m.floor)} | |`,
    `| plain scrape over HTTP, no change (time to last byte; floor: the registry behind a bare http server) | ≤ 0.1× floor | ${m.http.floor.toFixed(1)} | ${m.http.plain.toFixed(2)} | ${x(m.http.plain, m.http.floor)} | ${ok(m.http.plain <= 0.1 * m.http.floor)} |`,
    `| gzip scrape over HTTP, no change | ≤ 0.05× floor | ${m.http.floor.toFixed(1)} | ${m.http.gzip.toFixed(2)} | ${x(m.http.gzip, m.http.floor)} | ${ok(m.http.gzip <= 0.05 * m.http.floor)} |`,
    ...binRows(bins, ok),
    `| RSS, same, process alone with Node defaults (plain \`node\`, no interpreter line; for comparison) | — | | ${mem.rssMb.toFixed(0)} MB (heap ${mem.heapUsedMb.toFixed(0)} MB) | | |`,
    `| RSS, same, process alone, tuned (for comparison) | — | | ${memTuned.rssMb.toFixed(0)} MB (heap ${memTuned.heapUsedMb.toFixed(0)} MB) | | |`,
    `| RSS, 1k apps, 10 cycles of 100% change | — | | ${memWorst.rssMb.toFixed(0)} MB | | |`,
    `| heap over ${c.cycles} churn cycles (10 new apps each) | flat | | ${c.heapBeforeMb.toFixed(1)} → ${c.heapAfterMb.toFixed(1)} MB, series ${c.seriesFirst} → ${c.seriesLast} | | ${ok(c.heapAfterMb <= c.heapBeforeMb * 1.1 + 1)} |`,
    `| 10k apps: sample + first scrape (p50 / max) | ≪ 15 s | | ${(big.sampleP50 + big.renderP50).toFixed(0)} / ${(big.sampleMax + big.renderMax).toFixed(0)} ms (sample ${big.sampleP50.toFixed(0)}, scrape ${big.renderP50.toFixed(0)}) | | ${ok(big.sampleMax + big.renderMax < 5000)} |`,
    `| 10k apps: RSS | ≤ 400 MB | | ${big.rssMb.toFixed(0)} MB (tuned ${bigTuned.rssMb.toFixed(0)} MB) | | ${ok(big.rssMb <= 400)} |`,
    '',
    `Where the 1k-app heap goes (heap snapshot after the cycles, self size by kind, MB): ${(where.top ?? []).slice(0, 8).map((t) => `${t.what} ${t.mb.toFixed(1)}`).join(', ')}.`,
  ].join('\n');
  process.stdout.write(`\n${text}\n`);
  if (write) writeSection(file, 'metrics-scale', `## /metrics at scale: pre-rendered text vs prom-client\n\n${text}`);
}

/** BENCH_BIN_RUNS (default 5) runs of the plain bin (bench/bin-memory.ts), one after the other. */
async function binMemoryRuns(): Promise<BinMemoryResult[]> {
  const runs: BinMemoryResult[] = [];
  for (let i = 0; i < Number(process.env.BENCH_BIN_RUNS ?? 5); i++) {
    runs.push(await binMemory(1000, 10, 0.01));
    process.stdout.write(`${binRunLine(runs[i])}\n`);
  }
  return runs;
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const mid = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)];
/** min / median / max, rounded to whole units. */
const spread = (xs: number[]) => `${Math.min(...xs).toFixed(0)} / ${mid(xs).toFixed(0)} / ${Math.max(...xs).toFixed(0)}`;

/** One run of the plain bin, as a progress line. */
function binRunLine(b: BinMemoryResult): string {
  return `plain bin: one process, ${b.exporterRssMb.toFixed(0)} MB RSS; first scrape after a sample p50 gzip ${mid(b.gzipScrapeMs).toFixed(0)} ms, `
    + `plain ${mid(b.plainScrapeMs).toFixed(0)} ms; sample p50 ${b.sampleMs.length ? mid(b.sampleMs).toFixed(0) : '?'} ms`;
}

/** The target rows: the plain bin, no extra environment (bench/bin-memory.ts), min / median / max over the runs. */
function binRows(runs: BinMemoryResult[], ok: (cond: boolean) => string): string[] {
  const rss = runs.map((b) => b.exporterRssMb);
  const all = (pick: (b: BinMemoryResult) => number[]) => runs.flatMap(pick);
  return [
    `| RSS, 1k apps, 10 cycles of 1% change, plain \`hypha-serve-exporter\` bin, no extra environment, ${runs.length} runs (min / median / max) | ≤ 100 MB | `
      + `| one process (\`ps\`: ${Math.max(...runs.map((b) => b.psProcesses))}, no child), ${spread(rss)} MB | | ${ok(Math.max(...rss) <= 100)} |`,
    `| same runs: first scrape after a sample over HTTP, gzip / plain (p50, max); sample (p50, max) | — | `
      + `| ${mid(all((b) => b.gzipScrapeMs)).toFixed(0)} / ${mid(all((b) => b.plainScrapeMs)).toFixed(0)} ms `
      + `(max ${Math.max(...all((b) => b.gzipScrapeMs)).toFixed(0)} / ${Math.max(...all((b) => b.plainScrapeMs)).toFixed(0)} ms); `
      + `sample ${mid(all((b) => b.sampleMs)).toFixed(0)} ms (max ${Math.max(...all((b) => b.sampleMs)).toFixed(0)} ms) | | |`,
  ];
}

/** The rules pack's evaluation cost at 1,000 and 5,000 paging apps (bench/rules-cost.ts). */
async function rulesSection(file: string, write: boolean): Promise<void> {
  const runs = [];
  const sizes = (process.env.BENCH_RULES_APPS ?? '1000,5000').split(',').map(Number);
  for (const n of sizes) {
    runs.push(await rulesCost(n));
    process.stdout.write(`rules cost at ${n} apps done\n`);
  }
  // What the smallest size's cost is made of: the floors on 2.42, and the shipped pack on 3.x when built.
  const n = Math.min(...sizes);
  for (const variant of ['bare', 'constant'] as const) runs.push(await rulesCost(n, { variant }));
  if (prometheus3Missing() === undefined) runs.push(await rulesCost(n, { prometheus: prometheus3() }));
  else process.stdout.write(`rules cost on Prometheus 3 skipped: ${prometheus3Missing()}\n`);
  const text = rulesCostText(runs);
  process.stdout.write(`${text}\n`);
  if (write) writeSection(file, 'rules-cost', `## Rule evaluation cost (issue 25)\n\n${text}`);
}

async function main(): Promise<void> {
  const file = path.resolve(__dirname, '..', '..', 'BENCHMARKS.md');
  const write = process.env.BENCH_WRITE !== '0';
  if (process.env.BENCH_ONLY === 'bin-memory') {
    // The target rows alone (no BENCHMARKS.md write): BENCH_BIN_RUNS runs of the plain bin.
    process.stdout.write(`${binRows(await binMemoryRuns(), (c) => (c ? 'yes' : '**no**')).join('\n')}\n`);
    return;
  }
  if (process.env.BENCH_ONLY === 'web') {
    await webSection(file, write);
    return;
  }
  if (process.env.BENCH_ONLY === 'rules') {
    await rulesSection(file, write);
    return;
  }
  if (process.env.BENCH_ONLY === 'metrics' || process.env.BENCH_ONLY === 'metrics-http') {
    await metricsTargets(file, write);
    return;
  }
  const sizes = (process.env.BENCH_APPS ?? '100,1000,5000').split(',').map(Number);
  const rows: string[] = [];
  for (const n of sizes) {
    const r = await serveScale(n);
    const ratio = r.renderSteady.p50 / r.floor.p50;
    rows.push(
      `| ${n} | ${(r.payloadBytes / 1e6).toFixed(2)} MB | ${f(r.sample.p50)} / ${f(r.sample.p99)} | ${r.requestsPerCycle} | ${f(r.renderSteady.p50)} / ${f(r.renderSteady.p99)} | ${f(r.renderAfterSample.p50)} / ${f(r.renderAfterSample.p99)} | ${f(r.floor.p50)} / ${f(r.floor.p99)} | ${ratio.toFixed(2)}× | ${(r.bytes / 1e6).toFixed(2)} MB | ${r.series} | ${r.rssMb.toFixed(0)} MB |`,
    );
    process.stdout.write(`apps=${n} done\n`);
  }
  const table = [
    `Command: \`npm run bench\` (BENCH_APPS=${sizes.join(',')}), ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, Node ${process.version}.`,
    'Synthetic Ray 2.60-shaped Serve payload served from loopback: N apps × 3 deployments × 2 replicas (every third app\'s autoscaling deployment at zero). Times in ms, p50 / p99.',
    '"sample" = fetch + parse + snapshot update of one cycle. "render steady" = `/metrics` body when nothing changed since the last scrape; "render after sample" = the first scrape after a new sample (includes rebuilding the series). "floor" = a bare prom-client registry rendering the same series.',
    '',
    '| apps | payload | sample | Serve API requests / cycle | render steady | render after sample | floor | steady ÷ floor (p50) | /metrics bytes | series | RSS |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  process.stdout.write(`\n${table}\n`);
  if (write) writeSection(file, 'serve-scale', `## Serve sampling and /metrics rendering at scale\n\n${table}`);

  const evalRows: string[] = [];
  for (const n of sizes) {
    const r = await registrationEval(n);
    evalRows.push(`| ${n} | ${f(r.p50)} / ${f(r.p99)} ms |`);
  }
  const evalText = [
    'Command: `npm run bench`. One registration evaluation (index the registry view, match every expected app, classify the missing ones), as the registration stage runs it on every registry event and every Ray sample; 10% of the apps missing. 50 runs.',
    '',
    '| apps | evaluation p50 / p99 |',
    '|---|---|',
    ...evalRows,
  ].join('\n');
  process.stdout.write(`\n${evalText}\n`);
  if (write) writeSection(file, 'registration-eval', `## Registration evaluation at scale\n\n${evalText}`);

  const cycles = Number(process.env.BENCH_CHURN_CYCLES ?? 10000);
  const c = await churn(cycles);
  const churnText = [
    `Command: \`npm run bench\` (BENCH_CHURN_CYCLES=${cycles}). Each cycle the Serve API lists 10 apps with new names (the previous 10 deleted); every cycle is sampled and rendered.`,
    '',
    '| cycles | series after first cycle | series after last cycle | RSS before → after | heap before → after | time |',
    '|---|---|---|---|---|---|',
    `| ${c.cycles} | ${c.seriesFirst} | ${c.seriesLast} | ${c.rssBeforeMb.toFixed(0)} → ${c.rssAfterMb.toFixed(0)} MB | ${c.heapBeforeMb.toFixed(1)} → ${c.heapAfterMb.toFixed(1)} MB | ${(c.ms / 1000).toFixed(1)} s |`,
  ].join('\n');
  process.stdout.write(`\n${churnText}\n`);
  if (write) writeSection(file, 'churn', `## App churn: no series left behind\n\n${churnText}`);

  const hang = await scrapeDuringHang(500);
  const hangText = [
    'Command: `npm run bench`. The Serve API accepts the connection and never answers (sample timeout 30 s); 500 renders of `/metrics` (100 apps) while that sample is stuck.',
    '',
    '| /metrics p50 | p99 | max | source_up during the hang |',
    '|---|---|---|---|',
    `| ${f(hang.p50)} ms | ${f(hang.p99)} ms | ${f(hang.max)} ms | ${hang.sourceUp} (1 until the timeout expires, then 0) |`,
  ].join('\n');
  process.stdout.write(`\n${hangText}\n`);
  if (write) writeSection(file, 'hang', `## /metrics while an upstream hangs\n\n${hangText}`);
  await metricsTargets(file, write, c);
  await webSection(file, write);
  await rulesSection(file, write);
}

/** The endpoints under hostile clients (bench/web-security.ts). */
async function webSection(file: string, write: boolean): Promise<void> {
  const text = await webSecurity();
  process.stdout.write(`\n${text}\n`);
  if (write) writeSection(file, 'web-security', `## The endpoints under hostile clients\n\n${text}`);
}

main().catch((e) => {
  process.stderr.write(`${String(e)}\n`);
  process.exit(1);
});
