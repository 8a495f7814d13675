/**
 * Tuning the rules pack without a checkout. The chart's rule and page-wait values (prometheusRule.disabled/severity/additionalRuleLabels/
 * additionalRuleAnnotations/runbookUrl/jobSelector, serviceMonitor.jobName, pageWaits.*), rendered with the
 * pinned helm: each value changes what it says and nothing else, the defaults render the generated rules
 * unchanged, the tweaked groups load in the real promtool, and the config the chart writes passes the
 * exporter's own --config.check. Kustomize: a variant rendered by the bin's `rules` subcommand, patched over
 * the base's PrometheusRule by an overlay (docs/install.md), with the pinned kustomize. The examples of
 * docs/install.md (values and overlay), copied as written, render with every knob in effect.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { repoRoot } from '../../src/util/repo-root';
import { assertPrometheusBinaries, prometheusVersions } from '../harness/prometheus-versions';
import { ensureBuilt, runCli } from '../helpers/cli';
import { installDocBlock } from '../helpers/install-doc';
import { tmpDir } from '../helpers/tmp';

jest.setTimeout(600_000);
const execFileP = promisify(execFile);
const root = repoRoot();
const chart = path.join(root, 'deploy/helm/hypha-serve-exporter');
const cacheDir = process.env.HSE_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'hypha-serve-exporter');
const RUNBOOK_BASE = 'https://github.com/aicell-lab/hypha-serve-exporter/blob/main/docs/runbooks';
const SELECTOR = 'job=~"hypha-serve-exporter.*"';

interface Rule { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
interface Group { name: string; rules: Rule[] }

function tool(name: 'HELM' | 'KUSTOMIZE'): string {
  const env = fs.readFileSync(path.join(cacheDir, 'deploy-tools', 'env.sh'), 'utf8');
  return new RegExp(`^${name}="(.*)"$`, 'm').exec(env)?.[1] ?? '';
}

async function run(bin: string, args: string[]): Promise<{ code: number; stdout: string; out: string }> {
  try {
    const r = await execFileP(bin, args, { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout: r.stdout, out: `${r.stdout}${r.stderr}` };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

const helm = (args: string[]) => run(tool('HELM'), args);

describe('chart: rule and page-wait values', () => {
  const t = tmpDir('hse-helm-rules-');
  afterAll(() => t.cleanup());
  let n = 0;

  async function render(values: unknown, show = 'templates/prometheusrule.yaml'): Promise<string> {
    const file = t.write(`values-${n++}.yaml`, YAML.stringify(values));
    const r = await helm(['template', 'hse', chart, '-n', 'monitoring', '--api-versions', 'monitoring.coreos.com/v1', '--show-only', show, '-f', file]);
    if (r.code !== 0) throw new Error(r.out);
    return r.stdout;
  }
  async function groups(values: unknown): Promise<Group[]> {
    return (YAML.parse(await render(values)) as { spec: { groups: Group[] } }).spec.groups;
  }
  // The generated groups as the chart renders them by default: its ServiceMonitor scrapes the release namespace, so
  // HyphaServeExporterDown's absent() carries it (templates/prometheusrule.yaml; docs/alerts.md, the namespace).
  const generated = (YAML.parse(fs.readFileSync(path.join(chart, 'files/prometheusrule.yaml'), 'utf8')) as { spec: { groups: Group[] } }).spec.groups
    .map((g) => ({ ...g, rules: g.rules.map((r) => (r.alert === 'HyphaServeExporterDown'
      ? { ...r, expr: r.expr.replace(/absent\(up\{([^}]*)\}\)/, 'absent(up{$1, namespace="monitoring"})') } : r)) }));
  const alerts = (gs: Group[]) => gs.flatMap((g) => g.rules).filter((r) => r.alert !== undefined);
  const alertNamed = (gs: Group[], name: string) => alerts(gs).find((r) => r.alert === name);

  /** promtool 2.42 and 3.x load the rendered groups (the manifest's spec is a rule file). */
  function promtoolLoads(gs: Group[]): void {
    const file = t.write(`rules-${n++}.yml`, YAML.stringify({ groups: gs }));
    for (const v of prometheusVersions()) {
      assertPrometheusBinaries(v);
      const r = spawnSync(v.promtool, ['check', 'rules', file], { encoding: 'utf8', timeout: 60_000 });
      expect(`${v.label}: ${r.stdout}${r.stderr}`).toMatch(/SUCCESS/);
      expect(r.status).toBe(0);
    }
  }

  it('defaults: the generated groups, unchanged', async () => {
    expect(await groups({})).toEqual(generated);
    // What the value tweaks rely on: every runbook_url starts with the base runbookUrl replaces, every rule
    // that reads the exporter has the selector that jobSelector replaces.
    for (const a of alerts(generated)) expect(a.annotations?.runbook_url?.startsWith(`${RUNBOOK_BASE}`)).toBe(true);
    expect(generated.flatMap((g) => g.rules).filter((r) => r.expr.includes(SELECTOR)).length).toBeGreaterThan(20);
  });

  it('disabled drops that alert only; a group left empty goes; an unknown alert name fails', async () => {
    const gs = await groups({ prometheusRule: { disabled: { HyphaServiceClientIdChurn: true, HyphaServeAppUnhealthy: false } } });
    expect(alertNamed(gs, 'HyphaServiceClientIdChurn')).toBeUndefined();
    expect(alertNamed(gs, 'HyphaServeAppUnhealthy')).toBeDefined();
    expect(alerts(gs).length).toBe(alerts(generated).length - 1);
    // The recording rules stay (dashboards read them).
    expect(gs.flatMap((g) => g.rules).filter((r) => r.record).length).toBe(generated.flatMap((g) => g.rules).filter((r) => r.record).length);
    promtoolLoads(gs);
    // Every alert of a group without recording rules disabled: the group goes (the operator refuses an empty one).
    const onlyAlerts = generated.find((g) => g.rules.every((r) => r.alert));
    if (onlyAlerts) {
      const all = await groups({ prometheusRule: { disabled: Object.fromEntries(onlyAlerts.rules.map((r) => [r.alert, true])) } });
      expect(all.map((g) => g.name)).not.toContain(onlyAlerts.name);
    }
    const bad = await helm(['template', 'hse', chart, '--set', 'prometheusRule.enabled=true', '--set', 'prometheusRule.disabled.HyphaNoSuchAlert=true']);
    expect(bad.code).not.toBe(0);
    expect(bad.out).toContain('no alert named HyphaNoSuchAlert');
  });

  it('additionalRuleLabels, additionalRuleAnnotations and severity go on the alerts (the alert\'s own win), never on recording rules', async () => {
    const gs = await groups({
      prometheusRule: {
        additionalRuleLabels: { team: 'ml-platform', severity: 'info' },
        additionalRuleAnnotations: { dashboard: 'https://grafana.example.org/d/x', summary: 'not this' },
        severity: { HyphaServeAppUnhealthy: 'critical' },
      },
    });
    for (const a of alerts(gs)) {
      const before = alertNamed(generated, a.alert as string) as Rule;
      expect(a.labels).toEqual({ ...before.labels, team: 'ml-platform', ...(a.alert === 'HyphaServeAppUnhealthy' ? { severity: 'critical' } : {}) });
      expect(a.annotations).toEqual({ ...before.annotations, dashboard: 'https://grafana.example.org/d/x' });
    }
    expect(alertNamed(generated, 'HyphaServeAppUnhealthy')?.labels?.severity).toBe('warning');
    for (const r of gs.flatMap((g) => g.rules).filter((x) => x.record)) expect(r.labels?.team).toBeUndefined();
    promtoolLoads(gs);
    const bad = await helm(['template', 'hse', chart, '--set', 'prometheusRule.enabled=true', '--set', 'prometheusRule.severity.HyphaServeAppUnhealthy=loud']);
    expect(bad.code).not.toBe(0);
    expect(bad.out).toMatch(/severity/);
  });

  it('runbookUrl replaces the base of every runbook_url, keeping the rest', async () => {
    const gs = await groups({ prometheusRule: { runbookUrl: 'https://wiki.example.org/hse/runbooks/' } });
    for (const a of alerts(gs)) {
      const before = alertNamed(generated, a.alert as string)?.annotations?.runbook_url as string;
      expect(a.annotations?.runbook_url).toBe(`https://wiki.example.org/hse/runbooks${before.slice(RUNBOOK_BASE.length)}`);
    }
    promtoolLoads(gs);
  });

  it('the job selector follows serviceMonitor.jobName (any name), jobLabel and prometheusRule.jobSelector', async () => {
    const sm = (values: unknown) => render(values, 'templates/service.yaml');
    // A name without the prefix: the rules select exactly that job, in every expression and annotation query.
    const gs = await groups({ serviceMonitor: { jobName: 'exporter' } });
    const text = YAML.stringify(gs);
    expect(text).not.toContain('hypha-serve-exporter.*');
    expect(text).not.toContain("hypha-serve-exporter.*'");
    const selectors = (s: string, sel: string) => s.split(sel).length - 1;
    expect(selectors(text, 'job="exporter"')).toBe(selectors(YAML.stringify(generated), SELECTOR));
    expect(alertNamed(gs, 'HyphaServeExporterDown')?.annotations?.description).toContain("{job='exporter'}");
    expect(YAML.parse(await sm({ serviceMonitor: { jobName: 'exporter' } })).metadata.labels['hypha-serve-exporter/job']).toBe('exporter');
    promtoolLoads(gs);
    // A name with the prefix: the generated selector already selects it (and every shard's default job).
    expect(await groups({ serviceMonitor: { jobName: 'hypha-serve-exporter-prod' } })).toEqual(generated);
    // jobLabel names another Service label: its value is the job.
    const byLabel = await groups({ serviceMonitor: { jobLabel: 'scrape-job' }, service: { labels: { 'scrape-job': 'hse-a' } } });
    expect(YAML.stringify(byLabel)).toContain('job="hse-a"');
    // An explicit selector (shards with other names) wins.
    const explicit = await groups({ serviceMonitor: { jobName: 'exporter' }, prometheusRule: { jobSelector: 'job=~"exporter-(a|b)"' } });
    expect(YAML.stringify(explicit)).toContain('job=~"exporter-(a|b)"');
    expect(YAML.stringify(explicit)).not.toContain('job="exporter"');
    promtoolLoads(explicit);
  });

  it('every tweak at once: the PrometheusRule passes the strict Prometheus Operator CRD schema', async () => {
    const text = await render({
      serviceMonitor: { jobName: 'exporter' },
      prometheusRule: {
        disabled: Object.fromEntries(generated[0].rules.filter((r) => r.alert).map((r) => [r.alert, true])),
        severity: { HyphaServeAppUnhealthy: 'critical' },
        additionalRuleLabels: { team: 'ml-platform' },
        additionalRuleAnnotations: { dashboard: 'https://grafana.example.org/d/x' },
        runbookUrl: 'https://wiki.example.org/runbooks',
      },
    });
    const r = await run('bash', ['scripts/check-deploy.sh', 'validate', t.write('tweaked.yaml', text)]);
    expect(r.out).toContain('valid against the strict monitoring.coreos.com/v1/PrometheusRule CRD schema');
    expect(r.code).toBe(0);
  });

  describe('pageWaits: into the exporter config, under what the config sets', () => {
    beforeAll(() => ensureBuilt());
    const config = async (values: unknown) =>
      YAML.parse((YAML.parse(await render(values, 'templates/configmap.yaml')) as { data: { 'config.yml': string } }).data['config.yml']) as Record<string, unknown>;

    it('defaults: the config as given', async () => {
      const c = await config({});
      expect(c).toEqual(YAML.parse(fs.readFileSync(path.join(chart, 'values.yaml'), 'utf8')).config);
    });

    it('registration and watched-service waits and the probe window; a key the config sets wins; the exporter accepts it', async () => {
      const c = await config({
        config: {
          ray_clusters: [{ name: 'prod', dashboard_url: 'http://ray:8265' }],
          hypha: { name: 'main', server_url: 'https://hypha.example.org' },
          hypha_registration: { page_waits: { uncertain: '7m' } },
          watched_services: [{ service: 'public/artifact-manager' }, { service: 'ws/my-service', probe_window: '4m', page_waits: { proven: '10s' } }],
        },
        pageWaits: { registration: { uncertain: '10m', missing_crashed: '15m' }, watchedServices: { proven: '30s', uncertain: '4m' }, probeWindow: '6m' },
      });
      expect(c.hypha_registration).toEqual({ page_waits: { uncertain: '7m', missing_crashed: '15m' } });
      expect(c.watched_services).toEqual([
        { service: 'public/artifact-manager', page_waits: { proven: '30s', uncertain: '4m' }, probe_window: '6m' },
        { service: 'ws/my-service', page_waits: { proven: '10s', uncertain: '4m' }, probe_window: '4m' },
      ]);
      const r = await runCli(['--config.check', `--config.file=${t.write('chart-config.yml', YAML.stringify(c))}`]);
      expect(`${r.stdout}${r.stderr}`).not.toMatch(/error/);
      expect(r.code).toBe(0);
    });

    it('no watched_services in the config: the exporter\'s default entry gets the waits', async () => {
      const c = await config({ pageWaits: { watchedServices: { uncertain: '3m' } } });
      expect(c.watched_services).toEqual([{ service: 'public/artifact-manager', page_waits: { uncertain: '3m' } }]);
      const { DEFAULT_WATCHED_SERVICES } = await import('../../src/config/services-schema');
      expect(DEFAULT_WATCHED_SERVICES.map((s) => s.service)).toEqual(['public/artifact-manager']);
      // An empty list stays empty (watch nothing).
      expect((await config({ config: { ray_clusters: [], watched_services: [] }, pageWaits: { probeWindow: '5m' } })).watched_services).toEqual([]);
      const bad = await helm(['template', 'hse', chart, '--set', 'pageWaits.probeWindow=5 minutes']);
      expect(bad.code).not.toBe(0);
      expect(bad.out).toMatch(/probeWindow/);
      // The schema's keys of pageWaits.registration are the exporter's (a typo fails the install, not the pod).
      const schema = JSON.parse(fs.readFileSync(path.join(chart, 'values.schema.json'), 'utf8')) as {
        properties: { pageWaits: { properties: { registration: { propertyNames: { enum: string[] } } } } };
      };
      const { pageWaitsSchema } = await import('../../src/config/hypha-schema');
      expect(schema.properties.pageWaits.properties.registration.propertyNames.enum).toEqual(Object.keys(pageWaitsSchema.shape));
      const typo = await helm(['template', 'hse', chart, '--set', 'pageWaits.registration.uncertian=5m']);
      expect(typo.code).not.toBe(0);
      expect(typo.out).toMatch(/uncertian/);
    });
  });
});

