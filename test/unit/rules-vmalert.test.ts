// The rules pack's promtool tests (rules/tests/*.test.yml) run on VictoriaMetrics' rule engine:
// `vmalert-tool unittest` v1.151.0 (built by scripts/setup-engines.sh), which reads promtool's test
// format. Each file is run as a translated copy in a temp dir; one jest test per file, so a failure
// names its file and shows vmalert-tool's own report. Also Alertmanager 0.35's amtool on
// examples/alertmanager.yml (rules.test.ts checks Debian's 0.25).
//
// The translation, and nothing else (docs/engines.md; /work/shared/reference/engines.md); every
// expression, `for`, label and annotation template reaches vmalert-tool byte for byte:
//   - `promql_expr_test` → `metricsql_expr_test` (vmalert-tool refuses promtool's name as an unknown field);
//   - one rule per group: the rule files are copied with each group split into one group per rule, in
//     order (`<group>#000`, `<group>#001`, ...), and `group_eval_order` lists them in that order, the rule
//     files' order where the test file names none. vmalert-tool, like vmalert, persists a group's results
//     only after the group ran ("user shouldn't rely on chaining of recording rules" in the same group,
//     docs/victoriametrics/vmalert-tool.md, Limitations, whose workaround this is), so a rule reading a
//     series recorded earlier in its group sees the previous evaluation's value: each level of the pack's
//     recording chain (fact, bridge, page, alert) would add one evaluation. Splitting gives promtool's
//     semantics (in order, each rule sees the ones before it); a real vmalert still lags per level
//     (docs/engines.md);
//   - the time origin: promtool's tests start at the Unix epoch, vmalert-tool's at 2000-01-01T00:00:00Z
//     (946684800 s). Input series whose values are Unix times (names ending in `_timestamp_seconds`) are
//     shifted by that much, and a date an expectation renders from one (`1970-01-01 hh:mm:ss +0000 UTC`,
//     humanizeTimestamp) is written on 2000-01-01; an age (time() minus such a value) is then the same;
//   - `rule_files` point at split copies of the vmalert files (rules/vmalert/, the same rules with the
//     group settings that keep vmalert's pages within its latency offset of Prometheus': eval_delay,
//     eval_alignment, params.latency_offset; vmalert-tool evaluates at the test's own times whatever they
//     say); vmalert-tool resolves relative ones against the test file, which moved.
// vmalert-tool runs with --disableAlertgroupLabel, or every alert gets an `alertgroup` label the
// expectations lack. Known differences that are NOT translated (a case that meets them fails, and
// that is a finding about the rules, not the harness): `exp_annotations` are compared exactly (an
// expectation without annotations fails against an alert that has some); MetricsQL keeps `__name__`
// on round(...) results; its changes() counts a series' first sample as a change; a subquery without a
// step uses -datasource.queryStep (5m) instead of the evaluation interval; `ALERTS`/`ALERTS_FOR_STATE`
// are vmalert's own writes.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { artifactsDir } from '../harness/proc';
import { ENGINE_VERSIONS, engineBinDir, engineBinary, engineListed, engineMissing, assertEngine } from '../harness/engines';

jest.setTimeout(300_000);

const ROOT = path.resolve(__dirname, '..', '..');
const RULES_DIR = path.join(ROOT, 'rules');
/** What vmalert loads: the same rules as RULES_DIR's, with vmalert's group settings (mixin/index.ts). */
const VMALERT_RULES_DIR = path.join(RULES_DIR, 'vmalert');
const TESTS_DIR = path.join(RULES_DIR, 'tests');
const AM_CONFIG = path.join(ROOT, 'examples', 'alertmanager.yml');

/** vmalert-tool's test start (unittest.go testStartTime, 2000-01-01T00:00:00Z) in Unix seconds; promtool's is 0. */
const VMALERT_TOOL_EPOCH_S = 946_684_800;
const TIMESTAMP_SERIES = /^\s*-\s*series:\s*'[a-zA-Z_:][a-zA-Z0-9_:]*_timestamp_seconds[{']/;
const RENDERED_DATE = /1970-01-01 (\d\d:\d\d:\d\d(?:\.\d+)? \+0000 UTC)/g;

