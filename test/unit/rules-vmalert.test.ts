// The rules pack's promtool tests (rules/tests/*.test.yml) run on VictoriaMetrics' rule engine:
// `vmalert-tool unittest` v1.151.0 (built by scripts/setup-engines.sh), which reads promtool's test
// format with one field named differently. Each file is run as is but for a translated copy in a
// temp dir; one jest test per file, so a failure names its file and shows vmalert-tool's own report.
// Also Alertmanager 0.35's amtool on examples/alertmanager.yml (rules.test.ts checks Debian's 0.25).
//
// The translation, and nothing else (docs/alerts.md, "Engines"; /work/shared/reference/engines.md):
//   - `promql_expr_test` → `metricsql_expr_test` (vmalert-tool refuses promtool's name as an unknown field);
//   - `rule_files` made absolute (vmalert-tool resolves them relative to the test file, which moved).
// vmalert-tool runs with --disableAlertgroupLabel, or every alert gets an `alertgroup` label the
// expectations lack. Known differences that are NOT translated (a case that meets them fails, and
// that is a finding about the rules, not the harness): `exp_annotations` are compared exactly (an
// expectation without annotations fails against an alert that has some); MetricsQL keeps `__name__`
// on round(...) results; a subquery without a step uses -datasource.queryStep (5m) instead of the
// evaluation interval; `ALERTS`/`ALERTS_FOR_STATE` are vmalert's own writes.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { artifactsDir } from '../harness/proc';
import { ENGINE_VERSIONS, engineBinDir, engineBinary, engineListed, engineMissing, assertEngine } from '../harness/engines';

jest.setTimeout(300_000);

const ROOT = path.resolve(__dirname, '..', '..');
const TESTS_DIR = path.join(ROOT, 'rules', 'tests');
const AM_CONFIG = path.join(ROOT, 'examples', 'alertmanager.yml');

function testFiles(): string[] {
  return fs.readdirSync(TESTS_DIR).filter((f) => f.endsWith('.test.yml')).sort();
}

/**
 * The promtool test file as vmalert-tool reads it: the two edits above, done on the text so that
 * every other byte (series notation, quoting, comments) reaches vmalert-tool unchanged.
 */