describe('docs/install.md: the chart examples render as they say', () => {
  const t = tmpDir('hse-install-doc-');
  afterAll(() => t.cleanup());
  const block = (first: string) => installDocBlock(first);
  const render = async (files: string[], show: string) => {
    const r = await helm(['template', 'hse', chart, '-n', 'monitoring', '--api-versions', 'monitoring.coreos.com/v1', '--show-only', show, ...files.flatMap((f) => ['-f', f])]);
    if (r.code !== 0) throw new Error(r.out);
    return YAML.parse(r.stdout) as Record<string, unknown>;
  };

  it('the typical my-values.yaml, then "Tuning the rules" on top: every knob shows in what the chart renders', async () => {
    const typical = t.write('my-values.yaml', block('config:'));
    const tuning = t.write('tuning.yaml', block('prometheusRule:'));
    const files = [typical, tuning];
    const rule = (await render(files, 'templates/prometheusrule.yaml')) as { metadata: { labels: Record<string, string> }; spec: { groups: Group[] } };
    const all = rule.spec.groups.flatMap((g) => g.rules).filter((r) => r.alert);
    // prometheusRule.additionalLabels of the typical values: kube-prometheus-stack's ruleSelector.
    expect(rule.metadata.labels.release).toBe('kube-prometheus-stack');
    // disabled, severity, additionalRuleLabels, additionalRuleAnnotations, runbookUrl as the block's comments say.
    expect(all.map((r) => r.alert)).not.toContain('HyphaServiceClientIdChurn');
    expect(all.length).toBeGreaterThan(10);
    expect(all.find((r) => r.alert === 'HyphaServeAppUnhealthy')?.labels?.severity).toBe('critical');
    for (const r of all) {
      expect([r.alert, r.labels?.team]).toEqual([r.alert, 'ml-platform']);
      expect(r.annotations?.dashboard).toBe('https://grafana.example.org/d/hypha');
      expect(r.annotations?.runbook_url).toBe(`https://wiki.example.org/hypha-serve-exporter/runbooks/${r.alert as string}.md`);
    }
    // jobSelector "": the default, which follows the ServiceMonitor's job.
    expect(YAML.stringify(rule.spec.groups)).toContain(SELECTOR);
    // pageWaits into the exporter's config, beside the typical config.
    const cm = (await render(files, 'templates/configmap.yaml')) as { data: { 'config.yml': string } };
    const config = YAML.parse(cm.data['config.yml']) as Record<string, unknown>;
    expect(config.ray_clusters).toEqual([{ name: 'prod', dashboard_url: 'http://raycluster-prod-head-svc.ray.svc:8265' }]);
    expect(config.hypha_registration).toEqual({ page_waits: { uncertain: '10m' } });
    expect(config.watched_services).toEqual([{ service: 'public/artifact-manager', page_waits: { uncertain: '3m' }, probe_window: '5m' }]);
    // The exporter accepts the config the docs' values give it, with the token where the chart projects its Secret.
    ensureBuilt();
    const secrets = path.dirname(t.write('hypha-token', 'token'));
    const r = await runCli(['--config.check', `--config.file=${t.write('config.yml', cm.data['config.yml'].split('/run/secrets/hypha-serve-exporter/').join(`${secrets}/`))}`]);
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/error/);
    expect(r.code).toBe(0);
    // The ServiceMonitor carries the typical values' label, two replicas get their PodDisruptionBudget.
    const sm = (await render(files, 'templates/servicemonitor.yaml')) as { metadata: { labels: Record<string, string> } };
    expect(sm.metadata.labels.release).toBe('kube-prometheus-stack');
    const sts = (await render(files, 'templates/statefulset.yaml')) as { spec: { replicas: number } };
    expect(sts.spec.replicas).toBe(2);
  });
});