function testFiles(): string[] {
  return fs.readdirSync(TESTS_DIR).filter((f) => f.endsWith('.test.yml')).sort();
}

interface RuleGroup {
  name: string;
  rules: unknown[];
  [field: string]: unknown;
}

/** A rule file as vmalert-tool gets it: every group split into one group per rule, in order, with the group's other fields. */
function splitRuleFile(text: string): { text: string; order: Array<[string, string[]]> } {
  const doc = parse(text) as { groups: RuleGroup[] };
  const order: Array<[string, string[]]> = [];
  const groups: RuleGroup[] = [];
  for (const g of doc.groups) {
    const names: string[] = [];
    g.rules.forEach((r, i) => {
      const name = `${g.name}#${String(i).padStart(3, '0')}`;
      groups.push({ ...g, name, rules: [r] });
      names.push(name);
    });
    order.push([g.name, names]);
  }
  return { text: stringify({ groups }, { lineWidth: 0 }), order };
}

/** Unix-time values of a promtool `values` notation moved to vmalert-tool's origin: `600x10` → `946685400x10`. */
function shiftValues(values: string): string {
  return values.split(/(\s+)/).map((tok) => {
    const m = /^(-?\d+(?:\.\d+)?)((?:[+-]\d+(?:\.\d+)?)?x\d+)?$/.exec(tok);
    return m ? `${Number(m[1]) + VMALERT_TOOL_EPOCH_S}${m[2] ?? ''}` : tok; // `_`, `_xN`, `stale` and blanks stay
  }).join('');
}

interface SplitRules {
  /** rule file as the test names it, resolved → the split copy */
  copies: Map<string, string>;
  /** every original group in file order → its split groups */
  order: Array<[string, string[]]>;
}

/** Split copies of rules/vmalert/*.yml in dir, each standing for the rules/*.yml file of its name. */
function writeSplitRules(dir: string): SplitRules {
  const copies = new Map<string, string>();
  const order: Array<[string, string[]]> = [];
  for (const f of fs.readdirSync(RULES_DIR).filter((x) => x.endsWith('.yml')).sort()) {
    const split = splitRuleFile(fs.readFileSync(path.join(VMALERT_RULES_DIR, f), 'utf8'));
    const copy = path.join(dir, `split-${f}`);
    fs.writeFileSync(copy, split.text);
    copies.set(path.join(RULES_DIR, f), copy);
    order.push(...split.order);
  }
  return { copies, order };
}

/**
 * The promtool test file as vmalert-tool reads it: the edits above, done on the text so that every
 * other byte (series notation, quoting, comments) reaches vmalert-tool unchanged.
 */
