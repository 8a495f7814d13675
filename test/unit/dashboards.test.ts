// The Grafana dashboards: committed JSON in sync with the TypeScript sources, the conventions of
// grafana/dashboard-linter (re-implemented in dashboards/lib/lint.ts, with mutations proving each
// rule can fail), PromQL accepted by the real promtool 2.42, runbook pages, provisioning files,
// and the side table of panels that are empty while healthy.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import type { Dashboard, Panel } from '@grafana/grafana-foundation-sdk/dashboard';
import { JSON_DIR, renderDashboards } from '../../dashboards/build';
import { EMPTY_WHEN_HEALTHY, FAULT_SCENARIOS } from '../../dashboards/empty-when-healthy';
import { DATASOURCE_UID, RAY_DASHBOARD_VARIABLES, RAY_SERVE_DASHBOARD_UID, RAY_SERVE_DEPLOYMENT_DASHBOARD_UID, RAY_SERVE_SERIES, RUNBOOK_BASE } from '../../dashboards/lib/conventions';
import { allPanels, dashboardQueries, substitute, variables } from '../../dashboards/lib/inventory';
import { LintContext, lintDashboard } from '../../dashboards/lib/lint';
import { loadRules } from '../helpers/rule-metrics';
import { FAMILIES } from '../../src/metrics/families';
import { repoRoot } from '../../src/util/repo-root';

jest.setTimeout(60_000);

const ROOT = repoRoot();

/** Every exporter metric, from the family table (src/metrics/families.ts), histograms by their series. */
const CONTRACT_METRICS = FAMILIES.flatMap((f) => (f.type === 'histogram' ? ['_bucket', '_count', '_sum'].map((x) => `${f.name}${x}`) : [f.name]));

function lintContext(): LintContext {
  return {
    runbookPages: new Set(fs.readdirSync(path.join(ROOT, 'docs', 'runbooks'))),
    exporterMetrics: new Set(CONTRACT_METRICS),
    recordedSeries: new Set(loadRules(ROOT).filter((r) => r.kind === 'record').map((r) => r.name)),
  };
}

const rendered = renderDashboards();
const byUid = (uid: string): Dashboard => {
  const r = rendered.find((x) => x.uid === uid);
  if (!r) throw new Error(`no dashboard ${uid}`);
  return r.json;
};
const clone = (d: Dashboard): Dashboard => JSON.parse(JSON.stringify(d)) as Dashboard;
const panelByTitle = (d: Dashboard, title: string): Panel => {
  const p = allPanels(d).find((x) => x.title === title);
  if (!p) throw new Error(`no panel ${title}`);
  return p;
};
const targetsOf = (p: Panel) => (p.targets ?? []) as unknown as Array<{ refId: string; expr: string }>;

describe('generated JSON', () => {
  it('dashboards/json/ holds exactly what the sources generate (run: node dist/dashboards/build.js)', () => {
    const dir = path.join(ROOT, JSON_DIR);
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
    expect(files).toEqual(rendered.map((r) => r.file).sort());
    for (const r of rendered) {
      const committed = fs.readFileSync(path.join(dir, r.file), 'utf8');
      // toEqual on the parsed JSON first gives a readable diff; the text check catches formatting.
      expect(JSON.parse(committed)).toEqual(JSON.parse(r.text));
      expect(committed).toBe(r.text);
    }
  });

  it('rendering is deterministic', () => {
    expect(renderDashboards().map((r) => r.text)).toEqual(rendered.map((r) => r.text));
  });

  it('has the three dashboards, with unique uids and titles', () => {
    expect(rendered.map((r) => r.uid).sort()).toEqual(['hypha-serve-exporter-health', 'hypha-serve-overview', 'hypha-serve-service-identity']);
    const titles = rendered.map((r) => r.json.title);
    expect(new Set(titles).size).toBe(titles.length);
  });
});

