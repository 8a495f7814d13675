// `npm run fuzz`: the large fuzz campaign (test/fuzz/targets.ts), FUZZ_RUNS inputs per target (default
// 20,000) from FUZZ_SEED (default: the time), and a promtool sample; the figures go into BENCHMARKS.md.
// Exits 1 when a property fails, with the counterexample.
import os from 'node:os';
import path from 'node:path';
import { promtoolSample, runCampaign } from '../test/fuzz/targets';
import { writeSection } from '../bench/stats';

const runs = Number(process.env.FUZZ_RUNS ?? 20_000);
const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const t0 = Date.now();
const results = runCampaign(runs, seed);
const prom = promtoolSample(2000, seed);
const secs = ((Date.now() - t0) / 1000).toFixed(0);
// Failures found by earlier campaigns and fixed, with their regression tests (keep this list when adding to it).
const FIXED = [
  'no product bug so far; the first slice found that the writer prints -0 as 0 (the same sample to Prometheus), so the round-trip property compares values numerically',
];
const text = [
  `Command: \`npm run fuzz\` (FUZZ_RUNS=${runs}, FUZZ_SEED=${seed}), ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, Node ${process.version}, ${secs} s.`,
  'Properties: no throw escapes a source but a SourceError with a message; the config and web-config loaders throw only a ConfigError naming the file and a line or field;',
  'the state-file loader never throws; every sample line the writer emits parses back, label values byte for byte. Inputs: generated values, and the recorded',
  'fixtures (test/fixtures/ray, test/fixtures/hypha) mutated at one node. Unit slice: test/unit/fuzz-parsers.test.ts (300 per target, seed 26).',
  '',
  '| target | inputs tried | failures |',
  '|---|---|---|',
  ...results.map((r) => `| ${r.name} | ${r.runs} | ${r.failure ? `**${r.failure.slice(0, 200).replace(/\|/g, '\\|')}**` : '0'} |`),
  `| writer sample through \`promtool check metrics\` | 2000 lines | ${prom.ok ? '0' : `**${prom.output.slice(0, 200)}**`} |`,
  '',
  `Failures found and fixed: ${FIXED.join('; ')}.`,
].join('\n');
process.stdout.write(`${text}\n`);
if (process.env.FUZZ_WRITE !== '0') writeSection(path.resolve(__dirname, '..', '..', 'BENCHMARKS.md'), 'fuzz', `## Fuzz campaign\n\n${text}`);
process.exit(results.some((r) => r.failure) || !prom.ok ? 1 : 0);
