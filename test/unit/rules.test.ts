// The alerting rules pack, checked with the real tools (Debian promtool 2.42, amtool 0.25):
// syntax, promtool unit tests, metadata every page needs, runbook anchors, routing, the
// generated PrometheusRule, and mutations proving the negative cases can fail.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { MANIFEST_PATH, renderPrometheusRule } from '../../scripts/gen-prometheusrule';
import { loadRules, metricNamesIn, metricNamesUsedByRules, RuleDef } from '../helpers/rule-metrics';

jest.setTimeout(120_000);

const ROOT = path.resolve(__dirname, '..', '..');
const RULE_FILES = ['rules/recording.yml', 'rules/alerts.yml'];
const TESTS_DIR = path.join(ROOT, 'rules', 'tests');
const RUNBOOK_BASE = 'https://github.com/aicell-lab/hypha-serve-exporter/blob/main/docs/runbooks.md';
const AM_CONFIG = 'examples/alertmanager.yml';
const RECEIVER_BY_SEVERITY: Record<string, string> = { critical: 'pager', warning: 'chat', info: 'blackhole' };

interface Run {
  code: number | null;
  out: string;
}

function run(cmd: string, args: string[], cwd = ROOT): Run {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 60_000 });
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

/** GitHub-style anchors of the Markdown headings in a file (plus explicit id/name anchors). */
function markdownAnchors(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inFence = false;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) inFence = !inFence;
    if (inFence) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = h[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-');
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

const rules = loadRules(ROOT);
const alerts = rules.filter((r) => r.kind === 'alert');
const records = rules.filter((r) => r.kind === 'record');

/** An alert's expression with the recording rules it reads spliced in. */
function expandedExpr(r: RuleDef): string {
  const used = records.filter((rec) => new RegExp(`(?<![A-Za-z0-9_:])${rec.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![A-Za-z0-9_:])`).test(r.expr));
  return [r.expr, ...used.map((u) => u.expr)].join('\n');
}

describe('rule files', () => {
  test('the rule files are rules/recording.yml and rules/alerts.yml, with alerts and recording rules', () => {
    expect(fs.readdirSync(path.join(ROOT, 'rules')).filter((f) => f.endsWith('.yml')).sort()).toEqual(['alerts.yml', 'recording.yml']);
    expect(alerts.length).toBeGreaterThanOrEqual(13);
    expect(records.length).toBeGreaterThanOrEqual(5);
  });

  test('promtool check rules accepts them', () => {
    const r = run('promtool', ['check', 'rules', ...RULE_FILES]);
    expect(r.out).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  test('promtool test rules passes for every test file', () => {
    const files = testFiles();
    expect(files.length).toBeGreaterThanOrEqual(4);
    const r = run('promtool', ['test', 'rules', ...files]);
    if (r.code !== 0) throw new Error(r.out);
    expect(r.out.match(/SUCCESS/g)?.length).toBe(files.length);
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
    for (const required of ['HyphaServeAppRunningNotRegistered', 'HyphaServiceCachedProxyStale']) expect(names).toContain(required);
  });

  test.each(alerts.map((a) => [a.name, a] as const))('%s has severity, summary, description and a runbook_url', (_name, a) => {
    expect(['critical', 'warning', 'info']).toContain(a.labels.severity);
    expect(a.annotations.summary).toMatch(/^[A-Z].*\.$/);
    expect(a.annotations.description?.length ?? 0).toBeGreaterThan(40);
    expect(a.annotations.runbook_url).toBe(`${RUNBOOK_BASE}#${a.name.toLowerCase()}`);
    expect(a.for).toMatch(/^\d+[smh]$/);
  });

  test('every runbook_url anchor exists in docs/runbooks.md, and every runbook section is for an alert', () => {
    const anchors = markdownAnchors(path.join(ROOT, 'docs', 'runbooks.md'));
    for (const a of alerts) {
      const anchor = a.annotations.runbook_url.split('#')[1];
      expect({ alert: a.name, found: anchors.has(anchor) }).toEqual({ alert: a.name, found: true });
    }
    const sections = [...fs.readFileSync(path.join(ROOT, 'docs', 'runbooks.md'), 'utf8').matchAll(/^## (Hypha\w+)$/gm)].map((m) => m[1]);
    expect(sections.sort()).toEqual(alerts.map((a) => a.name).sort());
  });

  test('docs/alerts.md lists every alert with its severity, for and runbook link', () => {
    const md = fs.readFileSync(path.join(ROOT, 'docs', 'alerts.md'), 'utf8');
    for (const a of alerts) {
      const row = md.split('\n').find((l) => l.startsWith(`| \`${a.name}\` |`));
      expect({ alert: a.name, row: row !== undefined }).toEqual({ alert: a.name, row: true });
      const cells = (row ?? '').split('|').map((c) => c.trim());
      expect(cells[2]).toBe(a.labels.severity);
      expect(cells[3]).toBe(a.for);
      expect(row).toContain(`(runbooks.md#${a.name.toLowerCase()})`);
    }
  });

  test('recording rules are named level:metric:operations and every one an alert reads is defined', () => {
    const recorded = new Set(records.map((r) => r.name));
    for (const r of records) expect(r.name).toMatch(/^[a-z_]+:hypha_serve_[a-z0-9_]+:[a-z0-9_]+$/);
    for (const a of alerts) {
      for (const m of a.expr.matchAll(/[a-z_]+:hypha_serve_[a-z0-9_]+:[a-z0-9_]+/g)) expect(recorded).toContain(m[0]);
    }
  });
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

  // The benign look-alikes the issue names, each a negative case for the alert it could fool.
  const LOOK_ALIKES: [string, string][] = [
    ['HyphaServeAppRunningNotRegistered', 'idle scale-to-zero app that stays registered does not page'],
    ['HyphaServeAppRunningNotRegistered', 'Hypha down, then back while apps re-register, pages only HyphaServeSourceDown'],
    ['HyphaServeAppRunningNotRegistered', 'Ray down hides the app series and resets the grace'],
    ['HyphaServeAppRunningNotRegistered', 'source_up guards hold even if registration series were to linger'],
    ['HyphaServeAppRunningNotRegistered', 'rolling update (DEPLOYING) with the service briefly gone does not page'],
    ['HyphaServeAppRunningNotRegistered', 'registration flaps shorter than the grace do not page'],
    ['HyphaServeWorkerAppRunningNotRegistered', 'worker RUNNING with the service registered (idle at zero or not) does not page'],
    ['HyphaServeWorkerAppRunningNotRegistered', 'Hypha down - registry series absent - the worker alert stays silent'],
    ['HyphaServiceCachedProxyStale', 'several providers - stale only once the cached id itself is gone'],
    ['HyphaServiceCachedProxyStale', 'restart with a fixed server id - same client id, probes recover - no page'],
    ['HyphaServiceCachedProxyStale', 'Hypha down - every probe fails - no service alert (HyphaServeSourceDown covers it)'],
    ['HyphaServiceCachedProbeFailing', 'artifact manager gone while Hypha is up - both probe paths fail - warning'],
    ['HyphaServiceCachedProbeFailing', 'cached-path probe failing for less than 3 minutes does not page'],
    ['HyphaServiceClientIdChurn', 'client-id churn above the threshold warns; below it does not'],
    ['HyphaServiceClientIdChurn', 'incident 2 - Hypha restarts under a new server id, the cached proxy goes stale and pages'],
    ['HyphaServeAppUnhealthy', 'rolling update (DEPLOYING for half an hour) is not an unhealthy app'],
    ['HyphaServeDeploymentReplicasMismatch', 'idle at zero (target 0, scaled to zero) never counts as a mismatch'],
    ['HyphaServeDeploymentReplicasMismatch', 'steady autoscaler ramp-up (replicas trailing a rising target) is not a stuck deployment'],
    ['HyphaServeNoProxyCanWakeApps', 'worker proxies 503 at zero replicas while the head proxy is ready - by design, no page'],
    ['HyphaServeNoProxyCanWakeApps', 'Ray down - proxy and deployment series gone - no Serve alert'],
    ['HyphaServeSourceDown', 'source down for a few minutes pages; a blip shorter than that does not'],
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
      'hypha_serve_app_registered',
      'hypha_serve_app_status',
      'hypha_serve_source_up',
      'hypha_serve_service_cached_info',
      'hypha_serve_service_provider_info',
      'hypha_serve_service_call_duration_seconds_bucket',
      'hypha_serve_proxy_ready',
    ]) expect(names).toContain(n);
    // Only ever seen inside a recorded name (cluster_app:…:bool), so it must not be listed.
    expect(names).not.toContain('hypha_serve_app_running_not_registered');
  });

  test('metricNamesIn skips recorded series and finds names inside template strings', () => {
    expect(metricNamesIn('cluster:hypha_serve_proxy_ready:sum == 0 and hypha_serve_proxy_head')).toEqual(['hypha_serve_proxy_head']);
    expect(metricNamesIn('{{ with printf "hypha_serve_app_registered{app=%q}" $labels.app | query }}')).toEqual(['hypha_serve_app_registered']);
  });
});

describe('examples/prometheus.yml', () => {
  test('promtool check config accepts it and it loads both rule files', () => {
    const r = run('promtool', ['check', 'config', 'examples/prometheus.yml']);
    expect(r.code).toBe(0);
    const cfg = parse(fs.readFileSync(path.join(ROOT, 'examples/prometheus.yml'), 'utf8')) as {
      rule_files: string[];
      scrape_configs: { job_name: string }[];
      alerting: { alertmanagers: unknown[] };
    };
    expect(cfg.rule_files.map((f) => path.normalize(path.join('examples', f))).sort()).toEqual([...RULE_FILES].sort());
    expect(cfg.alerting.alertmanagers.length).toBeGreaterThan(0);
  });

  test('its exporter job name matches the selector HyphaServeExporterDown uses', () => {
    const cfg = parse(fs.readFileSync(path.join(ROOT, 'examples/prometheus.yml'), 'utf8')) as { scrape_configs: { job_name: string }[] };
    const down = alerts.find((a) => a.name === 'HyphaServeExporterDown');
    const sel = /up\{job=~"([^"]+)"\}/.exec(down?.expr ?? '');
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
    expect(routeTo('pager', { alertname: 'HyphaServeAppRunningNotRegistered', severity: 'critical', cluster: 'kth', app: 'x' }).code).toBe(0);
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
  const am = parse(fs.readFileSync(path.join(ROOT, AM_CONFIG), 'utf8')) as { inhibit_rules: InhibitRule[]; receivers: { name: string; webhook_configs?: Record<string, unknown>[] }[] };

  function targetsOf(source: string[]): string[] {
    const rule = am.inhibit_rules.find((r) => source.every((m) => r.source_matchers.includes(m)));
    const m = /^alertname=~?"([^"]+)"$/.exec(rule?.target_matchers[0] ?? '');
    return m ? m[1].split('|') : [];
  }

  test('inhibition names only real alerts, and covers every alert that needs the hypha source', () => {
    const names = new Set(alerts.map((a) => a.name));
    for (const r of am.inhibit_rules) {
      for (const m of [...r.source_matchers, ...r.target_matchers]) {
        const am2 = /^alertname=~?"([^"]+)"$/.exec(m);
        if (am2) for (const n of am2[1].split('|')) expect(names).toContain(n);
      }
    }
    const hyphaTargets = targetsOf(['alertname="HyphaServeSourceDown"', 'source="hypha"']);
    const needsHypha = alerts.filter((a) => a.name !== 'HyphaServeSourceDown' && /source="hypha"/.test(expandedExpr(a))).map((a) => a.name);
    expect(needsHypha.length).toBeGreaterThan(3);
    expect(hyphaTargets.sort()).toEqual(expect.arrayContaining(needsHypha.sort()));
    expect(targetsOf(['alertname="HyphaServeSourceDown"', 'source="ray"'])).toContain('HyphaServeAppRunningNotRegistered');
  });

  test('webhooks use no option newer than Alertmanager 0.25 (no timeout)', () => {
    for (const r of am.receivers) for (const w of r.webhook_configs ?? []) expect(Object.keys(w)).not.toContain('timeout');
  });
});

