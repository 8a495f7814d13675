// The alerting rules pack, checked with the real tools: promtool of every Prometheus version the
// harness knows (Debian 2.42 always, 3.x when built), amtool 0.25. Syntax, promtool unit tests,
// the mixin generator (shipped files in sync, a user's config renders and loads), metadata every
// page needs, runbook pages, routing, and mutations proving that the negative cases can fail and
// that each issue-12 defect test fails on the defective logic it replaced.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { main as genMain, MANIFEST_PATH, renderAll, renderPrometheusRule } from '../../mixin/build';
import { ALERT_NAMES, compact, humanDuration, loadMixinConfig, MIXIN_CONFIG_PATH, renderPack, scaleDurations, withSelector } from '../../mixin';
import { prometheusVersions } from '../harness/prometheus-versions';
import { loadRules, metricNamesIn, metricNamesUsedByRules, type RuleDef } from '../helpers/rule-metrics';
import { CAUSE_TEXT } from '../../src/snapshot/registration';
import { STALE_CAUSE_TEXT } from '../../src/snapshot/services';
import { FAMILIES } from '../../src/metrics/families';

jest.setTimeout(180_000);

const ROOT = path.resolve(__dirname, '..', '..');
const RULE_FILES = ['rules/recording.yml', 'rules/alerts.yml'];
const TESTS_DIR = path.join(ROOT, 'rules', 'tests');
const AM_CONFIG = 'examples/alertmanager.yml';
const RECEIVER_BY_SEVERITY: Record<string, string> = { critical: 'pager', warning: 'chat', info: 'blackhole' };
const CONFIG = loadMixinConfig(ROOT);
const VERSIONS = prometheusVersions();
/** Alerts about one exporter process: they keep `instance`. Every other alert is a fact and aggregates it away. */
const PER_INSTANCE = ['HyphaServeExporterDown', 'HyphaServeExporterConfigReloadFailed', 'HyphaServeExporterWebConfigReloadFailed', 'HyphaServeSourceStale'];

interface Run {
  code: number | null;
  out: string;
}

