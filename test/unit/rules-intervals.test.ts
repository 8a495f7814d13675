// The rules pack's promtool tests (rules/tests/*.test.yml) at the evaluation intervals people run
// (issue 25, part 5): every file again with `evaluation_interval` 15s and 30s (the Prometheus
// Operator's default), on every promtool of prometheusVersions() (2.42 always, 3.x when built or
// required). The input series keep the interval they were written at (each test's own `interval`,
// else the file's original evaluation_interval, written out), so only the rule evaluations get denser:
// the same expectations must hold, because the pack's waits are durations (`for:`, `[5m]` windows,
// `offset 5m`), not counts of evaluations, and each recorded series is read by rules after it in its
// own group, evaluated in order. One jest test per promtool, interval and file, so a failure names all three.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { artifactsDir } from '../harness/proc';
import { assertPrometheusBinaries, prometheusVersions } from '../harness/prometheus-versions';

jest.setTimeout(300_000);

const ROOT = path.resolve(__dirname, '..', '..');
const TESTS_DIR = path.join(ROOT, 'rules', 'tests');
const INTERVALS = ['15s', '30s'] as const;

function testFiles(): string[] {
  return fs.readdirSync(TESTS_DIR).filter((f) => f.endsWith('.test.yml')).sort();
}

interface TestFile {
  rule_files: string[];
  evaluation_interval?: string;
  tests: Array<{ name?: string; interval?: string; [field: string]: unknown }>;
}

/** The test file at evaluation interval `every`: rule_files absolute, each test's input interval written out. */
function atInterval(text: string, every: string): string {
  const t = parse(text) as TestFile;
  const original = t.evaluation_interval ?? '1m'; // promtool's default
  t.rule_files = t.rule_files.map((r) => path.resolve(TESTS_DIR, r));
  t.evaluation_interval = every;
  for (const g of t.tests) g.interval ??= original;
  return stringify(t, { lineWidth: 0 });
}

test('the rewrite changes only evaluation_interval, rule_files and the defaulted input intervals', () => {
  for (const f of testFiles()) {
    const text = fs.readFileSync(path.join(TESTS_DIR, f), 'utf8');
    const a = parse(text) as TestFile;
    const b = parse(atInterval(text, '15s')) as TestFile;
    expect(b.evaluation_interval).toBe('15s');
    expect(b.rule_files).toEqual(a.rule_files.map((r) => path.resolve(TESTS_DIR, r)));
    expect(b.tests.map((g) => g.interval)).toEqual(a.tests.map((g) => g.interval ?? a.evaluation_interval ?? '1m'));
    expect(b.tests).toEqual(a.tests.map((g) => ({ ...g, interval: g.interval ?? a.evaluation_interval ?? '1m' })));
  }
});

describe.each(prometheusVersions().map((v) => [v.label, v] as const))('promtool %s', (_label, v) => {
  let dir = '';
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rules-intervals-'));
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  describe.each(INTERVALS.map((i) => [i] as const))('evaluation_interval %s', (every) => {
    test.each(testFiles().map((f) => [f] as const))('%s passes', (f) => {
      assertPrometheusBinaries(v);
      const copy = path.join(dir, `${every}-${f}`);
      fs.writeFileSync(copy, atInterval(fs.readFileSync(path.join(TESTS_DIR, f), 'utf8'), every));
      const r = spawnSync(v.promtool, ['test', 'rules', copy], { cwd: dir, encoding: 'utf8', timeout: 240_000 });
      if (r.error) throw r.error;
      const out = `${r.stdout}${r.stderr}`;
      fs.writeFileSync(path.join(artifactsDir(), `promtool-${v.label}-${every}-${f}.txt`), out);
      expect({ file: f, every, code: r.status, out: r.status === 0 ? 'SUCCESS' : out }).toEqual({ file: f, every, code: 0, out: 'SUCCESS' });
      expect(out).toContain('SUCCESS');
    });
  });
});