describe('deploy/kubernetes/prometheusrule.yaml', () => {
  test('is in sync with rules/ (regenerate: node dist/scripts/gen-prometheusrule.js)', () => {
    const onDisk = fs.readFileSync(path.join(ROOT, MANIFEST_PATH), 'utf8');
    expect(onDisk).toBe(renderPrometheusRule(ROOT));
  });

  test('its groups pass promtool check rules and the same promtool unit tests', () => {
    const doc = parse(fs.readFileSync(path.join(ROOT, MANIFEST_PATH), 'utf8')) as {
      kind: string;
      apiVersion: string;
      spec: { groups: unknown[] };
    };
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
      const check = run('promtool', ['check', 'rules', path.join(dir, 'rules.yml')]);
      expect(check.code).toBe(0);
      const t = run('promtool', ['test', 'rules', ...testFiles(path.join(dir, 'tests'))]);
      if (t.code !== 0) throw new Error(t.out);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Each negative case must be able to fail: weaken the guard it exists for and promtool
// must report that very test as failing.
describe('negative cases are not vacuous', () => {
  interface Mutation {
    what: string;
    file: 'alerts.yml' | 'recording.yml';
    from: string;
    to: string;
    testFile: string;
    failingTest: string;
  }
  const MUTATIONS: Mutation[] = [
    {
      what: 'drop the source_up factors of the registration recording rule',
      file: 'recording.yml',
      from: `
          * on (job, instance, cluster) group_left ()
            max by (job, instance, cluster) (
              label_replace(hypha_serve_source_up{source="ray"}, "cluster", "$1", "target", "(.*)")
            )
          * on (job, instance) group_left ()
            min by (job, instance) (hypha_serve_source_up{source="hypha"})
`,
      to: '\n',
      testFile: 'registration.test.yml',
      failingTest: 'source_up guards hold even if registration series were to linger',
    },
    {
      what: 'shorten the registration grace to 1m',
      file: 'alerts.yml',
      from: 'expr: cluster_app:hypha_serve_app_running_not_registered:bool == 1\n        for: 5m',
      to: 'expr: cluster_app:hypha_serve_app_running_not_registered:bool == 1\n        for: 1m',
      testFile: 'registration.test.yml',
      failingTest: 'registration flaps shorter than the grace do not page',
    },
    {
      what: 'define stale as "cached differs from the fresh resolution"',
      file: 'recording.yml',
      from: 'unless on (job, instance, service, client_id)\n                hypha_serve_service_provider_info',
      to: 'unless on (job, instance, service, client_id)\n                hypha_serve_service_resolved_info',
      testFile: 'services.test.yml',
      failingTest: 'several providers - stale only once the cached id itself is gone',
    },
    {
      what: 'drop the target-stability guard of the replicas alert',
      file: 'alerts.yml',
      from: '\n          and on (job, instance, cluster, app, deployment) (changes(hypha_serve_deployment_target_replicas[10m]) == 0)',
      to: '',
      testFile: 'serve.test.yml',
      failingTest: 'steady autoscaler ramp-up (replicas trailing a rising target) is not a stuck deployment',
    },
    {
      what: 'page on unready proxies without apps at zero',
      file: 'alerts.yml',
      from: 'cluster:hypha_serve_deployment_scaled_to_zero:sum > 0\n          and on (job, instance, cluster) (cluster:hypha_serve_proxy_ready:sum == 0)',
      to: 'cluster:hypha_serve_proxy_ready:sum == 0',
      testFile: 'serve.test.yml',
      failingTest: 'every proxy unready but nothing scaled to zero - not this alert',
    },
    {
      what: 'ignore whether the fresh path works in the cached-probe alert',
      file: 'alerts.yml',
      from: '\n          and on (job, instance, service) (hypha_serve_service_probe_success{via="fresh"} == 1)',
      to: '',
      testFile: 'services.test.yml',
      failingTest: 'artifact manager gone while Hypha is up - both probe paths fail - warning',
    },
    {
      what: 'drop the hypha source guard of the worker alert',
      file: 'alerts.yml',
      from: '\n          and on (job, instance) (min by (job, instance) (hypha_serve_source_up{source="hypha"}) == 1)\n        for: 5m\n        labels:\n          severity: critical\n        annotations:\n          summary: BioEngine worker',
      to: '\n        for: 5m\n        labels:\n          severity: critical\n        annotations:\n          summary: BioEngine worker',
      testFile: 'worker.test.yml',
      failingTest: 'registry series lingering while the hypha source reports down - the guard holds',
    },
    {
      what: 'count DEPLOYING as unhealthy',
      file: 'alerts.yml',
      from: 'status=~"DEPLOY_FAILED|UNHEALTHY"} == 1',
      to: 'status=~"DEPLOY_FAILED|UNHEALTHY|DEPLOYING"} == 1',
      testFile: 'serve.test.yml',
      failingTest: 'rolling update (DEPLOYING for half an hour) is not an unhealthy app',
    },
    {
      what: 'lower the churn threshold to one restart',
      file: 'alerts.yml',
      from: 'service:hypha_serve_service_client_id_changes:increase1h >= 5',
      to: 'service:hypha_serve_service_client_id_changes:increase1h >= 2',
      testFile: 'services.test.yml',
      failingTest: 'client-id churn above the threshold warns; below it does not',
    },
  ];

  test.each(MUTATIONS.map((m) => [m.what, m] as const))('%s -> promtool fails the look-alike test', (_what, m) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hse-mutant-'));
    try {
      fs.mkdirSync(path.join(dir, 'rules', 'tests'), { recursive: true });
      for (const f of ['alerts.yml', 'recording.yml']) {
        let text = fs.readFileSync(path.join(ROOT, 'rules', f), 'utf8');
        if (f === m.file) {
          expect(text.split(m.from).length).toBe(2); // the guard is still there, exactly once
          text = text.replace(m.from, m.to);
        }
        fs.writeFileSync(path.join(dir, 'rules', f), text);
      }
      fs.copyFileSync(path.join(TESTS_DIR, m.testFile), path.join(dir, 'rules', 'tests', m.testFile));
      expect(run('promtool', ['check', 'rules', path.join(dir, 'rules', m.file)]).code).toBe(0);
      const r = run('promtool', ['test', 'rules', path.join(dir, 'rules', 'tests', m.testFile)]);
      expect(r.code).not.toBe(0);
      expect(r.out).toContain(`name: ${m.failingTest},`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