function run(cmd: string, args: string[], cwd = ROOT): Run {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

function testFiles(dir = TESTS_DIR): string[] {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.yml')).sort().map((f) => path.join(dir, f));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

interface AlertCase {
  file: string;
  test: string;
  alertname: string;
  positive: boolean;
}

/** Every alert_rule_test entry across rules/tests/*.yml. */
function alertCases(): AlertCase[] {
  const out: AlertCase[] = [];
  for (const file of testFiles()) {
    const doc: unknown = parse(fs.readFileSync(file, 'utf8'));
    if (!isRecord(doc)) throw new Error(`${file}: not a mapping`);
    for (const t of asArray(doc.tests)) {
      if (!isRecord(t)) continue;
      const test = typeof t.name === 'string' ? t.name : '(unnamed)';
      for (const c of asArray(t.alert_rule_test)) {
        if (!isRecord(c) || typeof c.alertname !== 'string') continue;
        out.push({ file: path.basename(file), test, alertname: c.alertname, positive: asArray(c.exp_alerts).length > 0 });
      }
    }
  }
  return out;
}

/**
 * The reads of a recorded series that is not recorded earlier in the reader's own group (in file order):
 * such a read sees the other group's previous evaluation, so a real fix would resolve a page one evaluation late.
 * A rule may read its own earlier values (last_over_time of itself). An annotation (text only, never the alert's
 * state) may also print a series of `textOnly` (the dashboards' records of recording.yml, e.g. the p90 the latency
 * warning prints): a number one evaluation old in a sentence.
 */
function unorderedReads(inFileOrder: ReturnType<typeof loadRules>, textOnly: ReadonlySet<string> = new Set()): string[] {
  const recordedBefore = new Map<string, Set<string>>();
  const out: string[] = [];
  for (const r of inFileOrder) {
    const before = recordedBefore.get(r.group) ?? new Set<string>();
    for (const [i, text] of [r.expr, ...Object.values(r.annotations)].entries()) {
      for (const m of text.matchAll(/[a-z_]+:hypha_serve_[a-z0-9_]+:[a-z0-9_]+/g)) {
        if (m[0] !== r.name && !before.has(m[0]) && !(i > 0 && textOnly.has(m[0]))) out.push(`${r.group}/${r.name} reads ${m[0]}`);
      }
    }
    if (r.kind === 'record') before.add(r.name);
    recordedBefore.set(r.group, before);
  }
  return out;
}

/**
 * The by/on/ignoring/without clauses of one expression that lose a topology label: every by/on list over exporter
 * series carries all of them (two installs, or two namespaces with the same job, never meet), and no ignoring or
 * without list names one. `max by (reason)`, `by (le)` (one label within one identity) and `on ()` are exempt, and
 * so is every `by` of an annotation query (`inQuery`), which aggregates within a selector of the alert's identity.
 */
function topologyViolations(rule: string, expr: string, topo: readonly string[], inQuery = false): string[] {
  const out: string[] = [];
  for (const m of expr.matchAll(/\b(by|on|ignoring|without) \(([^)]*)\)/g)) {
    const list = m[2].split(',').map((x) => x.trim()).filter(Boolean);
    if (m[1] === 'ignoring' || m[1] === 'without') {
      for (const t of topo.filter((t) => list.includes(t))) out.push(`${rule}: ${m[0]} drops ${t}`);
      continue;
    }
    const withinIdentity = m[1] === 'by' && (inQuery || (list.length === 1 && !['job', 'instance'].includes(list[0])));
    if (list.length === 0 || withinIdentity) continue;
    for (const t of topo.filter((t) => !list.includes(t))) out.push(`${rule}: ${m[0]} lacks ${t}`);
  }
  return out;
}

const rules = loadRules(ROOT);
const alerts = rules.filter((r) => r.kind === 'alert');
const records = rules.filter((r) => r.kind === 'record');

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A rule's expression with every recording rule it reads, transitively, spliced in. */
function expandedExpr(r: { expr: string }, recs: { name: string; expr: string }[] = records): string {
  const parts: string[] = [];
  const seen = new Set<string>();
  const visit = (expr: string): void => {
    parts.push(expr);
    for (const rec of recs) {
      if (seen.has(rec.name) || !new RegExp(`(?<![A-Za-z0-9_:])${escapeRe(rec.name)}(?![A-Za-z0-9_:])`).test(expr)) continue;
      seen.add(rec.name);
      visit(rec.expr);
    }
  };
  visit(r.expr);
  return parts.join('\n');
}

/** A recorded series' name (level:metric:operations; any name with a colon, not a subquery's [5m:1m]). */
const RECORDED_NAME = /(?<![A-Za-z0-9_:."])[a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z0-9_:]*[a-zA-Z0-9_]/g;
/** An annotation comparing the alert's value to a number: a value that encodes something ($value 100 = a cause). */
const VALUE_COMPARED = /\b(?:eq|ne|lt|le|gt|ge)\s+(?:\$value\s+-?\d|-?\d[\d.e+]*\s+\$value\b)/;

/**
 * Issue 37: what an alert of the pack may be. Its expr is at most 2 lines and reads at most one recorded level
 * above the exporter's series: a recording rule it reads (in its expr or an annotation query) reads exporter
 * series or `up` only, never another recorded series. No alert's value encodes causes: no recorded series of
 * digits, no modulo by a power of ten, no annotation comparing $value to a number (the causes are the
 * exporter's *_cause_info series, which the text reads).
 */
function issue37Violations(all: readonly RuleDef[]): string[] {
  const recs = new Map(all.filter((r) => r.kind === 'record').map((r) => [r.name, r]));
  const out: string[] = [];
  const recordedIn = (text: string) => [...new Set(text.match(RECORDED_NAME) ?? [])];
  for (const r of recs.values()) {
    if (/digits/.test(r.name)) out.push(`record ${r.name}: a digit encoding`);
  }
  for (const r of all) {
    if (/%\s*10+(?![\d.])/.test(r.expr)) out.push(`${r.name}: modulo by a power of ten`);
  }
  for (const a of all.filter((r) => r.kind === 'alert')) {
    const lines = a.expr.trim().split('\n').length;
    if (lines > 2) out.push(`${a.name}: expr of ${lines} lines`);
    const reads = [...recordedIn(a.expr), ...Object.values(a.annotations).flatMap((t) => [...t.matchAll(/[a-z_]+:hypha_serve_[a-z0-9_]+:[a-z0-9_]+/g)].map((m) => m[0]))];
    for (const name of new Set(reads)) {
      const rec = recs.get(name);
      if (rec === undefined) {
        out.push(`${a.name}: reads ${name}, which no rule records`);
        continue;
      }
      for (const deeper of recordedIn(rec.expr)) out.push(`${a.name}: reads ${name}, which reads ${deeper} (two recorded levels)`);
    }
    for (const [k, t] of Object.entries(a.annotations)) {
      if (VALUE_COMPARED.test(t)) out.push(`${a.name}: annotation ${k} compares $value to a number`);
    }
  }
  return out;
}

describe('the mixin generator', () => {
  test('the shipped rule files and the PrometheusRule are what rules/config/mixin.yml renders (npm run rules:check)', () => {
    for (const [rel, text] of renderAll(ROOT, CONFIG)) {
      expect({ file: rel, inSync: fs.readFileSync(path.join(ROOT, rel), 'utf8') === text }).toEqual({ file: rel, inSync: true });
    }
    expect(fs.readFileSync(path.join(ROOT, MANIFEST_PATH), 'utf8')).toBe(renderPrometheusRule(ROOT, CONFIG));
  });

  test('templates are written without the spaces inside {{ }} (Prometheus parses each per alert and evaluation), trim markers kept', () => {
    expect(compact('{{ if eq $value 1.0 }}a {{- with $x }} b {{ . -}} {{ end }}')).toBe('{{if eq $value 1.0}}a {{- with $x}} b {{. -}} {{end}}');
    const templates = alerts.flatMap((a) => [...Object.values(a.labels), ...Object.values(a.annotations)]);
    expect(templates.filter((t) => t.includes('{{')).length).toBeGreaterThanOrEqual(17);
    expect(templates.filter((t) => t !== compact(t))).toEqual([]);
  });

  test('--check exits 0 when in sync and 1 naming the file when a generated file drifted', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hse-gen-'));
    try {
      fs.writeFileSync(path.join(root, 'package.json'), '{}');
      fs.mkdirSync(path.join(root, path.dirname(MIXIN_CONFIG_PATH)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, MIXIN_CONFIG_PATH), path.join(root, MIXIN_CONFIG_PATH));
      // docs/alerts.md is rendered too: its rules reference, between the markers, from the rule model.
      fs.mkdirSync(path.join(root, 'docs'));
      fs.copyFileSync(path.join(ROOT, 'docs', 'alerts.md'), path.join(root, 'docs', 'alerts.md'));
      const quiet = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
      const quietErr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
      try {
        expect(genMain(['--check'], root)).toBe(1); // nothing rendered yet
        expect(genMain([], root)).toBe(0);
        expect(genMain(['--check'], root)).toBe(0);
        const alertsFile = path.join(root, 'rules', 'alerts.yml');
        fs.writeFileSync(alertsFile, fs.readFileSync(alertsFile, 'utf8').replace('for: 5m', 'for: 1m'));
        expect(genMain(['--check'], root)).toBe(1);
        expect(quietErr.mock.calls.map((c) => String(c[0])).join('')).toContain('rules/alerts.yml');
        // A hand edit of the generated reference in docs/alerts.md is drift as well.
        expect(genMain([], root)).toBe(0);
        const docsFile = path.join(root, 'docs', 'alerts.md');
        fs.writeFileSync(docsFile, fs.readFileSync(docsFile, 'utf8').replace('| hypha-serve-registration | critical | 0s |', '| hypha-serve-registration | critical | 10m |'));
        quietErr.mockClear();
        expect(genMain(['--check'], root)).toBe(1);
        expect(quietErr.mock.calls.map((c) => String(c[0])).join('')).toContain('docs/alerts.md');
        expect(genMain(['--bogus'], root)).toBe(2);
      } finally {
        quiet.mockRestore();
        quietErr.mockRestore();
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  test('a user config (only the keys it changes) renders loadable rules with its selector, runbook URLs, durations and severities', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hse-mixin-'));
    try {
      const user = path.join(dir, 'my-mixin.yml');
      fs.writeFileSync(
        user,
        stringify({
          exporter_selector: 'job="hse",namespace="monitoring"',
          runbook_url_template: 'https://wiki.example.org/runbooks/%s',
          bridge: '10m',
          // The pages' waits are the exporter's (contract v0.4): a page's rule has for: and the bridge only.
          alerts: { HyphaServeAppRunningNotRegistered: { for: '1m', keep_firing_for: '2m' }, HyphaServiceProbeFailing: { severity: 'critical' } },
        }),
      );
      const out = path.join(dir, 'out');
      const quiet = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
      try {
        expect(genMain([`--config=${user}`, `--out-dir=${out}`], ROOT)).toBe(0);
      } finally {
        quiet.mockRestore();
      }
      expect(fs.readdirSync(out).sort()).toEqual(['alerts.yml', 'prometheusrule.yaml', 'recording.yml', 'vmalert']);
      const check = run(VERSIONS[0].promtool, ['check', 'rules', path.join(out, 'recording.yml'), path.join(out, 'alerts.yml')]);
      expect(check.code).toBe(0);
      const doc = parse(fs.readFileSync(path.join(out, 'alerts.yml'), 'utf8')) as { groups: { rules: Record<string, unknown>[] }[] };
      const byName = new Map(doc.groups.flatMap((g) => g.rules).map((r) => [r.alert as string, r]));
      const reg = byName.get('HyphaServeAppRunningNotRegistered') as Record<string, unknown> & { annotations: Record<string, string> };
      expect(reg.for).toBe('1m');
      const stale = byName.get('HyphaServiceCachedProxyStale') as Record<string, unknown>;
      // Incident 2 likewise: the exporter's decision over the replicas, bridged for the user's 10m, no recorded level.
      expect(String(stale.expr)).toContain('hypha_serve_service_cached_stale_page{job="hse",namespace="monitoring"}[10m]');
      expect(String(stale.expr)).not.toMatch(/[a-z_]+:hypha_serve_[a-z0-9_]+:[a-z0-9_]+/);
      expect(reg.keep_firing_for).toBe('2m');
      // Incident 1: the bridge in the alert itself (and in its annotations' one query each), no recorded level.
      expect(String(reg.expr)).toContain('[10m]');
      expect(String(reg.expr)).not.toMatch(/[a-z_]+:hypha_serve_[a-z0-9_]+:[a-z0-9_]+/);
      expect(reg.annotations.cause).toContain('[10m]');
      expect(reg.annotations.runbook_url).toBe('https://wiki.example.org/runbooks/HyphaServeAppRunningNotRegistered');
      expect(reg.annotations.description).toContain('no cause reported in the last 10 minutes');
      expect((byName.get('HyphaServiceProbeFailing') as { labels: Record<string, string> }).labels.severity).toBe('critical');
      expect(String((byName.get('HyphaServeExporterDown') as Record<string, unknown>).expr)).toContain('up{job="hse",namespace="monitoring"}');
      // Rendered for a known job and namespace, the page of a missing exporter (absent(), no series to take labels
      // from) carries both, from the selector's equality matchers: a namespaced AlertmanagerConfig routes it too.
      const absentTest = {
        rule_files: ['recording.yml', 'alerts.yml'],
        evaluation_interval: '1m',
        tests: [{
          interval: '1m',
          input_series: [{ series: 'up{job="node",namespace="monitoring",instance="host:9100"}', values: '1x10' }],
          alert_rule_test: [{
            eval_time: '6m',
            alertname: 'HyphaServeExporterDown',
            exp_alerts: [{
              exp_labels: { severity: 'critical', job: 'hse', namespace: 'monitoring' },
              exp_annotations: {
                summary: 'The hypha-serve-exporter target is down or missing from Prometheus.',
                description: "Prometheus has had no target matching {job='hse',namespace='monitoring'} in namespace monitoring for 5 minutes. Every hypha-serve alert that needs the exporter is blind until it is back.",
                runbook_url: 'https://wiki.example.org/runbooks/HyphaServeExporterDown',
              },
            }],
          }],
        }],
      };
      fs.writeFileSync(path.join(out, 'absent.test.yml'), stringify(absentTest));
      const absent = run(VERSIONS[0].promtool, ['test', 'rules', path.join(out, 'absent.test.yml')]);
      if (absent.code !== 0) throw new Error(absent.out);
      // Every exporter metric selector carries the user's selector, in both files.
      for (const f of ['recording.yml', 'alerts.yml']) {
        const d = parse(fs.readFileSync(path.join(out, f), 'utf8')) as { groups: { rules: { expr: string }[] }[] };
        for (const r of d.groups.flatMap((g) => g.rules)) {
          for (const m of r.expr.matchAll(/(?<![A-Za-z0-9_:])hypha_serve_[a-z0-9_]+(?![A-Za-z0-9_:])/g)) {
            const after = r.expr.slice((m.index ?? 0) + m[0].length, (m.index ?? 0) + m[0].length + 33);
            expect({ metric: m[0], after }).toEqual({ metric: m[0], after: '{job="hse",namespace="monitoring"' });
          }
        }
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a bad user config is rejected with the key that is wrong', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hse-mixin-bad-'));
    try {
      const cases: [Record<string, unknown>, string][] = [
        [{ bridge: '5 minutes' }, 'bridge'],
        [{ alerts: { HyphaServeNoSuchAlert: { for: '5m' } } }, 'HyphaServeNoSuchAlert'],
        [{ alerts: { HyphaServeSourceDown: { severity: 'page' } } }, 'alerts.HyphaServeSourceDown.severity'],
        [{ runbook_url_template: 'https://wiki.example.org/runbooks' }, 'runbook_url_template'],
        [{ exporter_selctor: 'job="x"' }, 'exporter_selctor'],
        // Contract v0.4: the exporter decides incident 1's page; its waits moved to the exporter config.
        [{ cause_waits: { HyphaServeAppRunningNotRegistered: { uncertain: '9m' } } }, 'hypha_registration.page_waits'],
        [{ cause_waits: { HyphaServiceCachedProxyStale: { uncertain: '9m' } } }, 'watched_services[].page_waits'],
        [{ probe_window: '5m' }, 'watched_services[].probe_window'],
      ];
      for (const [over, key] of cases) {
        const f = path.join(dir, 'bad.yml');
        fs.writeFileSync(f, stringify(over));
        expect(() => loadMixinConfig(ROOT, f)).toThrow(key);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('scaleDurations shortens every duration for the e2e replays, and the result still loads', () => {
    const c = scaleDurations(CONFIG, 10, '5s');
    expect(c.bridge).toBe('30s');
    // A for: of 0s (the pages the exporter decides with their waits) stays 0s.
    expect(c.alerts.HyphaServeAppRunningNotRegistered.for).toBe('0s');
    expect(c.alerts.HyphaServiceCachedProxyStale.for).toBe('0s');
    expect(c.alerts.HyphaServeSourceStale.for).toBe('12s');
    expect(scaleDurations(CONFIG, 1000, '5s').alerts.HyphaServeSourceStale.for).toBe('5s');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hse-scaled-'));
    try {
      const pack = renderPack(c);
      fs.writeFileSync(path.join(dir, 'recording.yml'), pack.recording);
      fs.writeFileSync(path.join(dir, 'alerts.yml'), pack.alerts);
      expect(pack.alerts).toContain('[30s]');
      expect(run(VERSIONS[0].promtool, ['check', 'rules', path.join(dir, 'recording.yml'), path.join(dir, 'alerts.yml')]).code).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('withSelector adds the selector to exporter metrics only', () => {
    const sel = 'job=~"hse.*"';
    expect(withSelector('hypha_serve_proxy_ready', sel)).toBe('hypha_serve_proxy_ready{job=~"hse.*"}');
    expect(withSelector('hypha_serve_source_up{source="ray"} == 1', sel)).toBe('hypha_serve_source_up{job=~"hse.*", source="ray"} == 1');
    expect(withSelector('max_over_time(hypha_serve_x{}[5m])', sel)).toBe('max_over_time(hypha_serve_x{job=~"hse.*"}[5m])');
    expect(withSelector('ray_cluster:hypha_serve_proxy_ready:sum > 0', sel)).toBe('ray_cluster:hypha_serve_proxy_ready:sum > 0');
    expect(humanDuration('1h30m')).toBe('1 hour 30 minutes');
  });
});

describe.each(VERSIONS.map((v) => [v.label, v] as const))('promtool %s', (_label, v) => {
  test('check rules accepts the rule files', () => {
    const r = run(v.promtool, ['check', 'rules', ...RULE_FILES]);
    expect(r.out).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  test('test rules passes for every test file', () => {
    const files = testFiles();
    expect(files.length).toBeGreaterThanOrEqual(5);
    const r = run(v.promtool, ['test', 'rules', ...files]);
    if (r.code !== 0) throw new Error(r.out);
    expect(r.out.match(/SUCCESS/g)?.length).toBe(files.length);
  });

  test('the PrometheusRule groups pass check rules and the same unit tests', () => {
    const doc = parse(fs.readFileSync(path.join(ROOT, MANIFEST_PATH), 'utf8')) as { kind: string; apiVersion: string; spec: { groups: unknown[] } };
    expect(doc.kind).toBe('PrometheusRule');
    expect(doc.apiVersion).toBe('monitoring.coreos.com/v1');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hse-promrule-'));
    try {
      fs.writeFileSync(path.join(dir, 'rules.yml'), stringify({ groups: doc.spec.groups }, { lineWidth: 0 }));
      fs.mkdirSync(path.join(dir, 'tests'));
      for (const f of testFiles()) {
        const t = parse(fs.readFileSync(f, 'utf8')) as Record<string, unknown>;
        t.rule_files = ['../rules.yml'];
        fs.writeFileSync(path.join(dir, 'tests', path.basename(f)), stringify(t, { lineWidth: 0 }));
      }
      expect(run(v.promtool, ['check', 'rules', path.join(dir, 'rules.yml')]).code).toBe(0);
      const t = run(v.promtool, ['test', 'rules', ...testFiles(path.join(dir, 'tests'))]);
      if (t.code !== 0) throw new Error(t.out);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('rule files', () => {
  test('rules/ holds recording.yml and alerts.yml (generated) and config/mixin.yml', () => {
    expect(fs.readdirSync(path.join(ROOT, 'rules')).filter((f) => f.endsWith('.yml')).sort()).toEqual(['alerts.yml', 'recording.yml']);
    expect(fs.existsSync(path.join(ROOT, MIXIN_CONFIG_PATH))).toBe(true);
    expect(alerts.map((a) => a.name).sort()).toEqual([...ALERT_NAMES].sort());
    expect(records.length).toBeGreaterThanOrEqual(9);
  });

  test('rule groups use nothing newer than Prometheus 2.42 (no group labels, no query_offset)', () => {
    for (const f of RULE_FILES) {
      const doc = parse(fs.readFileSync(path.join(ROOT, f), 'utf8')) as { groups: Record<string, unknown>[] };
      for (const g of doc.groups) {
        for (const key of Object.keys(g)) expect(['name', 'interval', 'limit', 'rules']).toContain(key);
      }
    }
  });

  test('alert names are unique CamelCase with the Hypha prefix', () => {
    const names = alerts.map((a) => a.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^Hypha(Serve|Service)[A-Z][A-Za-z]+$/);
  });

  test.each(alerts.map((a) => [a.name, a] as const))('%s has the severity and for: of the mixin config, summary, description and runbook_url', (name, a) => {
    const cfg = CONFIG.alerts[name as keyof typeof CONFIG.alerts];
    expect(a.labels.severity).toBe(cfg.severity);
    expect(a.for).toBe(cfg.for);
    expect(a.annotations.summary).toMatch(/^[A-Z].*\.$/);
    expect(a.annotations.description?.length ?? 0).toBeGreaterThan(40);
    expect(a.annotations.runbook_url).toBe(CONFIG.runbook_url_template.replace('%s', a.name));
  });

  test('every runbook_url is the page of the alert, docs/runbooks/<AlertName>.md, and every alert page is for an alert', () => {
    for (const a of alerts) {
      const page = a.annotations.runbook_url.replace(/^https:\/\/github\.com\/aicell-lab\/hypha-serve-exporter\/blob\/main\//, '');
      expect({ alert: a.name, page }).toEqual({ alert: a.name, page: `docs/runbooks/${a.name}.md` });
      expect({ alert: a.name, found: fs.existsSync(path.join(ROOT, page)) }).toEqual({ alert: a.name, found: true });
    }
    const pages = fs.readdirSync(path.join(ROOT, 'docs', 'runbooks')).filter((f) => /^Hypha\w+\.md$/.test(f)).map((f) => f.replace(/\.md$/, ''));
    expect(pages.sort()).toEqual(alerts.map((a) => a.name).sort());
  });

  test('docs/alerts.md lists every alert with its severity, for and runbook link, and every recording rule', () => {
    const md = fs.readFileSync(path.join(ROOT, 'docs', 'alerts.md'), 'utf8');
    for (const a of alerts) {
      // The generated reference: | [Name](runbooks/Name.md) | group | severity | for | reads | identity | what it says |
      const row = md.split('\n').find((l) => l.startsWith(`| [${a.name}](runbooks/${a.name}.md) |`));
      expect({ alert: a.name, row: row !== undefined }).toEqual({ alert: a.name, row: true });
      const cells = (row ?? '').split('|').map((c) => c.trim());
      expect(cells[2]).toBe(a.group);
      expect(cells[3]).toBe(a.labels.severity);
      expect(cells[4]).toBe(a.for ?? '');
    }
    for (const r of new Set(records.map((x) => x.name))) expect(md).toContain(`\`${r}\``);
  });

  test('recording rules are named level:metric:operations and every one an alert reads is defined', () => {
    const recorded = new Set(records.map((r) => r.name));
    for (const r of records) expect(r.name).toMatch(/^[a-z_]+:hypha_serve_[a-z0-9_]+:[a-z0-9_]+$/);
    for (const a of alerts) {
      for (const m of a.expr.matchAll(/[a-z_]+:hypha_serve_[a-z0-9_]+:[a-z0-9_]+/g)) expect(recorded).toContain(m[0]);
    }
  });

  test('every recorded series an alert group reads is recorded before it in the same group (no group waits on another one\'s phase)', () => {
    const dashboards = new Set(records.filter((r) => r.file.endsWith('recording.yml')).map((r) => r.name));
    expect(unorderedReads(rules.filter((r) => r.file.endsWith('alerts.yml')), dashboards)).toEqual([]);
    // The check can fail: an alert reading a series another group records, or one recorded after it.
    const rec = (group: string, name: string, expr: string) => ({ ...rules[0], group, name, expr, kind: 'record' as const, annotations: {} });
    const alert = (group: string, expr: string, annotations: Record<string, string> = {}) => ({ ...rules[0], group, name: 'A', expr, kind: 'alert' as const, annotations });
    expect(unorderedReads([rec('a', 'x:hypha_serve_y:bool', 'hypha_serve_y'), alert('b', 'x:hypha_serve_y:bool == 1')])).toEqual(['b/A reads x:hypha_serve_y:bool']);
    expect(unorderedReads([alert('a', 'x:hypha_serve_y:bool == 1'), rec('a', 'x:hypha_serve_y:bool', 'hypha_serve_y')])).toEqual(['a/A reads x:hypha_serve_y:bool']);
    // A dashboards' record: printed in the text, yes; paged on, no.
    const p90 = 'service_via_quantile:hypha_serve_service_call_duration_seconds:histogram_quantile_rate10m';
    expect(dashboards).toContain(p90);
    expect(unorderedReads([alert('b', 'hypha_serve_y == 1', { description: `{{with printf "max(${p90})" | query}}{{.}}{{end}}` })], dashboards)).toEqual([]);
    expect(unorderedReads([alert('b', `${p90} > 1`)], dashboards)).toEqual([`b/A reads ${p90}`]);
    // The worker's view of incident 1 is its own group, so at 1,000 paging apps it does not hold up the registration page.
    expect(alerts.find((a) => a.name === 'HyphaServeWorkerAppRunningNotRegistered')?.group).toBe('hypha-serve-worker');
    expect(alerts.find((a) => a.name === 'HyphaServeAppRunningNotRegistered')?.group).toBe('hypha-serve-registration');
  });

  test('the topology labels (default cluster, namespace) are in every by/on list, in no ignoring/without list, and in no matcher or text as the Ray cluster (v0.1)', () => {
    const topo = CONFIG.topology_labels;
    expect(topo).toEqual(['cluster', 'namespace']);
    for (const r of rules) {
      const text = [r.expr, ...Object.values(r.annotations)].join('\n');
      // v0.1 named the Ray cluster `cluster`: no rule matches on it or prints it as such (the topology label is
      // selected with the alert's own value: cluster=%q $labels.cluster, followed by the next identity label).
      expect({ rule: r.name, v01: /[{,]\s*cluster\s*[=!~]|\$labels\.cluster\b(?!\s+\$labels\.(namespace|job)\b)/.test(text.replace(/cluster=%(\[\d+\])?q,/g, '')) }).toEqual({ rule: r.name, v01: false });
      expect({ rule: r.name, global: /(min|max) by \((cluster, )?(namespace, )?job, instance\) \(hypha_serve_source_up/.test(r.expr) }).toEqual({ rule: r.name, global: false });
    }
    expect(rules.flatMap((r) => [r.expr, ...Object.values(r.annotations)].flatMap((t, i) => topologyViolations(r.name, t, topo, i > 0)))).toEqual([]);
    // It can fail: a by/on without namespace (two namespaces with the same job would merge), an ignoring or
    // without that drops it.
    expect(topologyViolations('A', 'max by (cluster, job, app) (x) or on (cluster, namespace, job) y', topo)).toEqual(['A: by (cluster, job, app) lacks namespace']);
    expect(topologyViolations('A', 'x - ignoring (namespace, state) y', topo)).toEqual(['A: ignoring (namespace, state) drops namespace']);
    expect(topologyViolations('A', 'sum without (namespace) (x)', topo)).toEqual(['A: without (namespace) drops namespace']);
    expect(topologyViolations('A', 'max by (reason) (x) or on () y - ignoring (state) z', topo)).toEqual([]);
    expect(topologyViolations('A', 'max by (deployment, service) (x * on (cluster, job, app) y)', topo, true)).toEqual(['A: on (cluster, job, app) lacks namespace']);
  });

  test('fact alerts aggregate instance away (an HA pair pages once, whatever its replica labels); per-process alerts keep it', () => {
    const topo = CONFIG.topology_labels.join(', ');
    for (const a of alerts) {
      const expanded = expandedExpr(a);
      // `max by (<topology>, job, <identity>)` without instance: every per-replica label (instance, a replica label) goes.
      const aggregates = new RegExp(`max by \\(${escapeRe(topo)}, job, (?!instance)`).test(expanded);
      expect({ alert: a.name, aggregates }).toEqual({ alert: a.name, aggregates: !PER_INSTANCE.includes(a.name) });
      if (!PER_INSTANCE.includes(a.name)) expect({ alert: a.name, withoutInstance: /without \([^)]*\binstance\b/.test(a.expr) }).toEqual({ alert: a.name, withoutInstance: false });
    }
  });

  test('each alert is a comparison of at most 3 lines; no rule reads ALERTS', () => {
    for (const a of alerts) {
      expect({ alert: a.name, lines: a.expr.trim().split('\n').length <= 3 }).toEqual({ alert: a.name, lines: true });
    }
    for (const r of rules) expect({ rule: r.name, alerts: /\bALERTS(_FOR_STATE)?\b/.test(r.expr) }).toEqual({ rule: r.name, alerts: false });
    const queries = alerts.map((a) => ({ alert: a.name, n: Object.values(a.annotations).join(' ').split('| query').length - 1 }));
    // One query per annotation at most (issue 25): the description and one or two side annotations.
    for (const a of alerts) {
      for (const [k, v] of Object.entries(a.annotations)) {
        const n = v.split('| query').length - 1;
        expect({ alert: a.name, annotation: k, atMostOne: n <= 1 }).toEqual({ alert: a.name, annotation: k, atMostOne: true });
      }
    }
    expect(queries.length).toBe(alerts.length);
  });

  // Contract v0.4: the exporter decides incident 1's page and the warning before it; the group adds only the max over
  // the exporter replicas and the gap bridge, so vmalert (which reads a recorded series an evaluation after it is
  // written) pages at the same evaluation as Prometheus.
  test('every alert of the registration group reads no recorded level, bridges the exporter\'s decision, and its expr is at most 2 lines', () => {
    const group = rules.filter((r) => r.group === 'hypha-serve-registration');
    expect(group.map((r) => r.name).sort()).toEqual(['HyphaServeAppRunningNotRegistered', 'HyphaServeAppWillDeregisterAtZero']);
    for (const a of group) {
      expect(a.kind).toBe('alert');
      const recorded = [a.expr, ...Object.values(a.annotations)].join('\n').match(/[a-z_]+:hypha_serve_[a-z0-9_]+:[a-z0-9_]+/g) ?? [];
      expect({ alert: a.name, recorded }).toEqual({ alert: a.name, recorded: [] });
      expect(a.expr.trim().split('\n').length).toBeLessThanOrEqual(2);
      const decision = a.name === 'HyphaServeAppRunningNotRegistered' ? 'hypha_serve_app_running_not_registered_page' : 'hypha_serve_app_will_deregister_at_zero';
      expect(a.expr).toContain(`last_over_time(${decision}{`);
      expect(a.expr).toMatch(new RegExp(`max by \\(${escapeRe(CONFIG.topology_labels.join(', '))}, job, ray_cluster, app, hypha\\) \\(${decision}\\{`));
    }
    // No value encodings: the page's value is the decision (1), its text reads the cause_info series.
    const page = group.find((a) => a.name === 'HyphaServeAppRunningNotRegistered');
    for (const k of ['cause', 'description']) expect(page?.annotations[k]).toContain('hypha_serve_app_not_registered_cause_info{');
    expect(Object.values(page?.annotations ?? {}).join(' ')).not.toContain('$value');
  });

  test('issue 37: every alert expr is at most 2 lines, reads at most one recorded level above the exporter\'s series, and no value encodes causes', () => {
    const shipped = rules.filter((r) => r.file.endsWith('alerts.yml') || r.kind === 'record');
    expect(shipped.filter((r) => r.kind === 'alert').length).toBe(ALERT_NAMES.length);
    expect(issue37Violations(shipped)).toEqual([]);
    // Alerts that read a recorded level do so through one that reads the exporter (or up) only.
    const oneLevel = alerts.filter((a) => (a.expr.match(RECORDED_NAME) ?? []).length > 0).map((a) => a.name);
    expect(oneLevel.length).toBeGreaterThanOrEqual(5);
    // It can fail, on each shape the pack had before contract v0.4 (with the same rule objects loadRules gives).
    const rec = (name: string, expr: string): RuleDef => ({ ...rules[0], kind: 'record', name, expr, labels: {}, annotations: {} });
    const alert = (name: string, expr: string, annotations: Record<string, string> = {}): RuleDef => ({ ...rules[0], kind: 'alert', name, expr, labels: {}, annotations });
    // The services page of v0.3: service_holder:…:page over :bridged over :max (three levels).
    const max = rec('service_holder:hypha_serve_service_cached_stale:max', 'max by (cluster, job, service, holder) (hypha_serve_service_cached_stale)');
    const bridged = rec('service_holder:hypha_serve_service_cached_stale:bridged', 'service_holder:hypha_serve_service_cached_stale:max\nor last_over_time(service_holder:hypha_serve_service_cached_stale:max[5m])');
    expect(issue37Violations([max, bridged, alert('A', 'service_holder:hypha_serve_service_cached_stale:bridged == 1')])).toEqual([
      'A: reads service_holder:hypha_serve_service_cached_stale:bridged, which reads service_holder:hypha_serve_service_cached_stale:max (two recorded levels)',
    ]);
    // A recorded series read only by an annotation counts the same way.
    expect(issue37Violations([max, bridged, alert('A', 'hypha_serve_x == 1', { description: '{{with printf "service_holder:hypha_serve_service_cached_stale:bridged{service=%q}" $labels.service | query}}{{end}}' })]))
      .toEqual(['A: reads service_holder:hypha_serve_service_cached_stale:bridged, which reads service_holder:hypha_serve_service_cached_stale:max (two recorded levels)']);
    expect(issue37Violations([alert('A', '(max by (job) (hypha_serve_x)\n  or max by (job) (last_over_time(hypha_serve_x[5m])))\n  == 1')])).toEqual(['A: expr of 3 lines']);
    expect(issue37Violations([alert('A', 'x:hypha_serve_y:bool == 1')])).toEqual(['A: reads x:hypha_serve_y:bool, which no rule records']);
    // The cause_digits page (v0.3): a digit per registration state in the value, decoded by the template.
    const digits = rec('ray_cluster_app:hypha_serve_app_registration_state:cause_digits', 'floor((hypha_serve_app_registration_state % 100 >= 10) / 10)');
    expect(issue37Violations([digits, alert('A', 'ray_cluster_app:hypha_serve_app_registration_state:cause_digits > 0', { cause: '{{if eq $value 100.0}}missing_scaled_to_zero{{end}}' })])).toEqual([
      'record ray_cluster_app:hypha_serve_app_registration_state:cause_digits: a digit encoding',
      'ray_cluster_app:hypha_serve_app_registration_state:cause_digits: modulo by a power of ten',
      'A: annotation cause compares $value to a number',
    ]);
    // What the pack's templates do with $value is not that: print it, humanize it.
    expect(VALUE_COMPARED.test('{{printf "%.0f" $value}} times, {{$value | humanizeDuration}} old')).toBe(false);
    expect(VALUE_COMPARED.test('{{else if eq $value 10.0}}')).toBe(true);
  });

  test('every :bool fact an alert pages on is bridged over gaps with last_over_time of the recorded series', () => {
    for (const a of alerts) {
      if (PER_INSTANCE.includes(a.name)) continue;
      for (const m of a.expr.matchAll(/[a-z_]+:hypha_serve_[a-z0-9_]+:bridged/g)) {
        const rec = records.find((r) => r.name === m[0]);
        expect(rec).toBeDefined();
        expect(rec?.expr).toMatch(new RegExp(`last_over_time\\([^\\n]*\\[${CONFIG.bridge}\\]\\)`));
      }
    }
  });
});

  test('no label value a recording rule writes holds "," or "=" (vmalert would misplace its staleness marker)', () => {
    // vmalert v1.151.0 keys a recorded series as name=value,... and splits that key to write the staleness
    // marker when the series leaves the result (app/vmalert/rule/recording.go, stringToLabels): a value with
    // "," or "=" sends the marker to another series, and the old series lingers (an extra cause on a page).
    // A recording rule writes a label value with label_replace (none left since contract v0.4) or in its labels:
    // (the dashboards' quantile records).
    const replaced = rules.flatMap((r) => [...r.expr.matchAll(/, "([a-zA-Z_]+)", "((?:[^"\\]|\\.)*)", "[a-zA-Z_]*", "/g)].map((m) => ({ rule: r.name, label: m[1], value: m[2] })));
    const fixed = records.flatMap((r) => Object.entries(r.labels).map(([label, value]) => ({ rule: r.name, label, value })));
    const written = [...replaced, ...fixed];
    expect(written.map((w) => `${w.label}=${w.value}`).sort()).toEqual(['quantile=0.5', 'quantile=0.9', 'quantile=0.99']);
    expect(written.filter((w) => /[,=]/.test(w.value))).toEqual([]);
    // The cause sentences are the exporter's now (the reason label of hypha_serve_app_not_registered_cause_info and
    // hypha_serve_service_cached_stale_cause_info, from src/snapshot/registration.ts CAUSE_TEXT and
    // src/snapshot/services.ts STALE_CAUSE_TEXT); the pages print them through annotation queries. No recording
    // rule carries them into a recorded series' key (no record reads a cause_info series or keeps `reason`), and
    // they hold neither character, should one ever do.
    expect(records.filter((r) => /_cause_info\b|\breason\b/.test(r.expr)).map((r) => r.name)).toEqual([]);
    const causeTexts = [...Object.values(CAUSE_TEXT), ...Object.values(STALE_CAUSE_TEXT)];
    expect(causeTexts.length).toBeGreaterThanOrEqual(8);
    expect(causeTexts.filter((t) => /[,=]/.test(t))).toEqual([]);
    // They are what the pages print: the annotations read the cause_info series that carry them.
    const annotations = alerts.flatMap((a) => Object.values(a.annotations)).join('\n');
    for (const n of ['hypha_serve_app_not_registered_cause_info{', 'hypha_serve_service_cached_stale_cause_info{']) expect(annotations).toContain(n);
  });

describe('promtool unit-test coverage', () => {
  const cases = alertCases();

  test.each(alerts.map((a) => [a.name] as const))('%s has a positive and a negative case', (name) => {
    const mine = cases.filter((c) => c.alertname === name);
    expect(mine.some((c) => c.positive)).toBe(true);
    expect(mine.some((c) => !c.positive)).toBe(true);
  });

  test('every alertname in the tests is a real alert', () => {
    const names = new Set(alerts.map((a) => a.name));
    for (const c of cases) expect(names).toContain(c.alertname);
  });

  // The benign look-alikes, each a negative case for the alert it could fool.
  const LOOK_ALIKES: [string, string][] = [
    // Contract v0.4: the look-alikes of incident 1 (idle at zero and registered, a rolling update, a flap shorter than
    // the wait) are the exporter's to tell apart (test/unit/registration-*.test.ts); the rules' are the decision 0
    // with a cause reported, a gap, and an HA pair.
    ['HyphaServeAppRunningNotRegistered', 'the cause alone does not page - an unproven cause (gate unknown) fires when the exporter decides 1'],
    ['HyphaServeAppRunningNotRegistered', 'never starts from a gap - the decision absent for 20 minutes (Hypha down) does not page'],
    ['HyphaServeAppRunningNotRegistered', 'never starts from a gap - a gap right after the fix does not page again'],
    ['HyphaServeAppRunningNotRegistered', 'two exporter replicas reporting the same decision page once, through a restart of either; a replica that left does not outvote a live 0'],
    ['HyphaServeAppWillDeregisterAtZero', 'the exporter decides 0 (a fixed or unknown gate, min_replicas 1, not registered) - no warning, whatever the deployments'],
    // Its look-alikes (a worker on another cluster, a worker that denies the registration, a worker not answering) are
    // the exporter's to tell apart (test/unit/bioengine-gate.test.ts, registration-workers.test.ts).
    ['HyphaServeWorkerAppRunningNotRegistered', 'decision 0 with a worker saying RUNNING (the wait not over, or the app registered) never pages'],
    ['HyphaServeWorkerAppRunningNotRegistered', 'a gap longer than the bridge ends it, and a gap never starts it'],
    ['HyphaServiceCachedProxyStale', 'several providers - stale only once the cached id itself is gone'],
    ['HyphaServiceCachedProxyStale', 'restart with a fixed server id - same client id, probes recover - no page'],
    ['HyphaServiceCachedProxyStale', 'Hypha down - every probe fails - no service alert (HyphaServeSourceDown covers it)'],
    ['HyphaServiceCachedProbeFailing', 'artifact manager gone while Hypha is up - both probe paths fail - warning'],
    ['HyphaServiceCachedProbeFailing', 'cached-path probe failing for less than 3 minutes does not page'],
    ['HyphaServiceProbeFailing', 'defect 10 - fresh resolution picking a dead provider at random does not keep the cached-probe page from firing'],
    ['HyphaServiceClientIdChurn', 'client-id churn above the threshold warns; below it does not'],
    ['HyphaServiceClientIdChurn', 'incident 2 - Hypha restarts under a new server id, the cached proxy goes stale and pages'],
    ['HyphaServeAppUnhealthy', 'rolling update (DEPLOYING for half an hour) is not an unhealthy app'],
    ['HyphaServeDeploymentReplicasMismatch', 'idle at zero (target 0, scaled to zero) never counts as a mismatch'],
    ['HyphaServeDeploymentReplicasMismatch', 'steady autoscaler ramp-up (replicas trailing a rising target) is not a stuck deployment'],
    ['HyphaServeNoProxyCanWakeApps', 'worker proxies 503 at zero replicas while the head proxy is ready - by design, no page'],
    ['HyphaServeNoProxyCanWakeApps', 'Ray down - proxy and deployment series gone - no Serve alert'],
    ['HyphaServeNoProxyCanWakeApps', 'proxy probe disabled (no proxy_ready series) - readiness unknown - no proxy alert'],
    ['HyphaServeAllProxiesUnready', 'defect 6 - no proxy_head == 1 series (head proxy not listed), worker proxies unready, apps at zero - pages'],
    ['HyphaServeSourceDown', 'source down for a few minutes pages; a blip shorter than that does not'],
    ['HyphaServeSourceDown', 'two exporter replicas - one cannot reach Ray, the other can - no page; both cannot - one page'],
    ['HyphaServeSourceStale', 'stuck sampler - sample age growing while source_up stays 1 - pages per exporter; normal age or a down source does not'],
    ['HyphaServeExporterDown', 'exporter up, with a short scrape failure - no page'],
  ];
  test.each(LOOK_ALIKES)('%s: negative case "%s"', (alertname, testName) => {
    expect(cases.some((c) => c.alertname === alertname && c.test === testName && !c.positive)).toBe(true);
  });
});

describe('metrics the rules read', () => {
  test('metricNamesUsedByRules lists exporter metrics only, histograms by their series', () => {
    const names = metricNamesUsedByRules();
    for (const n of names) expect(n).toMatch(/^hypha_serve_[a-z0-9_]+$/);
    for (const n of [
      'hypha_serve_app_expected_service_info',
      'hypha_serve_app_status',
      'hypha_serve_source_up',
      'hypha_serve_source_interval_seconds',
      'hypha_serve_worker_app_status',
      'hypha_serve_service_holder_info',
      'hypha_serve_service_cached_stale_since_timestamp_seconds',
      'hypha_serve_service_call_duration_seconds_bucket',
      'hypha_serve_cluster_no_proxy_can_wake_apps',
    ]) expect(names).toContain(n);
    // Read by no rule since the dashboards' proxy records went (the exporter decides the proxy pages).
    expect(names).not.toContain('hypha_serve_proxy_ready');
    // Only ever seen inside a recorded name (ray_cluster_app:…:bool), so it must not be listed.
    expect(names).not.toContain('hypha_serve_app_running_not_registered');
    // Contract v0.4: the exporter's decisions the pages read, and the causes they print (annotation queries).
    for (const n of [
      'hypha_serve_app_running_not_registered_page', 'hypha_serve_app_not_registered_cause_info', 'hypha_serve_app_will_deregister_at_zero',
      'hypha_serve_worker_app_running_not_registered_page',
      'hypha_serve_service_cached_stale_page', 'hypha_serve_service_cached_stale_cause_info', 'hypha_serve_service_cached_probe_failing',
      'hypha_serve_service_probe_failing', 'hypha_serve_service_witness_self_healing',
      'hypha_serve_cluster_no_proxy_can_wake_apps', 'hypha_serve_cluster_all_proxies_unready',
    ]) expect(names).toContain(n);
    // What the removed recording rules judged stale and the probes from: the exporter judges them now.
    for (const n of ['hypha_serve_service_cached_info', 'hypha_serve_service_provider_info', 'hypha_serve_service_resolved_info',
      'hypha_serve_service_cached_stale', 'hypha_serve_service_cached_server_gone', 'hypha_serve_service_probe_success']) expect(names).not.toContain(n);
    // Every name is a family the exporter declares (a histogram by its _bucket/_count/_sum series).
    const declared = new Set<string>(FAMILIES.map((f) => f.name));
    expect(names.filter((n) => !declared.has(n) && !declared.has(n.replace(/_(bucket|count|sum)$/, '')))).toEqual([]);
  });

  test('metricNamesIn skips recorded series and finds names inside template strings', () => {
    expect(metricNamesIn('ray_cluster:hypha_serve_proxy_ready:sum == 0 and hypha_serve_proxy_head')).toEqual(['hypha_serve_proxy_head']);
    expect(metricNamesIn('{{ with printf "hypha_serve_app_registered{app=%q}" $labels.app | query }}')).toEqual(['hypha_serve_app_registered']);
  });
});

describe('examples/prometheus.yml', () => {
  test.each(VERSIONS.map((v) => [v.label, v] as const))('promtool %s check config accepts it and it loads both rule files', (_l, v) => {
    const r = run(v.promtool, ['check', 'config', 'examples/prometheus.yml']);
    expect(r.code).toBe(0);
    const cfg = parse(fs.readFileSync(path.join(ROOT, 'examples/prometheus.yml'), 'utf8')) as { rule_files: string[]; alerting: { alertmanagers: unknown[] } };
    expect(cfg.rule_files.map((f) => path.normalize(path.join('examples', f))).sort()).toEqual([...RULE_FILES].sort());
    expect(cfg.alerting.alertmanagers.length).toBeGreaterThan(0);
  });

  test('its exporter job name matches the mixin exporter_selector', () => {
    const cfg = parse(fs.readFileSync(path.join(ROOT, 'examples/prometheus.yml'), 'utf8')) as { scrape_configs: { job_name: string }[] };
    const sel = /^job=~"([^"]+)"$/.exec(CONFIG.exporter_selector);
    expect(sel).not.toBeNull();
    const jobRe = new RegExp(`^(?:${sel?.[1] ?? ''})$`);
    expect(cfg.scrape_configs.some((s) => jobRe.test(s.job_name))).toBe(true);
  });
});

describe('examples/alertmanager.yml', () => {
  test('amtool check-config accepts it', () => {
    const r = run('amtool', ['check-config', AM_CONFIG]);
    expect(r.out).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  function routeTo(receiver: string, labels: Record<string, string>): Run {
    const args = ['config', 'routes', 'test', `--config.file=${AM_CONFIG}`, `--verify.receivers=${receiver}`];
    return run('amtool', [...args, ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)]);
  }

  test('critical reaches the pager, warning reaches chat, info goes nowhere', () => {
    expect(routeTo('pager', { alertname: 'HyphaServeAppRunningNotRegistered', severity: 'critical', ray_cluster: 'kth', app: 'x' }).code).toBe(0);
    expect(routeTo('chat', { alertname: 'HyphaServiceClientIdChurn', severity: 'warning', service: 'public/artifact-manager' }).code).toBe(0);
    expect(routeTo('blackhole', { alertname: 'Anything', severity: 'info' }).code).toBe(0);
    // The verification itself can fail: a critical alert does not reach chat.
    expect(routeTo('chat', { alertname: 'HyphaServiceCachedProxyStale', severity: 'critical' }).code).toBe(1);
  });

  test.each(alerts.map((a) => [a.name, a.labels.severity] as const))('%s (%s) reaches the receiver of its severity', (name, severity) => {
    const r = routeTo(RECEIVER_BY_SEVERITY[severity], { alertname: name, severity });
    expect(r.out).toContain(RECEIVER_BY_SEVERITY[severity]);
    expect(r.code).toBe(0);
  });

  interface InhibitRule {
    source_matchers: string[];
    target_matchers: string[];
    equal: string[];
  }
  const am = parse(fs.readFileSync(path.join(ROOT, AM_CONFIG), 'utf8')) as {
    route: { group_by: string[] };
    inhibit_rules: InhibitRule[];
    receivers: { name: string; webhook_configs?: Record<string, unknown>[] }[];
  };

  function ruleFor(source: string[]): InhibitRule | undefined {
    return am.inhibit_rules.find((r) => source.every((m) => r.source_matchers.includes(m)) && r.source_matchers.length === source.length);
  }
  function targetsOf(rule: InhibitRule | undefined): string[] {
    const m = /^alertname=~?"([^"]+)"$/.exec(rule?.target_matchers[0] ?? '');
    return m ? m[1].split('|') : [];
  }

  test('inhibition names only real alerts', () => {
    const names = new Set(alerts.map((a) => a.name));
    for (const r of am.inhibit_rules) {
      for (const m of [...r.source_matchers, ...r.target_matchers]) {
        const am2 = /^alertname=~?"([^"]+)"$/.exec(m);
        if (am2) for (const n of am2[1].split('|')) expect(names).toContain(n);
      }
    }
  });

  // Defect 1: a down source silences exactly what derives from it, matched on its own label.
  test.each([
    ['ray', 'ray_cluster'],
    ['hypha', 'hypha'],
    ['hypha_service', 'service'],
  ])('HyphaServeSourceDown{source="%s"} inhibits every alert derived from that source, equal on %s', (source, label) => {
    const rule = ruleFor(['alertname="HyphaServeSourceDown"', `source="${source}"`]);
    expect(rule?.equal.sort()).toEqual([...CONFIG.topology_labels, 'job', label].sort());
    const derived = alerts
      .filter((a) => a.name !== 'HyphaServeSourceDown' && new RegExp(`source="${source}"`).test(expandedExpr(a)))
      .map((a) => a.name);
    // Contract v0.4: the registration and worker pages read the exporter's decisions, which it withholds while
    // Hypha is down, so no rule reads source_up{source="hypha"}; likewise the Serve pages read the proxy decisions
    // and the Serve series, which the exporter withholds while Ray is not sampled (the none_ready record that read
    // source_up{source="ray"} is gone), so no alert reads source="ray". The inhibition's targets are checked below.
    if (!['hypha', 'ray'].includes(source)) expect(derived.length).toBeGreaterThan(0);
    // Every alert whose rules read this source is a target; so may be alerts built from series the
    // exporter itself removes while the source is down (the Serve alerts of a Ray cluster).
    expect(targetsOf(rule)).toEqual(expect.arrayContaining(derived));
    const carriesLabel = alerts.filter((a) => new RegExp(`\\$labels\\.${label}\\b`).test(Object.values(a.annotations).join(' '))).map((a) => a.name);
    for (const t of targetsOf(rule)) expect({ target: t, carries: carriesLabel.includes(t) }).toEqual({ target: t, carries: true });
    // The label it matches on is on every target alert (it is in the alert's identity).
    // Contract v0.3: the exporter names the upstream with that very label, so the source record keeps it.
    const sourceDown = alerts.find((a) => a.name === 'HyphaServeSourceDown');
    expect(sourceDown && expandedExpr(sourceDown)).toMatch(new RegExp(`max by \\([^)]*\\b${label}\\b[^)]*\\) \\(last_over_time\\(hypha_serve_source_up`));
    expect(sourceDown && expandedExpr(sourceDown)).not.toContain('label_replace');
  });

  test('the other inhibitions match on the identity both alerts share', () => {
    expect(ruleFor(['alertname="HyphaServiceCachedProxyStale"'])?.equal.sort()).toEqual(['cluster', 'job', 'namespace', 'service']);
    expect(ruleFor(['alertname="HyphaServeAppRunningNotRegistered"'])?.equal.sort()).toEqual(['app', 'cluster', 'hypha', 'job', 'namespace', 'ray_cluster']);
    expect(ruleFor(['alertname="HyphaServeAllProxiesUnready"'])?.equal.sort()).toEqual(['cluster', 'job', 'namespace', 'ray_cluster']);
  });

  test('defect 6: group_by has no source, target, service or instance, so one Hypha outage is one notification', () => {
    for (const l of ['source', 'target', 'service', 'instance', 'hypha']) expect(am.route.group_by).not.toContain(l);
    expect(am.route.group_by).toEqual(expect.arrayContaining(['alertname', 'ray_cluster', 'app']));
  });

  test('webhooks use no option newer than Alertmanager 0.25 (no timeout)', () => {
    for (const r of am.receivers) for (const w of r.webhook_configs ?? []) expect(Object.keys(w)).not.toContain('timeout');
  });
});

// Each mutation puts back a defective piece of logic (the one a test exists for) into a copy of
// the generated rules; promtool must then fail that very test. For the issue-12 defects this is
// the proof that the test fails on the old rules' semantics.
describe('mutations: the tests can fail', () => {
  interface Mutation {
    what: string;
    /** Applied to both rule files (the groups' own recording rules are in alerts.yml); it must change one. */
    from: string | RegExp;
    to: string;
    testFile: string;
    failingTest: string;
  }
  const S = CONFIG.exporter_selector;
  /** The topology labels every by/on starts with ("cluster, " by default). */
  const T = CONFIG.topology_labels.map((l) => `${l}, `).join('');
  const MUTATIONS: Mutation[] = [
    {
      what: 'defect 1: guard registration on every Hypha connection of the exporter (v0.1)',
      from: `max by (${T}job, ray_cluster, app, hypha) (hypha_serve_app_running_not_registered_page{${S}})`,
      to: `max by (${T}job, ray_cluster, app, hypha) (hypha_serve_app_running_not_registered_page{${S}} * on (${T}job, instance) group_left () min by (${T}job, instance) (hypha_serve_source_up{${S}, source=~"hypha|hypha_service"}))`,
      testFile: 'registration.test.yml',
      failingTest: 'defect 1 - a failing watched-service source, a second Hypha server or another Ray cluster does not silence this app',
    },
    // Defect 1 for the watched services (v0.1: one guard over every Hypha connection) has no rule-level guard left
    // to widen: each service's decisions are its own series, absent while that service's own source is down
    // (test/unit/services-self-healing.test.ts "metrics: … the exporter's page decisions"). The one source guard
    // the services group still has is the latency level's, on the service's own source: without it a source down
    // for longer than the bridge keeps its frozen histogram warning.
    {
      what: 'the latency level without its own source-up guard (a source down past the bridge keeps warning)',
      from: /\n\s+\* on \([^)]*\) group_left \(\)\n\s+\(max_over_time\(hypha_serve_source_up\{[^}]*source="hypha_service"\}\[5m\]\) == 1\)/,
      to: '',
      testFile: 'services.test.yml',
      failingTest: 'slow calls seen by two replicas - one warning; the source down for longer than the bridge ends it',
    },
    {
      what: 'namespace out of every by/on (two namespaces with the same job are one upstream, one app)',
      from: 'cluster, namespace, job',
      to: 'cluster, job',
      testFile: 'namespace.test.yml',
      failingTest: 'source down in one of two namespaces with the same job - pages for that namespace; the other\'s up source does not hide it',
    },
    {
      what: 'defect 2: the expected service in the alert identity (v0.1)',
      from: `max by (${T}job, ray_cluster, app, hypha) (hypha_serve_app_running_not_registered_page{${S}})`,
      to: `max by (${T}job, ray_cluster, app, hypha, service) (hypha_serve_app_running_not_registered_page{${S}} * on (${T}job, instance, ray_cluster, app, hypha) group_left (service) hypha_serve_app_not_registered_cause_info{${S}})`,
      testFile: 'registration.test.yml',
      failingTest: 'defect 2 - the expected client id changing during a worker restart neither resets nor splits the page',
    },
    {
      what: 'defects 5 and 8: no bridge over gaps (v0.1)',
      from: /\s+or\s+max by \([^)]*\) \(last_over_time\([a-z_:]+(\{[^}]*\})?\[5m\]\)\)/g,
      to: '',
      testFile: 'registration.test.yml',
      failingTest: 'defect 8 - Ray failing one sample in three still pages on time',
    },
    {
      what: 'defect 5: no bridge over an exporter restart (v0.1)',
      from: /\s+or\s+max by \([^)]*\) \(last_over_time\([a-z_:]+(\{[^}]*\})?\[5m\]\)\)/g,
      to: '',
      testFile: 'registration.test.yml',
      failingTest: 'defect 5 - a 1-minute exporter restart keeps a firing page and its cause',
    },
    {
      what: 'defect 8: no bridge for the Serve app status (v0.1)',
      from: /\s+or\s+max by \([^)]*\) \(last_over_time\([a-z_:]+(\{[^}]*\})?\[5m\]\)\)/g,
      to: '',
      testFile: 'serve.test.yml',
      failingTest: 'defect 8 - Ray failing one sample in three, DEPLOY_FAILED turning UNHEALTHY - one page, on time',
    },
    // Defect 6 (v0.1 required a ready-or-not head proxy series) is the exporter's now: it decides the proxy pages
    // from the proxies Ray lists (src/serve/judgement.ts proxyPages; test/unit/check-command.test.ts "no proxy
    // ready: at zero it is the wake condition, …"). What the rules still do for those pages: the gap bridge and the
    // max over the exporter replicas.
    {
      what: 'the proxy page without its gap bridge (an exporter restart would reset its for:)',
      from: /(\(max by \([^)]*\) \(hypha_serve_cluster_no_proxy_can_wake_apps\{[^}]*\}\))\n\s+or max by \([^)]*\) \(last_over_time\(hypha_serve_cluster_no_proxy_can_wake_apps\{[^}]*\}\[5m\]\)\)\)/,
      to: '$1)',
      testFile: 'serve.test.yml',
      failingTest: 'proxy decision through gaps - a gap shorter than the bridge keeps the page, a longer one ends it, and a gap never starts it',
    },
    {
      what: 'HA: keep instance in the proxy page (one page per exporter replica)',
      from: new RegExp(`max by \\(${T}job, ray_cluster\\) \\((last_over_time\\()?hypha_serve_cluster_no_proxy_can_wake_apps`, 'g'),
      to: `max by (${T}job, instance, ray_cluster) ($1hypha_serve_cluster_no_proxy_can_wake_apps`,
      testFile: 'serve.test.yml',
      failingTest: 'proxy decisions of two exporter replicas - one page per cluster, its deployments counted once; a replica that left does not outvote a live 0',
    },
    // Defect 10 (v0.1 judged the probes on one sample): the probe window is the exporter's now
    // (test/unit/services-state.test.ts "the pages the watch state decides": "probe pages: unknown until a whole
    // window was watched, …"). The rules' part is the page's own for: over that decision.
    {
      what: 'defect 10 at the rule level: the cached-probe page without its for: (one sample of the decision pages)',
      from: /(alert: HyphaServiceCachedProbeFailing\n(?:.*\n){3}\s+)for: 3m/,
      to: '$1for: 0s',
      testFile: 'services.test.yml',
      failingTest: 'cached-path probe failing for less than 3 minutes does not page',
    },
    {
      what: 'HA: keep instance in fact alerts',
      from: new RegExp(`max by \\(${T}job, ray_cluster, app, hypha\\) \\((last_over_time\\()?hypha_serve_app_running_not_registered_page`, 'g'),
      to: `max by (${T}job, instance, ray_cluster, app, hypha) ($1hypha_serve_app_running_not_registered_page`,
      testFile: 'registration.test.yml',
      failingTest: 'two exporter replicas reporting the same decision page once, through a restart of either; a replica that left does not outvote a live 0',
    },
    {
      what: 'HA: a dead replica held value outvotes a live one (bridge only)',
      from: /\(max by \([^)]*\) \(hypha_serve_app_running_not_registered_page\{[^}]*\}\)\s+or /,
      to: '(',
      testFile: 'registration.test.yml',
      failingTest: 'two exporter replicas reporting the same decision page once, through a restart of either; a replica that left does not outvote a live 0',
    },
    {
      what: 'the bridge takes the highest value within it, not the last (a gap after a fix pages again)',
      from: 'last_over_time(hypha_serve_app_running_not_registered_page',
      to: 'max_over_time(hypha_serve_app_running_not_registered_page',
      testFile: 'registration.test.yml',
      failingTest: 'never starts from a gap - a gap right after the fix does not page again',
    },
    {
      what: 'the cause annotation of every replica\'s last cause within the bridge, not the causes reported now',
      from: /(cause: >-\n\s+\{\{range \$i, \$c := printf ")max by \(cause, reason, gate, proven, service\)\s+\(hypha_serve_app_not_registered_cause_info\{[^}]*\}\)\s+or on \(\)\s+max/,
      to: '$1max',
      testFile: 'registration.test.yml',
      failingTest: 'defect 2 - the expected client id changing during a worker restart neither resets nor splits the page',
    },
    // Issue 19: the proof that a stale id is a replaced server id, and the per-cause waits, are the exporter's now
    // (test/unit/services-state.test.ts "the pages the watch state decides": "an unproven stale id pages once it has
    // been stale for the uncertain wait, …", "a stale id proven gone (a replaced server id) pages at once, …").
    // At the rule level the same defect is paging on the cause the exporter reports from the first stale cycle
    // instead of on its decision.
    {
      what: 'issue 19: page any stale id at once (the cause the exporter reports), not the exporter\'s decision after its wait or proof',
      from: `hypha_serve_service_cached_stale_page{${S}}`,
      to: `hypha_serve_service_cached_stale_cause_info{${S}}`,
      testFile: 'services.test.yml',
      failingTest: 'the cause alone does not page - a stale id the exporter still waits on (not_listed) fires when it decides 1',
    },
    {
      what: 'issue 19: the server-id warning fires on any comeback, under the same id too',
      from: `(hypha_serve_hypha_server_id_changed{${S}})`,
      to: `(hypha_serve_hypha_server_id_changed{${S}} * 0 + 1)`,
      testFile: 'services.test.yml',
      failingTest: 'server id unstable - restart with a fixed server id and a Hypha outage - no warning',
    },
    // What stale means (the cached id itself gone, not "cached differs from the fresh resolution") is the exporter's
    // judgement now (test/unit/services-state.test.ts "the pages the watch state decides"). The rules page on its
    // decision 1 only: comparing `>= 0` pages on a decided 0 too (a provider-set change without a stale id).
    {
      what: 'the stale page on any decision (>= 0), not on the decision 1',
      from: /(last_over_time\(hypha_serve_service_cached_stale_page\{[^}]*\}\[5m\]\)\)\)) == 1/,
      to: '$1 >= 0',
      testFile: 'services.test.yml',
      failingTest: 'several providers - stale only once the cached id itself is gone',
    },
    {
      what: 'HA: keep instance in the stale page (one page per exporter replica)',
      from: new RegExp(`max by \\(${T}job, service, holder\\) \\((last_over_time\\()?hypha_serve_service_cached_stale_page`, 'g'),
      to: `max by (${T}job, instance, service, holder) ($1hypha_serve_service_cached_stale_page`,
      testFile: 'services.test.yml',
      failingTest: 'HA pair - one replica decides 1, the other 0 - pages once, without instance; a replica that left does not outvote a live 0',
    },
    {
      what: 'the stale page without its gap bridge (an exporter restart would end it)',
      from: /(\(max by \([^)]*\) \(hypha_serve_service_cached_stale_page\{[^}]*\}\))\n\s+or max by \([^)]*\) \(last_over_time\(hypha_serve_service_cached_stale_page\{[^}]*\}\[5m\]\)\)\)/,
      to: '$1)',
      testFile: 'services.test.yml',
      failingTest: 'defect 5 - an exporter restart keeps a firing stale-proxy page; a gap longer than the bridge ends it',
    },
    {
      what: 'the stale page\'s bridge takes the highest decision within it, not the last (a gap after the end pages again)',
      from: 'last_over_time(hypha_serve_service_cached_stale_page',
      to: 'max_over_time(hypha_serve_service_cached_stale_page',
      testFile: 'services.test.yml',
      failingTest: 'never starts from a gap - a gap right after the end does not page again',
    },
    {
      what: 'drop the target-stability guard of the replicas rule',
      from: new RegExp(`\\n\\s+\\* on \\(${T}job, instance, ray_cluster, app, deployment\\)\\n\\s+\\(max_over_time\\([^\\n]+`),
      to: '',
      testFile: 'serve.test.yml',
      failingTest: 'steady autoscaler ramp-up (replicas trailing a rising target) is not a stuck deployment',
    },
    // Whether the fresh path works is in the exporter's cached-probe decision now (services-state.test.ts, as above);
    // at the rule level ignoring it is paging the cached-probe alert on the other probe decision, the one that says
    // no path works (a service down paged as a stale cached proxy).
    {
      what: 'ignore whether the fresh path works in the cached-probe alert (it reads the all-paths decision)',
      from: `hypha_serve_service_cached_probe_failing{${S}}`,
      to: `hypha_serve_service_probe_failing{${S}}`,
      testFile: 'services.test.yml',
      failingTest: 'artifact manager gone while Hypha is up - both probe paths fail - warning',
    },
    {
      what: 'the zero-replica warning without its for: (one odd sample warns)',
      from: /(alert: HyphaServeAppWillDeregisterAtZero\n(?:.*\n){3}\s+)for: 1m/,
      to: '$1for: 0s',
      testFile: 'deregister-at-zero.test.yml',
      failingTest: 'the exporter decides 1 (old gate, min_replicas 0) - warns after 1m, names the deployments at min_replicas 0, and stops when the decision goes 0',
    },
    {
      what: 'the worker page without its gap bridge (a worker or exporter restart would end it)',
      from: /(hypha_serve_worker_app_running_not_registered_page\{[^}]*\}\))\n\s+or max by \([^)]*\) \(last_over_time\(hypha_serve_worker_app_running_not_registered_page\{[^}]*\}\[5m\]\)\)/,
      to: '$1',
      testFile: 'worker.test.yml',
      failingTest: 'a gap shorter than the bridge (exporter restart, worker restart) keeps it; no worker answers now',
    },
    {
      what: 'count DEPLOYING as unhealthy',
      from: 'status=~"DEPLOY_FAILED|UNHEALTHY"}',
      to: 'status=~"DEPLOY_FAILED|UNHEALTHY|DEPLOYING"}',
      testFile: 'serve.test.yml',
      failingTest: 'rolling update (DEPLOYING for half an hour) is not an unhealthy app',
    },
    {
      what: 'treat a source that is up again after one failed sample as down',
      from: /max by \(([^)]*)\) \(last_over_time\(hypha_serve_source_up\{([^}]*)\}\[5m\]\)\)/,
      to: 'min by ($1) (min_over_time(hypha_serve_source_up{$2}[5m]))',
      testFile: 'exporter.test.yml',
      failingTest: 'defect 8 - a source failing one sample in three is not down, and a scrape gap does not reset a down source',
    },
    {
      what: 'lower the churn threshold to one restart',
      from: '(service:hypha_serve_service_client_id_changes:increase1h) >= 5',
      to: '(service:hypha_serve_service_client_id_changes:increase1h) >= 2',
      testFile: 'services.test.yml',
      failingTest: 'client-id churn above the threshold warns; below it does not',
    },
  ];

  test.each(MUTATIONS.map((m) => [m.what, m] as const))('%s -> promtool fails its test', (_what, m) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hse-mutant-'));
    const promtool = VERSIONS[0].promtool;
    try {
      fs.mkdirSync(path.join(dir, 'rules', 'tests'), { recursive: true });
      let changed = false;
      for (const f of ['alerts.yml', 'recording.yml']) {
        const text = fs.readFileSync(path.join(ROOT, 'rules', f), 'utf8');
        const mutated = typeof m.from === 'string' ? text.split(m.from).join(m.to) : text.replace(m.from, m.to);
        changed ||= mutated !== text;
        fs.writeFileSync(path.join(dir, 'rules', f), mutated);
      }
      expect({ mutation: m.what, changed }).toEqual({ mutation: m.what, changed: true }); // the guard is still there
      fs.copyFileSync(path.join(TESTS_DIR, m.testFile), path.join(dir, 'rules', 'tests', m.testFile));
      const check = run(promtool, ['check', 'rules', path.join(dir, 'rules', 'recording.yml'), path.join(dir, 'rules', 'alerts.yml')]);
      if (check.code !== 0) throw new Error(check.out);
      const r = run(promtool, ['test', 'rules', path.join(dir, 'rules', 'tests', m.testFile)]);
      expect(r.code).not.toBe(0);
      expect(r.out).toContain(`name: ${m.failingTest},`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