describe('kustomize: a variant of the pack patched over the base', () => {
  const t = tmpDir('hse-kustomize-rules-');
  afterAll(() => t.cleanup());
  beforeAll(() => ensureBuilt());

  it('an overlay with the `rules` output as a patch replaces the base\'s rule groups; everything else stays', async () => {
    const overlay = path.join(t.dir, 'overlay');
    const mixin = t.write('my-mixin.yml', [
      'rule_labels: {team: ml-platform}',
      'alerts:',
      '  HyphaServiceClientIdChurn: {disabled: true}',
      '  HyphaServeAppUnhealthy: {severity: critical, for: 10m}',
      '',
    ].join('\n'));
    const r = await runCli(['rules', `--config=${mixin}`, `--out=${path.join(overlay, 'my-rules')}`]);
    expect(r.code).toBe(0);
    const base = path.join(root, 'deploy/kubernetes');
    // The overlay of docs/install.md as written, its base path pointed at this checkout's.
    const doc = installDocBlock('# my-overlay/kustomization.yaml');
    expect(doc).toContain('../deploy/kubernetes');
    fs.writeFileSync(path.join(overlay, 'kustomization.yaml'), doc.replace('../deploy/kubernetes', path.relative(overlay, base)));
    const built = await run(tool('KUSTOMIZE'), ['build', overlay]);
    expect(built.out).not.toMatch(/Error/);
    expect(built.code).toBe(0);
    const objects = YAML.parseAllDocuments(built.stdout).map((d) => d.toJS() as { kind: string; spec: { groups: Group[] } } | null).filter((o) => o !== null);
    const rules = objects.filter((o) => o?.kind === 'PrometheusRule');
    expect(rules).toHaveLength(1);
    const variant = YAML.parse(fs.readFileSync(path.join(overlay, 'my-rules/prometheusrule.yaml'), 'utf8')) as { spec: { groups: Group[] } };
    expect(rules[0]?.spec).toEqual(variant.spec);
    const all = (rules[0]?.spec.groups ?? []).flatMap((g) => g.rules);
    expect(all.find((x) => x.alert === 'HyphaServiceClientIdChurn')).toBeUndefined();
    expect(all.find((x) => x.alert === 'HyphaServeAppUnhealthy')).toMatchObject({ for: '10m', labels: { severity: 'critical', team: 'ml-platform' } });
    // The rest of the base is as without the overlay.
    const plain = await run(tool('KUSTOMIZE'), ['build', base]);
    const others = (text: string) => YAML.parseAllDocuments(text).map((d) => d.toJS() as { kind: string } | null).filter((o) => o !== null && o.kind !== 'PrometheusRule');
    expect(others(built.stdout)).toEqual(others(plain.stdout));
  });
});