describe('lint (grafana/dashboard-linter rules and ours)', () => {
  const ctx = lintContext();

  it.each(rendered.map((r) => [r.uid, r.json] as const))('%s follows every rule', (_uid, json) => {
    expect(lintDashboard(json, ctx)).toEqual([]);
  });

  // Each mutation breaks one rule in a copy of a real dashboard; the lint must name it.
  const mutations: Array<[string, (d: Dashboard) => void, RegExp]> = [
    ['a target without the instance filter', (d) => { const t = targetsOf(panelByTitle(d, 'Deployments scaled to zero'))[0]; t.expr = t.expr.replace(',instance=~"$instance"', ''); }, /does not filter instance=~"\$instance"/],
    ['a selector in a binary expression without the job filter', (d) => { const t = targetsOf(panelByTitle(d, 'Serve proxy readiness per node'))[0]; t.expr = t.expr.replace(/(hypha_serve_proxy_head\{cluster=~"\$cluster",)job=~"\$job",/, '$1'); }, /hypha_serve_proxy_head\{.*does not filter job/],
    ['rate over a fixed window', (d) => { const t = targetsOf(panelByTitle(d, 'Registration client id changes'))[0]; t.expr = t.expr.replace('[$__rate_interval]', '[5m]'); }, /increase\(\) over \[5m\] instead of \[\$__rate_interval\]/],
    ['a bare counter', (d) => { const t = targetsOf(panelByTitle(d, 'Registration client id changes'))[0]; t.expr = 'hypha_serve_app_registration_client_id_changes_total{job=~"$job",instance=~"$instance"}'; }, /counter hypha_serve_app_registration_client_id_changes_total is not wrapped/],
    ['a PromQL syntax error', (d) => { targetsOf(panelByTitle(d, 'Deployments scaled to zero'))[0].expr += ')'; }, /PromQL syntax error/],
    ['a misspelt metric', (d) => { const t = targetsOf(panelByTitle(d, 'Deployments scaled to zero'))[0]; t.expr = t.expr.replace('scaled_to_zero', 'scaled_to_nil'); }, /hypha_serve_deployment_scaled_to_nil is not an exporter metric/],
    ['an unknown recorded series', (d) => { const t = targetsOf(panelByTitle(d, 'Replicas short of target'))[0]; t.expr = t.expr.replace('hypha_serve_deployment_target_replicas{', 'ray_cluster_app_deployment:hypha_serve_deployment_target_replicas:max{'); }, /ray_cluster_app_deployment:hypha_serve_deployment_target_replicas:max is not recorded by rules/],
    ['the Ray cluster filtered as the topology label', (d) => { const t = targetsOf(panelByTitle(d, 'Deployments'))[0]; t.expr = t.expr.replace('ray_cluster=~"$ray_cluster"', 'cluster=~"$ray_cluster"'); }, /filters cluster on \$ray_cluster; cluster is the topology label/],
    ['a target without the cluster filter', (d) => { const t = targetsOf(panelByTitle(d, 'Deployments scaled to zero'))[0]; t.expr = t.expr.replace('cluster=~"$cluster",', ''); }, /does not filter cluster=~"\$cluster"/],
    ['the job variable not chained from cluster', (d) => { const v = variables(d)[2]; v.query = String(v.query).replace('{cluster=~"$cluster"}', ''); }, /variable job: .* does not filter cluster=~"\$cluster"/],
    ['the cluster variable after job', (d) => { const l = d.templating?.list ?? []; [l[1], l[2]] = [l[2], l[1]]; }, /variables start datasource, job, cluster, instance, want datasource, cluster, job, instance/],
    ['the cluster variable with All = .+ (a single Prometheus has no cluster label)', (d) => { variables(d)[1].allValue = '.+'; }, /variable cluster: allValue \.\+, want \.\*/],
    ['a Ray query without the app filter', (d) => { const t = targetsOf(panelByTitle(d, 'HTTP requests per second (Ray Serve)'))[0]; t.expr = t.expr.replace(',application=~"$app"', ''); }, /ray_serve_num_http_requests_total\{cluster=~"\$cluster"\} does not filter application=~"\$app"/],
    ['a Ray query without the cluster filter', (d) => { const t = targetsOf(panelByTitle(d, 'HTTP errors per second (Ray Serve)'))[0]; t.expr = t.expr.replace('cluster=~"$cluster",', ''); }, /ray_serve_num_http_error_requests_total\{application=~"\$app"\} does not filter cluster/],
    ['a Ray series not in RAY_SERVE_SERIES', (d) => { const t = targetsOf(panelByTitle(d, 'HTTP requests per second (Ray Serve)'))[0]; t.expr = t.expr.replace('num_http_requests', 'num_grpc_requests'); }, /unexpected series ray_serve_num_grpc_requests_total/],
    ['a link to a dashboard that is not Ray\'s', (d) => { const l = panelByTitle(d, 'HTTP requests per second (Ray Serve)').fieldConfig?.defaults.links; if (l) l[0].url = '/d/rayDefaultDashboard?${__url_time_range}'; }, /link to dashboard rayDefaultDashboard, which is not one of Ray's Serve dashboards/],
    ['a data link to Ray that drops the time range', (d) => { const l = panelByTitle(d, 'HTTP errors per second (Ray Serve)').fieldConfig?.defaults.links; if (l?.[1]?.url) l[1].url = l[1].url.replace('${__url_time_range}&', ''); }, /link to rayServeDeploymentDashboard drops the time range/],
    ['a dashboard link to Ray without keepTime', (d) => { const l = (d.links ?? []).find((x) => x.url?.startsWith('/d/rayServeDashboard')); if (l) l.keepTime = false; }, /link "Ray Serve": link to rayServeDashboard drops the time range/],
    ['a link using an undefined variable', (d) => { const l = (d.links ?? []).find((x) => x.url?.startsWith('/d/rayServeDashboard')); if (l) l.url = `${l.url}&var-Cluster=\${ray_io_cluster}`; }, /\$ray_io_cluster is used but not defined/],
    ['a panel without unit', (d) => { delete panelByTitle(d, 'Deployments scaled to zero').fieldConfig?.defaults.unit; }, /"Deployments scaled to zero": no unit/],
    ['an invalid unit', (d) => { const fc = panelByTitle(d, 'Deployments scaled to zero').fieldConfig; if (fc) fc.defaults.unit = 'seconds'; }, /unknown unit seconds/],
    ['a panel without description', (d) => { panelByTitle(d, 'Deployments').description = ''; }, /"Deployments": no description/],
    ['a panel without title', (d) => { panelByTitle(d, 'Deployments').title = ''; }, /no title/],
    ['a panel without targets', (d) => { panelByTitle(d, 'Deployments').targets = []; }, /no targets/],
    ['a panel on a fixed datasource', (d) => { panelByTitle(d, 'Deployments').datasource = { type: 'prometheus', uid: 'P1' }; }, /"Deployments": datasource is not \$datasource/],
    ['a repeated panel id', (d) => { const ps = allPanels(d); ps[1].id = ps[0].id; }, /repeated panel ids/],
    ['an unused variable', (d) => { d.templating?.list?.push({ ...variables(d)[1], name: 'unused', label: 'unused' }); }, /variable unused is not used/],
    ['a variable used but not defined', (d) => { const t = targetsOf(panelByTitle(d, 'Deployments'))[0]; t.expr = t.expr.replace('"$app"', '"$application"'); }, /\$application is used but not defined/],
    ['two datasource variables', (d) => { d.templating?.list?.push({ ...variables(d)[0], name: 'datasource2' }); }, /2 datasource variables/],
    ['a datasource variable with another label', (d) => { variables(d)[0].label = 'Datasource'; }, /labelled Datasource, want "Data Source"/],
    ['job without All = .+', (d) => { variables(d)[2].allValue = '.*'; }, /variable job: allValue \.\*, want \.\+/],
    ['instance not multi-select', (d) => { variables(d)[3].multi = false; }, /variable instance: not multi-select/],
    ['a variable refreshed only on load', (d) => { variables(d)[4].refresh = 1; }, /refresh 1, want 2/],
    ['a variable query without the job filter', (d) => { const v = variables(d)[4]; v.query = String(v.query).replace('job=~"$job",', ''); }, /variable ray_cluster: .* does not filter job/],
    ['a runbook link to a missing page', (d) => { const l = panelByTitle(d, 'Deployments').links; if (l) l[0].url = `${RUNBOOK_BASE}/NoSuchAlert.md`; }, /runbook page NoSuchAlert\.md is not in docs\/runbooks/],
    ['a runbook link to a section of the old single file', (d) => { const l = panelByTitle(d, 'Deployments').links; if (l) l[0].url = `${RUNBOOK_BASE}.md#hyphaserveappunhealthy`; }, /is not a page of docs\/runbooks/],
    ['overlapping panels', (d) => { const ps = allPanels(d); if (ps[1].gridPos && ps[0].gridPos) ps[1].gridPos = { ...ps[0].gridPos }; }, /overlap/],
    ['a graph with its legend hidden', (d) => { (panelByTitle(d, 'Replicas by state').options as { legend: { showLegend: boolean } }).legend.showLegend = false; }, /"Replicas by state": legend hidden/],
    ['an editable dashboard', (d) => { d.editable = true; }, /editable/],
  ];
  it.each(mutations)('catches %s', (_what, mutate, expected) => {
    const d = clone(byUid('hypha-serve-overview'));
    mutate(d);
    const problems = lintDashboard(d, ctx);
    expect(problems.join('\n')).toMatch(expected);
  });

  // Without the topology variable a dashboard fails, whether its queries still name $cluster or not.
  it.each(rendered.map((r) => [r.uid, r.json] as const))('%s without the cluster variable fails', (_uid, json) => {
    const withoutVar = clone(json);
    withoutVar.templating = { list: variables(withoutVar).filter((v) => v.name !== 'cluster') };
    const left = lintDashboard(withoutVar, ctx).join('\n');
    expect(left).toMatch(/: no cluster variable/);
    expect(left).toMatch(/\$cluster is used but not defined/);
    const stripped = JSON.parse(JSON.stringify(withoutVar).replace(/\bcluster=~\\"\$cluster\\",?/g, '')) as Dashboard;
    expect(JSON.stringify(stripped)).not.toContain('$cluster');
    const gone = lintDashboard(stripped, ctx).join('\n');
    expect(gone).toMatch(/: no cluster variable/);
    expect(gone).toMatch(/does not filter cluster=~"\$cluster"/);
  });

  it('every panel and variable query filters the topology: cluster=~"$cluster" on every selector', () => {
    for (const r of rendered) {
      const v = variables(r.json);
      expect(v.map((x) => x.name).slice(0, 4)).toEqual(['datasource', 'cluster', 'job', 'instance']);
      expect(v[1]).toMatchObject({ query: 'label_values(hypha_serve_exporter_build_info, cluster)', allValue: '.*', includeAll: true, multi: true });
      for (const q of dashboardQueries(r.json).filter((x) => x.panel !== 'variable:cluster')) expect(q.expr).toContain('cluster=~"$cluster"');
    }
  });

  it('every alert of rules/alerts.yml is linked from at least one panel', () => {
    const alerts = loadRules(ROOT).filter((r) => r.kind === 'alert').map((r) => r.name);
    const linked = new Set<string>();
    for (const r of rendered) for (const p of allPanels(r.json)) for (const l of p.links ?? []) if (l.url?.startsWith(`${RUNBOOK_BASE}/`)) linked.add(l.url.slice(RUNBOOK_BASE.length + 1));
    expect(alerts.length).toBeGreaterThan(0);
    expect(alerts.filter((a) => !linked.has(`${a}.md`))).toEqual([]);
  });

  it('uses the same runbook base as the alerts', () => {
    const urls = loadRules(ROOT).filter((r) => r.kind === 'alert').map((r) => r.annotations.runbook_url);
    for (const u of urls) expect(u.startsWith(`${RUNBOOK_BASE}/`)).toBe(true);
  });
});

describe("Ray's Serve dashboards and metrics, as the pinned Ray (.venv/ray) defines them", () => {
  // scripts/setup.sh installs Ray into .venv/ray; the uids and variable names the links use must be Ray's.
  const sitePackages = path.join(ROOT, '.venv', 'ray', 'lib');
  const rayDir = fs.readdirSync(sitePackages).map((py) => path.join(sitePackages, py, 'site-packages', 'ray')).find((d) => fs.existsSync(d));
  const dashboardsDir = path.join(rayDir ?? '', 'dashboard', 'modules', 'metrics', 'dashboards');
  const read = (f: string) => fs.readFileSync(path.join(dashboardsDir, f), 'utf8');

  it.each([
    [RAY_SERVE_DASHBOARD_UID, 'serve_dashboard_panels.py', 'serve_grafana_dashboard_base.json'],
    [RAY_SERVE_DEPLOYMENT_DASHBOARD_UID, 'serve_deployment_dashboard_panels.py', 'serve_deployment_grafana_dashboard_base.json'],
  ])('%s is the default_uid of %s, whose variables the links set exist', (uid, panels, base) => {
    expect(read(panels)).toContain(`default_uid="${uid}"`);
    const json = JSON.parse(read(base)) as { uid: string; templating: { list: Array<{ name: string }> } };
    expect(json.uid).toBe(uid);
    const names = json.templating.list.map((v) => v.name);
    for (const v of Object.values(RAY_DASHBOARD_VARIABLES)) expect(names).toContain(v);
    const links = rendered.flatMap((r) => [...(r.json.links ?? []), ...allPanels(r.json).flatMap((p) => [...(p.links ?? []), ...(p.fieldConfig?.defaults.links ?? [])])]);
    expect(links.filter((l) => l.url?.startsWith(`/d/${uid}?`)).length).toBeGreaterThanOrEqual(3);
    // A Ray series' link carries its application and RayCluster into Ray's variables (Ray filters on both).
    const dataLinks = rendered.flatMap((r) => allPanels(r.json).flatMap((p) => p.fieldConfig?.defaults.links ?? [])).filter((l) => l.url?.startsWith(`/d/${uid}?`));
    expect(dataLinks.length).toBeGreaterThanOrEqual(2);
    for (const l of dataLinks) {
      expect(l.url).toContain(`&var-${RAY_DASHBOARD_VARIABLES.application}=\${__field.labels.application}`);
      expect(l.url).toContain(`&var-${RAY_DASHBOARD_VARIABLES.cluster}=\${__field.labels.ray_io_cluster}`);
    }
    expect(read(panels)).toContain('ray_io_cluster=~"$Cluster"');
  });

  it("the Ray panels read Ray's own counters with the labels Ray gives them", () => {
    const ingress = fs.readFileSync(path.join(rayDir ?? '', 'serve', '_private', 'request_ingress_metrics.py'), 'utf8');
    expect(ingress).toMatch(/f"serve_num_\{protocol_name\}_requests",\s*description=[^)]*?,\s*tag_keys=\("route", "method", "application", "status_code"\)/);
    expect(ingress).toMatch(/f"serve_num_\{protocol_name\}_error_requests",[\s\S]*?"application",\s*\),/);
    // Ray's own Serve dashboard queries the same names (exported with the ray_ prefix and _total).
    for (const m of RAY_SERVE_SERIES) expect(read('serve_dashboard_panels.py')).toContain(`${m}{{application=~"$Application"`);
  });
});

describe('PromQL accepted by the real Prometheus parser (promtool 2.42)', () => {
  function promtoolCheck(exprs: string[]): { code: number | null; out: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dash-promql-'));
    try {
      const file = path.join(dir, 'queries.yml');
      const rules = exprs.map((expr, i) => ({ record: `dashboard:query_${i}:check`, expr }));
      fs.writeFileSync(file, stringify({ groups: [{ name: 'dashboard-queries', rules }] }));
      const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 30_000 });
      if (r.error) throw r.error;
      return { code: r.status, out: `${r.stdout}${r.stderr}` };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  const all = rendered.flatMap((r) => dashboardQueries(r.json));
  const values = { cluster: { all: true }, job: { all: true }, instance: { all: true }, ray_cluster: { all: true }, app: { all: true }, workspace: { all: true }, service: { all: true }, holder: { all: true } } as const;

  it('every panel, annotation and variable query parses', () => {
    expect(all.filter((q) => q.kind === 'panel').length).toBeGreaterThan(50);
    const exprs = all.map((q) => substitute(q.expr, values));
    const r = promtoolCheck(exprs);
    expect(r.out).toContain(`SUCCESS: ${exprs.length} rules found`);
    expect(r.code).toBe(0);
  });

  it('the same check rejects a broken query', () => {
    const r = promtoolCheck(['sum(rate(up[1m])']);
    expect(r.code).not.toBe(0);
  });
});

describe('template substitution', () => {
  it('writes allValue for All and escapes a concrete value as Grafana does', () => {
    const expr = 'x{cluster=~"$cluster",job=~"$job",instance=~"${instance}"}[$__rate_interval]';
    // cluster's All also matches the series of a Prometheus without that label.
    expect(substitute(expr, { cluster: { all: true }, job: { all: true }, instance: { value: '127.0.0.1:9731' } })).toBe('x{cluster=~".*",job=~".+",instance=~"127\\\\.0\\\\.0\\\\.1:9731"}[1m]');
    expect(() => substitute(expr, { cluster: { all: true }, job: { all: true } })).toThrow(/\$\{instance\}/);
  });
});

describe('panels empty while healthy (dashboards/empty-when-healthy.ts)', () => {
  const docs = fs.readFileSync(path.join(ROOT, 'docs', 'dashboards.md'), 'utf8');

  it.each(EMPTY_WHEN_HEALTHY.map((e) => [`${e.dashboard} / ${e.panel} ${e.refIds.join(',')}`, e] as const))('%s exists and is documented', (_n, e) => {
    const d = byUid(e.dashboard);
    const queries = dashboardQueries(d).filter((q) => q.panel === e.panel);
    expect(queries.length).toBeGreaterThan(0);
    for (const refId of e.refIds) expect(queries.map((q) => q.refId)).toContain(refId);
    expect(Object.keys(FAULT_SCENARIOS)).toContain(e.scenario);
    if (!e.panel.startsWith('annotation:')) expect(panelByTitle(d, e.panel).description ?? '').toMatch(/empty while/i);
    expect(docs).toContain(e.panel.replace(/^annotation:/, ''));
  });

  it('no panel says it is empty while healthy without an entry', () => {
    for (const r of rendered) {
      for (const p of allPanels(r.json)) {
        if (/empty while/i.test(p.description ?? '')) {
          expect(EMPTY_WHEN_HEALTHY.some((e) => e.dashboard === r.uid && e.panel === p.title)).toBe(true);
        }
      }
    }
  });
});

describe('provisioning and docs', () => {
  it('the datasource file provisions a Prometheus with the uid the dashboards default to', () => {
    const doc = parse(fs.readFileSync(path.join(ROOT, 'dashboards/provisioning/datasources/prometheus.yaml'), 'utf8')) as {
      apiVersion: number;
      datasources: Array<{ uid: string; type: string; name: string; url: string }>;
    };
    expect(doc.apiVersion).toBe(1);
    expect(doc.datasources).toHaveLength(1);
    expect(doc.datasources[0]).toMatchObject({ uid: DATASOURCE_UID, type: 'prometheus' });
    for (const r of rendered) {
      const ds = variables(r.json).find((v) => v.type === 'datasource');
      expect(ds?.current?.value).toBe(DATASOURCE_UID);
      expect(ds?.current?.text).toBe(doc.datasources[0].name);
    }
  });

  it('the dashboard provider reads a directory of files', () => {
    const doc = parse(fs.readFileSync(path.join(ROOT, 'dashboards/provisioning/dashboards/hypha-serve.yaml'), 'utf8')) as {
      apiVersion: number;
      providers: Array<{ type: string; options: { path: string; foldersFromFilesStructure?: boolean }; folder?: string }>;
    };
    expect(doc.apiVersion).toBe(1);
    expect(doc.providers).toHaveLength(1);
    expect(doc.providers[0].type).toBe('file');
    expect(doc.providers[0].options.path).toMatch(/^\//);
  });

  it('docs/dashboards.md names every dashboard with its uid and file', () => {
    const docs = fs.readFileSync(path.join(ROOT, 'docs', 'dashboards.md'), 'utf8');
    for (const r of rendered) {
      expect(docs).toContain(r.json.title ?? '');
      expect(docs).toContain(r.uid);
      expect(docs).toContain(r.file);
    }
    expect(docs).toContain(DATASOURCE_UID);
  });
});
