// `npm run bench`: measured figures, printed as a table and written into BENCHMARKS.md.
import os from 'node:os';
import path from 'node:path';
import { serveScale } from './serve-scale';
import { churn, scrapeDuringHang } from './churn-and-hang';
import { registrationEval } from './registration-eval';
import { writeSection } from './stats';

const f = (x: number) => x.toFixed(1);

async function main(): Promise<void> {
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
  const file = path.resolve(__dirname, '..', '..', 'BENCHMARKS.md');
  writeSection(file, 'serve-scale', `## Serve sampling and /metrics rendering at scale\n\n${table}`);

  const evalRows: string[] = [];
  for (const n of sizes) {
    const r = await registrationEval(n);
    evalRows.push(`| ${n} | ${f(r.p50)} / ${f(r.p99)} ms |`);
  }
  const evalText = [
    'Command: `npm run bench`. One registration evaluation (index the registry view, match every expected app, classify the missing ones), as the Hypha source runs it on every registry event and every Ray sample; 10% of the apps missing. 50 runs.',
    '',
    '| apps | evaluation p50 / p99 |',
    '|---|---|',
    ...evalRows,
  ].join('\n');
  process.stdout.write(`\n${evalText}\n`);
  writeSection(file, 'registration-eval', `## Registration evaluation at scale\n\n${evalText}`);

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
  writeSection(file, 'churn', `## App churn: no series left behind\n\n${churnText}`);

  const hang = await scrapeDuringHang(500);
  const hangText = [
    'Command: `npm run bench`. The Serve API accepts the connection and never answers (sample timeout 30 s); 500 renders of `/metrics` (100 apps) while that sample is stuck.',
    '',
    '| /metrics p50 | p99 | max | source_up during the hang |',
    '|---|---|---|---|',
    `| ${f(hang.p50)} ms | ${f(hang.p99)} ms | ${f(hang.max)} ms | ${hang.sourceUp} (1 until the timeout expires, then 0) |`,
  ].join('\n');
  process.stdout.write(`\n${hangText}\n`);
  writeSection(file, 'hang', `## /metrics while an upstream hangs\n\n${hangText}`);
}

main().catch((e) => {
  process.stderr.write(`${String(e)}\n`);
  process.exit(1);
});