function toVmalertTest(text: string, fromDir: string, rules: SplitRules): string {
  const ruleFiles: string[] = [];
  const out: string[] = [];
  let block: 'rule_files' | 'group_eval_order' | undefined;
  let listed: string[] | undefined;
  let timestampSeries = false;
  const groupOrder = (): string[] => {
    const of = new Map(rules.order);
    const named = (listed ?? rules.order.map(([g]) => g)).filter((g) => of.has(g));
    return [...named, ...rules.order.map(([g]) => g).filter((g) => !named.includes(g))].flatMap((g) => of.get(g) ?? []);
  };
  for (const line of text.split('\n')) {
    if (/^\S/.test(line)) block = undefined;
    if (/^rule_files:\s*$/.test(line)) block = 'rule_files';
    if (/^group_eval_order:\s*$/.test(line)) {
      block = 'group_eval_order';
      listed = [];
      continue; // written at the end, expanded
    }
    const item = /^(\s*-\s*)(['"]?)([^'"#\s]+)\2\s*(#.*)?$/.exec(line);
    if (block === 'rule_files' && item) {
      const abs = path.isAbsolute(item[3]) ? item[3] : path.resolve(fromDir, item[3]);
      ruleFiles.push(abs);
      out.push(`${item[1]}${JSON.stringify(rules.copies.get(abs) ?? abs)}`);
      continue;
    }
    if (block === 'group_eval_order') {
      if (item) listed?.push(item[3]);
      continue;
    }
    if (/^\s*-\s*series:/.test(line)) timestampSeries = TIMESTAMP_SERIES.test(line);
    const values = /^(\s*values:\s*)(['"])(.*)\2(\s*(#.*)?)$/.exec(line);
    if (values && timestampSeries) {
      out.push(`${values[1]}${values[2]}${shiftValues(values[3])}${values[2]}${values[4]}`);
      continue;
    }
    out.push(line.replace(/^(\s*)promql_expr_test:/, '$1metricsql_expr_test:').replace(RENDERED_DATE, '2000-01-01 $1'));
  }
  if (ruleFiles.some((f) => !rules.copies.has(f))) throw new Error(`a rule file outside rules/: ${ruleFiles.join(', ')}`);
  while (out.length > 0 && out[out.length - 1] === '') out.pop();
  return [...out, 'group_eval_order:', ...groupOrder().map((g) => `  - ${JSON.stringify(g)}`), ''].join('\n');
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
  let dir = '';
  let rules: SplitRules;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vmalert-translate-'));
    rules = writeSplitRules(dir);
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the vmalert files are the rules/*.yml groups and rules, each group with the vmalert settings only', () => {
    for (const f of ['recording.yml', 'alerts.yml']) {
      const prom = parse(fs.readFileSync(path.join(RULES_DIR, f), 'utf8')) as { groups: RuleGroup[] };
      const vm = parse(fs.readFileSync(path.join(VMALERT_RULES_DIR, f), 'utf8')) as { groups: RuleGroup[] };
      expect(vm.groups.map((g) => g.name)).toEqual(prom.groups.map((g) => g.name));
      for (const [i, g] of vm.groups.entries()) {
        expect({ ...g }).toEqual({ ...prom.groups[i], eval_delay: '5s', eval_alignment: false, params: { latency_offset: ['5s'] } });
      }
    }
  });

  test('splits every group into one group per rule, in order, keeping every rule and group field as it is', () => {
    for (const f of ['recording.yml', 'alerts.yml']) {
      const a = parse(fs.readFileSync(path.join(VMALERT_RULES_DIR, f), 'utf8')) as { groups: RuleGroup[] };
      const b = parse(fs.readFileSync(rules.copies.get(path.join(RULES_DIR, f)) ?? '', 'utf8')) as { groups: RuleGroup[] };
      expect(b.groups.every((g) => g.rules.length === 1)).toBe(true);
      expect(b.groups.map((g) => g.rules[0])).toEqual(a.groups.flatMap((g) => g.rules));
      expect(b.groups.map((g) => ({ ...g, name: g.name.replace(/#\d{3}$/, ''), rules: undefined })))
        .toEqual(a.groups.flatMap((g) => g.rules.map(() => ({ ...g, rules: undefined }))));
    }
  });

  test('renames only promql_expr_test, points rule_files at the split copies, expands group_eval_order, moves Unix times', () => {
    const rf = (f: string) => JSON.stringify(rules.copies.get(path.join(RULES_DIR, f)));
    const src = [
      'rule_files:', '  - ../recording.yml', "  - '../alerts.yml'", 'evaluation_interval: 1m', 'group_eval_order:', '  - hypha-serve-exporter',
      'tests:', '  - interval: 1m', '    input_series:',
      "      - series: 'hypha_serve_app_unregistered_since_timestamp_seconds{app=\"a\"}'", "        values: '_x10 600x20 stale 60+60x2'",
      "      - series: 'hypha_serve_timestamp_seconds_total{app=\"a\"}'", "        values: '600x20'",
      '    promql_expr_test:', '      - expr: up', "        exp_samples: [{labels: 'up{job=\"promql_expr_test:\"}', value: 1}]",
      '    alert_rule_test:', '      - exp_annotations: {description: "last loaded 1970-01-01 00:01:40 +0000 UTC."}', '',
    ].join('\n');
    const got = toVmalertTest(src, TESTS_DIR, rules).split('\n');
    const order = rules.order.find(([g]) => g === 'hypha-serve-exporter')?.[1] ?? [];
    const rest = rules.order.filter(([g]) => g !== 'hypha-serve-exporter').flatMap(([, gs]) => gs);
    expect(got).toEqual([
      'rule_files:', `  - ${rf('recording.yml')}`, `  - ${rf('alerts.yml')}`, 'evaluation_interval: 1m',
      'tests:', '  - interval: 1m', '    input_series:',
      src.split('\n')[9], "        values: '_x10 946685400x20 stale 946684860+60x2'",
      src.split('\n')[11], src.split('\n')[12], // not a Unix time: stays
      '    metricsql_expr_test:', src.split('\n')[14], src.split('\n')[15], // the same words inside a value stay
      '    alert_rule_test:', '      - exp_annotations: {description: "last loaded 2000-01-01 00:01:40 +0000 UTC."}',
      'group_eval_order:', ...[...order, ...rest].map((g) => `  - ${JSON.stringify(g)}`), '',
    ]);
    expect(order.length).toBeGreaterThan(1);
  });

  test('every rules/tests file parses the same after translation, but for those fields', () => {
    // each value term's leading number moved by the origin, the rest of the notation as it was
    const shifted = (v: string) => v.trim().split(/\s+/).map((t) => t.replace(/^-?\d+(?:\.\d+)?/, (n) => `${Number(n) + VMALERT_TOOL_EPOCH_S}`)).join(' ');
    for (const f of testFiles()) {
      const text = fs.readFileSync(path.join(TESTS_DIR, f), 'utf8');
      type Series = { series: string; values: string };
      type T = { rule_files: string[]; group_eval_order?: string[]; tests: Array<Record<string, unknown> & { input_series?: Series[] }> };
      const a = parse(text) as T;
      const b = parse(toVmalertTest(text, TESTS_DIR, rules)) as T;
      expect(b.rule_files).toEqual(a.rule_files.map((r) => rules.copies.get(path.resolve(TESTS_DIR, r))));
      const want = new Map(rules.order);
      expect(b.group_eval_order).toEqual([
        ...(a.group_eval_order ?? []), ...rules.order.map(([g]) => g).filter((g) => !(a.group_eval_order ?? []).includes(g)),
      ].flatMap((g) => want.get(g) ?? []));
      for (const [t, u] of a.tests.map((t, i) => [t, b.tests[i]] as const)) {
        for (const [s, v] of (t.input_series ?? []).map((s, i) => [s, u.input_series?.[i]] as const)) {
          if (/^[a-zA-Z_:][a-zA-Z0-9_:]*_timestamp_seconds[{]/.test(s.series)) {
            expect({ f, series: s.series, values: v?.values.trim().split(/\s+/).join(' ') }).toEqual({ f, series: s.series, values: shifted(s.values) });
            s.values = v?.values ?? '';
          }
        }
        if ('promql_expr_test' in t) {
          t.metricsql_expr_test = t.promql_expr_test;
          delete t.promql_expr_test;
        }
      }
      const dates = (x: unknown) => JSON.parse(JSON.stringify(x).replace(RENDERED_DATE, '2000-01-01 $1')) as unknown;
      expect({ f, tests: b.tests }).toEqual({ f, tests: dates(a.tests) });
    }
  });
});

describe(`vmalert-tool ${ENGINE_VERSIONS.victoriametrics} unittest`, () => {
  const listed = engineListed('victoriametrics');
  let dir = '';
  let rules: SplitRules;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vmalert-tests-'));
    rules = writeSplitRules(dir);
  });
  afterAll(() => {
    // KEEP_VMALERT_DIR=1 keeps the translated files to rerun one case by hand (the path is printed).
    if (dir && process.env.KEEP_VMALERT_DIR === '1') process.stdout.write(`[rules-vmalert] translated files kept in ${dir}\n`);
    else if (dir) fs.rmSync(dir, { recursive: true, force: true });
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
  for (const f of listed ? testFiles() : []) test(`${f} passes on vmalert-tool (translated: metricsql_expr_test, one rule per group, 2000-01-01 origin)`, () => {
    assertEngine('victoriametrics');
    const copy = path.join(dir, f);
    fs.writeFileSync(copy, toVmalertTest(fs.readFileSync(path.join(TESTS_DIR, f), 'utf8'), TESTS_DIR, rules));
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
  expect(dirs).toEqual({ thanos: engineBinDir('thanos'), victoriametrics: engineBinDir('victoriametrics'), alertmanager: engineBinDir('alertmanager'),
    'prometheus-operator': engineBinDir('prometheus-operator'),
  });
});
