// `hypha-serve-exporter rules`: the built bin renders a variant of the pack from a user's mixin config (what a
// user of the npm package or the image has, without a checkout), and the variant loads in the real promtool.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { ensureBuilt, runCli } from '../helpers/cli';
import { tmpDir } from '../helpers/tmp';
import { assertPrometheusBinaries, prometheusVersions } from '../harness/prometheus-versions';
import { assertEngine, engineBinary } from '../harness/engines';
import { repoRoot } from '../../src/util/repo-root';

jest.setTimeout(120_000);

interface Rule { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
const rulesOf = (file: string): Rule[] =>
  (YAML.parse(fs.readFileSync(file, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

describe('hypha-serve-exporter rules', () => {
  const t = tmpDir('hse-rules-');
  afterAll(() => t.cleanup());
  beforeAll(() => ensureBuilt());

  const mixin = [
    "exporter_selector: 'job=\"exporter\"'",
    "runbook_url_template: 'https://wiki.example.org/runbooks/%s'",
    'rule_labels: {team: ml-platform, severity: info}',
    'rule_annotations: {dashboard: "https://grafana.example.org/d/x", summary: not this}',
    'alerts:',
    '  HyphaServeAppUnhealthy: {severity: critical, for: 20m}',
    '  HyphaServiceClientIdChurn: {disabled: true}',
    // The registration group has alerts only: with both gone, the group goes.
    '  HyphaServeAppRunningNotRegistered: {disabled: true}',
    '  HyphaServeAppWillDeregisterAtZero: {disabled: true}',
    'vmalert: {latency_offset: 10s}',
    '',
  ].join('\n');

  it('renders recording.yml, alerts.yml, vmalert/ and prometheusrule.yaml from the mixin config; promtool and vmalert load them', async () => {
    const out = path.join(t.dir, 'out');
    const r = await runCli(['rules', '--config', t.write('mixin.yml', mixin), `--out=${out}`]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(fs.readdirSync(out).sort()).toEqual(['alerts.yml', 'prometheusrule.yaml', 'recording.yml', 'vmalert']);
    const rules = [...rulesOf(path.join(out, 'recording.yml')), ...rulesOf(path.join(out, 'alerts.yml'))];
    const unhealthy = rules.find((x) => x.alert === 'HyphaServeAppUnhealthy');
    expect(unhealthy).toMatchObject({ for: '20m', labels: { severity: 'critical' } });
    expect(unhealthy?.annotations?.runbook_url).toBe('https://wiki.example.org/runbooks/HyphaServeAppUnhealthy');
    // Disabled alerts are gone, their recording rules and every other alert stay.
    const shipped = [...rulesOf(path.join(repoRoot(), 'rules/recording.yml')), ...rulesOf(path.join(repoRoot(), 'rules/alerts.yml'))];
    const names = (rs: Rule[]) => rs.filter((x) => x.alert).map((x) => x.alert);
    const gone = ['HyphaServiceClientIdChurn', 'HyphaServeAppRunningNotRegistered', 'HyphaServeAppWillDeregisterAtZero'];
    expect(names(rules)).toEqual(names(shipped).filter((a) => !gone.includes(a as string)));
    expect(rules.filter((x) => x.record).map((x) => x.record)).toEqual(shipped.filter((x) => x.record).map((x) => x.record));
    const groupNames = (f: string) => (YAML.parse(fs.readFileSync(f, 'utf8')) as { groups: { name: string }[] }).groups.map((g) => g.name);
    expect(groupNames(path.join(out, 'alerts.yml'))).toEqual(groupNames(path.join(repoRoot(), 'rules/alerts.yml')).filter((g) => g !== 'hypha-serve-registration'));
    // The extra labels and annotations are on every alert, under its own (severity, summary), on no recording rule.
    for (const a of rules.filter((x) => x.alert)) {
      const before = shipped.find((x) => x.alert === a.alert) as Rule;
      expect(a.labels).toEqual({ ...before.labels, team: 'ml-platform', ...(a.alert === 'HyphaServeAppUnhealthy' ? { severity: 'critical' } : {}) });
      expect(a.annotations?.dashboard).toBe('https://grafana.example.org/d/x');
      expect(a.annotations?.summary).toBe(before.annotations?.summary);
    }
    for (const r of rules.filter((x) => x.record)) expect(r.labels?.team).toBeUndefined();
    // The selector the user gave is in every rule that reads the exporter, and the shipped one in none.
    const exprs = rules.map((x) => x.expr).join('\n');
    expect(exprs).toContain('job="exporter"');
    expect(exprs).not.toContain('hypha-serve-exporter.*');
    // The manifest holds the same groups as the two files.
    const manifest = YAML.parse(fs.readFileSync(path.join(out, 'prometheusrule.yaml'), 'utf8')) as { kind: string; spec: { groups: { rules: Rule[] }[] } };
    expect(manifest.kind).toBe('PrometheusRule');
    expect(manifest.spec.groups.flatMap((g) => g.rules)).toEqual(rules);
    for (const v of prometheusVersions()) {
      assertPrometheusBinaries(v);
      const check = spawnSync(v.promtool, ['check', 'rules', path.join(out, 'recording.yml'), path.join(out, 'alerts.yml')], { encoding: 'utf8', timeout: 60_000 });
      expect(`${v.label}: ${check.stdout}${check.stderr}`).toMatch(/SUCCESS/);
      expect(check.status).toBe(0);
    }
    // vmalert's copies: the same groups and rules, each group with the user's latency offset; vmalert loads them.
    for (const f of ['recording.yml', 'alerts.yml']) {
      type G = { name: string; rules: Rule[] };
      const prom = (YAML.parse(fs.readFileSync(path.join(out, f), 'utf8')) as { groups: G[] }).groups;
      const vm = (YAML.parse(fs.readFileSync(path.join(out, 'vmalert', f), 'utf8')) as { groups: G[] }).groups;
      expect(vm).toEqual(prom.map((g) => ({ ...g, eval_delay: '10s', eval_alignment: false, params: { latency_offset: ['10s'] } })));
    }
    assertEngine('victoriametrics');
    const dry = spawnSync(engineBinary('victoriametrics', 'vmalert'), ['-dryRun', ...['recording.yml', 'alerts.yml'].map((f) => `-rule=${path.join(out, 'vmalert', f)}`)], { encoding: 'utf8', timeout: 60_000 });
    expect(`${dry.stdout}${dry.stderr}`).not.toMatch(/\bfatal\b/);
    expect(dry.status).toBe(0);
  });

  it('without --config: the shipped pack, byte for byte', async () => {
    const out = path.join(t.dir, 'shipped');
    const r = await runCli(['rules', `--out=${out}`]);
    expect(r.code).toBe(0);
    const root = repoRoot();
    expect(fs.readFileSync(path.join(out, 'alerts.yml'), 'utf8')).toBe(fs.readFileSync(path.join(root, 'rules/alerts.yml'), 'utf8'));
    expect(fs.readFileSync(path.join(out, 'recording.yml'), 'utf8')).toBe(fs.readFileSync(path.join(root, 'rules/recording.yml'), 'utf8'));
    expect(fs.readFileSync(path.join(out, 'prometheusrule.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(root, 'deploy/kubernetes/prometheusrule.yaml'), 'utf8'));
    for (const f of ['recording.yml', 'alerts.yml']) {
      expect(fs.readFileSync(path.join(out, 'vmalert', f), 'utf8')).toBe(fs.readFileSync(path.join(root, 'rules/vmalert', f), 'utf8'));
    }
  });

  it('a mixin config the model refuses: exit 2 with the file and the key, nothing written', async () => {
    const out = path.join(t.dir, 'bad');
    const bad = t.write('bad.yml', 'alerts:\n  HyphaServeAppUnhealthy: {severity: loud, for: 5m}\n');
    const r = await runCli(['rules', `--config=${bad}`, `--out=${out}`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bad.yml');
    expect(r.stderr).toContain('alerts.HyphaServeAppUnhealthy.severity');
    expect(fs.existsSync(out)).toBe(false);
    const typo = await runCli(['rules', '--outdir=x']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/unknown flag --outdir \(see rules --help\)/);
    const help = await runCli(['rules', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--config=CONFIG');
    expect(help.stdout).toContain('--out=OUT');
  });
});