function toVmalertTest(text: string, fromDir: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  let inRuleFiles = false;
  for (const line of lines) {
    if (/^rule_files:\s*$/.test(line)) {
      inRuleFiles = true;
      out.push(line);
      continue;
    }
    if (inRuleFiles) {
      const m = /^(\s*-\s*)(['"]?)([^'"#\s]+)\2\s*(#.*)?$/.exec(line);
      if (m) {
        out.push(`${m[1]}${JSON.stringify(path.isAbsolute(m[3]) ? m[3] : path.resolve(fromDir, m[3]))}`);
        continue;
      }
      if (/^\S/.test(line)) inRuleFiles = false;
    }
    out.push(line.replace(/^(\s*)promql_expr_test:/, '$1metricsql_expr_test:'));
  }
  return out.join('\n');
}

interface VmalertRun {
  code: number | null;
  out: string;
}

function vmalertTool(file: string): VmalertRun {
  const r = spawnSync(engineBinary('victoriametrics', 'vmalert-tool'), ['unittest', '--disableAlertgroupLabel', `--files=${file}`], {
    encoding: 'utf8', timeout: 240_000, cwd: path.dirname(file),
  });
  if (r.error) throw r.error;
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('the translation to vmalert-tool', () => {
  test('renames only promql_expr_test and makes rule_files absolute', () => {
    const src = [
      'rule_files:', '  - ../recording.yml', "  - '../alerts.yml'", 'evaluation_interval: 1m', 'tests:', '  - interval: 1m',
      '    promql_expr_test:', '      - expr: up', "        exp_samples: [{labels: 'up{job=\"promql_expr_test:\"}', value: 1}]", '',
    ].join('\n');
    const got = toVmalertTest(src, '/x/rules/tests').split('\n');
    expect(got.slice(0, 3)).toEqual(['rule_files:', '  - "/x/rules/recording.yml"', '  - "/x/rules/alerts.yml"']);
    expect(got[6]).toBe('    metricsql_expr_test:');
    expect(got[8]).toBe(src.split('\n')[8]); // the same words inside a value stay
    expect(got.filter((l, i) => i !== 1 && i !== 2 && i !== 6)).toEqual(src.split('\n').filter((l, i) => i !== 1 && i !== 2 && i !== 6));
  });

  test('every rules/tests file parses the same after translation, but for the two fields', () => {
    for (const f of testFiles()) {
      const text = fs.readFileSync(path.join(TESTS_DIR, f), 'utf8');
      const a = parse(text) as { rule_files: string[]; tests: Array<Record<string, unknown>> };
      const b = parse(toVmalertTest(text, TESTS_DIR)) as typeof a;
      expect(b.rule_files).toEqual(a.rule_files.map((r) => path.resolve(TESTS_DIR, r)));
      for (const t of a.tests) {
        if ('promql_expr_test' in t) {
          t.metricsql_expr_test = t.promql_expr_test;
          delete t.promql_expr_test;
        }
      }
      expect({ f, tests: b.tests }).toEqual({ f, tests: a.tests });
    }
  });
});

describe(`vmalert-tool ${ENGINE_VERSIONS.victoriametrics} unittest`, () => {
  const listed = engineListed('victoriametrics');
  let dir = '';
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vmalert-tests-'));
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('vmalert-tool is built, or this run says it did not check (outside CI only)', () => {
    const missing = engineMissing('victoriametrics');
    if (missing === undefined) {
      const v = execFileSync(engineBinary('victoriametrics', 'vmalert-tool'), ['--version'], { encoding: 'utf8' });
      expect(v).toContain(ENGINE_VERSIONS.victoriametrics);
    } else {
      expect(listed).toBe(false); // required (CI, scripts/test.sh): listed, and the file tests below fail
      process.stdout.write(`[rules-vmalert] NOT checked on VictoriaMetrics: ${missing}\n`);
    }
  });

  // Registered only when listed (built, or required: then a missing build fails each of them).
  for (const f of listed ? testFiles() : []) test(`${f} passes on vmalert-tool (promql_expr_test read as metricsql_expr_test)`, () => {
    assertEngine('victoriametrics');
    const copy = path.join(dir, f);
    fs.writeFileSync(copy, toVmalertTest(fs.readFileSync(path.join(TESTS_DIR, f), 'utf8'), TESTS_DIR));
    const r = vmalertTool(copy);
    fs.writeFileSync(path.join(artifactsDir(), `vmalert-tool-${f}.txt`), r.out);
    // vmalert-tool prints SUCCESS per file that passed and FAILED with every failing case otherwise.
    expect({ file: f, code: r.code, out: r.code === 0 ? 'SUCCESS' : r.out }).toEqual({ file: f, code: 0, out: 'SUCCESS' });
    expect(r.out).toContain('SUCCESS');
  });
});

describe(`amtool ${ENGINE_VERSIONS.alertmanager}`, () => {
  const listed = engineListed('alertmanager');
  const amtool = () => engineBinary('alertmanager', 'amtool');
  const run = (args: string[]): VmalertRun => {
    const r = spawnSync(amtool(), args, { encoding: 'utf8', timeout: 60_000, cwd: ROOT });
    if (r.error) throw r.error;
    return { code: r.status, out: `${r.stdout}${r.stderr}` };
  };

  test('amtool 0.35 is built, or this run says it did not check (outside CI only)', () => {
    const missing = engineMissing('alertmanager');
    if (missing === undefined) {
      expect(execFileSync(amtool(), ['--version'], { encoding: 'utf8' })).toMatch(/version 0\.35\.0 /);
    } else {
      expect(listed).toBe(false);
      process.stdout.write(`[rules-vmalert] NOT checked on amtool 0.35: ${missing}\n`);
    }
  });

  if (!listed) return;
  test('check-config accepts examples/alertmanager.yml', () => {
    assertEngine('alertmanager');
    const r = run(['check-config', AM_CONFIG]);
    expect(r.out).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  test('routes critical to the pager, warning to chat, info nowhere (and can say no)', () => {
    assertEngine('alertmanager');
    const routeTo = (receiver: string, labels: Record<string, string>) =>
      run(['config', 'routes', 'test', `--config.file=${AM_CONFIG}`, `--verify.receivers=${receiver}`, ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)]).code;
    expect(routeTo('pager', { alertname: 'HyphaServeAppRunningNotRegistered', severity: 'critical' })).toBe(0);
    expect(routeTo('chat', { alertname: 'HyphaServiceClientIdChurn', severity: 'warning' })).toBe(0);
    expect(routeTo('blackhole', { alertname: 'Anything', severity: 'info' })).toBe(0);
    expect(routeTo('chat', { alertname: 'HyphaServiceCachedProxyStale', severity: 'critical' })).toBe(1);
  });
});

test('the harness and scripts/setup-engines.sh agree on where each engine is', () => {
  const out = execFileSync('bash', [path.join(ROOT, 'scripts', 'setup-engines.sh'), '--print-bin-dirs'], { encoding: 'utf8' });
  const dirs = Object.fromEntries(out.trim().split('\n').map((l) => l.split(' ', 2) as [string, string]));
  expect(dirs).toEqual({ thanos: engineBinDir('thanos'), victoriametrics: engineBinDir('victoriametrics'), alertmanager: engineBinDir('alertmanager') });
});
