// Structural lint of the generated dashboards, modelled on grafana/dashboard-linter's rules (its
// Go binary is on no package registry): variables, datasource references, PromQL filters and
// ranges, counters, units, titles, descriptions, ids, runbook links; and ours: the topology variable
// `cluster` on every dashboard, filtered by every query, with job and the rest chained from it.
import type { Dashboard, Panel, VariableModel } from '@grafana/grafana-foundation-sdk/dashboard';
import { allValueOf, DASHBOARD_TAG, RAY_SERVE_DASHBOARD_UID, RAY_SERVE_DEPLOYMENT_DASHBOARD_UID, RAY_SERVE_SERIES, RUNBOOK_BASE, TOPOLOGY_LABEL } from './conventions';
import { allPanels, dashboardQueries, rowPanels, variableQueryAsPromql, variables, variablesIn } from './inventory';
import { analysePromql } from './promql';

export interface LintContext {
  /** File names of the pages in docs/runbooks (e.g. HyphaServeSourceDown.md, README.md). */
  runbookPages: ReadonlySet<string>;
  /** Exporter metric names as they appear in /metrics (histograms as _bucket/_count/_sum). */
  exporterMetrics: ReadonlySet<string>;
  /** Series recorded by rules/*.yml. */
  recordedSeries: ReadonlySet<string>;
}

/** Prometheus' own series that a dashboard may read besides the exporter's. */
const PROMETHEUS_SERIES = new Set(['up', 'scrape_duration_seconds', 'scrape_samples_scraped', 'scrape_series_added', 'scrape_samples_post_metric_relabeling']);

/** Grafana unit ids the pack may use (a subset of Grafana's; extend when a panel needs another). */
export const VALID_UNITS = new Set([
  'none', 'short', 'percent', 'percentunit', 's', 'ms', 'µs', 'ns', 'dtdurations', 'dtdurationms', 'dateTimeAsIso',
  'dateTimeFromNow', 'ops', 'reqps', 'rps', 'wps', 'bytes', 'decbytes', 'Bps', 'bps', 'hertz', 'bool', 'bool_yes_no',
]);

const RATE_FUNCTIONS = new Set(['rate', 'irate', 'increase']);
const COUNTER_SUFFIX = /_(total|bucket|count|sum)$/;
const REQUIRED_MATCHERS: ReadonlyArray<readonly [string, string]> = [
  [TOPOLOGY_LABEL, `$${TOPOLOGY_LABEL}`],
  ['job', '$job'],
  ['instance', '$instance'],
];
/** Ray's own series come from Ray's scrape job: the topology and the app (Ray's label `application`). */
const RAY_REQUIRED_MATCHERS: ReadonlyArray<readonly [string, string]> = [
  [TOPOLOGY_LABEL, `$${TOPOLOGY_LABEL}`],
  ['application', '$app'],
];
const RAY_SERIES: ReadonlySet<string> = new Set(RAY_SERVE_SERIES);
/** The variables every dashboard starts with, in this order: each query variable filters on those before it. */
const LEADING_VARIABLES = ['datasource', TOPOLOGY_LABEL, 'job', 'instance'];
/** The only Grafana dashboards outside the pack that a link may open, by uid. */
const RAY_DASHBOARD_UIDS = new Set([RAY_SERVE_DASHBOARD_UID, RAY_SERVE_DEPLOYMENT_DASHBOARD_UID]);

function isPromDs(ds: unknown): boolean {
  const r = ds as { type?: unknown; uid?: unknown } | undefined;
  return r?.type === 'prometheus' && (r.uid === '${datasource}' || r.uid === '$datasource');
}

/** Problems with one PromQL expression as a dashboard writes it. */
export function lintExpr(expr: string, ctx: LintContext, where: string, required = REQUIRED_MATCHERS): string[] {
  const problems: string[] = [];
  const facts = analysePromql(expr);
  for (const e of facts.errors) problems.push(`${where}: PromQL ${e}`);
  if (facts.selectors.length === 0) problems.push(`${where}: no series selector`);
  for (const s of facts.selectors) {
    const ray = RAY_SERIES.has(s.metric ?? '');
    for (const [label, value] of ray ? RAY_REQUIRED_MATCHERS : required) {
      if (!s.matchers.some((m) => m.name === label && m.op === '=~' && m.value === value)) {
        problems.push(`${where}: ${s.text} does not filter ${label}=~"${value}"`);
      }
    }
    const metric = s.metric ?? '';
    if (metric.includes(':')) {
      if (!ctx.recordedSeries.has(metric)) problems.push(`${where}: ${metric} is not recorded by rules/*.yml`);
    } else if (metric.startsWith('hypha_serve_')) {
      if (!ctx.exporterMetrics.has(metric)) problems.push(`${where}: ${metric} is not an exporter metric`);
    } else if (!PROMETHEUS_SERIES.has(metric) && !ray) {
      problems.push(`${where}: unexpected series ${metric || s.text}`);
    }
    if (COUNTER_SUFFIX.test(metric) && !(s.rangeFunction && RATE_FUNCTIONS.has(s.rangeFunction))) {
      problems.push(`${where}: counter ${metric} is not wrapped in rate/irate/increase`);
    }
    // `cluster` is the topology (Prometheus/Kubernetes cluster) and only ever the variable of that name; the Ray cluster is ray_cluster.
    for (const m of s.matchers) {
      if (m.name === TOPOLOGY_LABEL && m.value !== `$${TOPOLOGY_LABEL}`) problems.push(`${where}: ${s.text} filters cluster on ${m.value}; cluster is the topology label, the Ray cluster label is ray_cluster`);
    }
  }
  for (const c of facts.rangeCalls) {
    if (RATE_FUNCTIONS.has(c.fn) && c.range !== '$__rate_interval') problems.push(`${where}: ${c.fn}() over [${c.range}] instead of [$__rate_interval]`);
  }
  return problems;
}

function lintVariables(d: Dashboard, ctx: LintContext, where: string): string[] {
  const problems: string[] = [];
  const vars = variables(d);
  const names = vars.map((v) => v.name);
  const ds = vars.filter((v) => v.type === 'datasource');
  if (ds.length !== 1) problems.push(`${where}: ${ds.length} datasource variables, want exactly 1`);
  for (const v of ds) {
    if (v.name !== 'datasource') problems.push(`${where}: datasource variable named ${v.name}, want "datasource"`);
    if (v.label !== 'Data Source') problems.push(`${where}: datasource variable labelled ${String(v.label)}, want "Data Source"`);
    if (v.query !== 'prometheus') problems.push(`${where}: datasource variable is not of type prometheus`);
  }
  for (const req of LEADING_VARIABLES) if (!names.includes(req)) problems.push(`${where}: no ${req} variable`);
  if (LEADING_VARIABLES.every((n) => names.includes(n)) && names.slice(0, LEADING_VARIABLES.length).join() !== LEADING_VARIABLES.join()) {
    problems.push(`${where}: variables start ${names.slice(0, LEADING_VARIABLES.length).join(', ')}, want ${LEADING_VARIABLES.join(', ')}`);
  }
  if (new Set(names).size !== names.length) problems.push(`${where}: duplicate variable names`);
  // A variable may only filter on the ones defined before it (job before instance, ...).
  const before: string[] = [];
  for (const v of vars) {
    const w = `${where} variable ${v.name}`;
    if (v.type === 'query') problems.push(...lintQueryVariable(v, before, ctx, w));
    else if (v.type !== 'datasource') problems.push(`${w}: type ${v.type} not expected`);
    before.push(v.name);
  }
  // Every variable is used: by a panel, a target, an annotation or another variable.
  const used = new Set<string>();
  for (const p of allPanels(d)) {
    for (const n of variablesIn(JSON.stringify(p.datasource ?? {}))) used.add(n);
    for (const t of p.targets ?? []) for (const n of variablesIn(JSON.stringify(t))) used.add(n);
  }
  for (const a of d.annotations?.list ?? []) for (const n of variablesIn(JSON.stringify(a))) used.add(n);
  // Links may carry variables too; Grafana's own (${__url_time_range}, ${__field...}) are not template variables.
  const links = [...(d.links ?? []), ...allPanels(d).flatMap((p) => [...(p.links ?? []), ...((p.fieldConfig?.defaults?.links ?? []) as Array<{ url?: string }>)])];
  for (const l of links) for (const n of variablesIn(l.url ?? '')) if (!n.startsWith('__')) used.add(n);
  for (const v of vars) if (typeof v.query === 'string') for (const n of variablesIn(v.query)) if (n !== v.name) used.add(n);
  for (const v of vars) if (v.datasource) for (const n of variablesIn(JSON.stringify(v.datasource))) used.add(n);
  for (const n of names) if (!used.has(n)) problems.push(`${where}: variable ${n} is not used`);
  for (const n of used) if (!names.includes(n)) problems.push(`${where}: $${n} is used but not defined`);
  return problems;
}

function lintQueryVariable(v: VariableModel, before: readonly string[], ctx: LintContext, w: string): string[] {
  const problems: string[] = [];
  if (!v.label) problems.push(`${w}: no label`);
  if ((v.name === 'job' || v.name === 'instance') && v.label !== v.name) problems.push(`${w}: labelled ${String(v.label)}, want ${v.name}`);
  if (!isPromDs(v.datasource)) problems.push(`${w}: datasource is not $datasource`);
  if (v.multi !== true) problems.push(`${w}: not multi-select`);
  if (v.includeAll !== true) problems.push(`${w}: no All option`);
  if (v.allValue !== allValueOf(v.name)) problems.push(`${w}: allValue ${String(v.allValue)}, want ${allValueOf(v.name)}`);
  if (v.refresh !== 2) problems.push(`${w}: refresh ${String(v.refresh)}, want 2 (on time range change)`);
  if (!v.description) problems.push(`${w}: no description`);
  const q = typeof v.query === 'string' ? variableQueryAsPromql(v.query) : undefined;
  if (!q) {
    problems.push(`${w}: query is not label_values(<promql>, <label>)`);
    return problems;
  }
  if (q.label !== v.name) problems.push(`${w}: lists values of ${q.label}, not of ${v.name}`);
  // cluster filters nothing; job filters cluster; instance both; the rest all three.
  const required = REQUIRED_MATCHERS.filter(([label]) => before.includes(label));
  problems.push(...lintExpr(q.expr, ctx, w, required));
  for (const n of variablesIn(v.query as string)) if (!before.includes(n)) problems.push(`${w}: refers to $${n}, defined after it`);
  return problems;
}

function lintPanel(p: Panel, ctx: LintContext, where: string): string[] {
  const problems: string[] = [];
  const w = `${where} panel "${p.title ?? p.id}"`;
  if (!p.title) problems.push(`${w}: no title`);
  if (!p.description || p.description.length < 20) problems.push(`${w}: no description`);
  if (!isPromDs(p.datasource)) problems.push(`${w}: datasource is not $datasource`);
  const unit = p.fieldConfig?.defaults?.unit;
  if (!unit) problems.push(`${w}: no unit`);
  else if (!VALID_UNITS.has(unit)) problems.push(`${w}: unknown unit ${unit}`);
  if (p.type === 'timeseries' || p.type === 'state-timeline') {
    const legend = (p.options as { legend?: { showLegend?: boolean } } | undefined)?.legend;
    if (legend?.showLegend !== true) problems.push(`${w}: legend hidden (series cannot be told apart)`);
  }
  const targets = (p.targets ?? []) as Array<{ refId?: string; expr?: string; datasource?: unknown }>;
  if (targets.length === 0) problems.push(`${w}: no targets`);
  const refIds = targets.map((t) => t.refId ?? '');
  if (refIds.some((r) => r === '') || new Set(refIds).size !== refIds.length) problems.push(`${w}: refIds missing or repeated`);
  for (const t of targets) {
    if (!isPromDs(t.datasource)) problems.push(`${w} ${t.refId}: datasource is not $datasource`);
    problems.push(...lintExpr(t.expr ?? '', ctx, `${w} ${t.refId}`));
  }
  const dataLinks = (p.fieldConfig?.defaults?.links ?? []) as Array<{ title?: string; url?: string }>;
  for (const l of [...(p.links ?? []), ...dataLinks]) {
    if (!l.title || !l.url) problems.push(`${w}: link without title or url`);
    else problems.push(...lintRunbookUrl(l.url, ctx, w), ...lintDashboardUrl(l.url, w, false));
  }
  const g = p.gridPos;
  if (!g || g.w <= 0 || g.h <= 0 || g.x < 0 || g.x + g.w > 24) problems.push(`${w}: gridPos ${JSON.stringify(g)} outside the 24-column grid`);
  return problems;
}

/**
 * A link to a Grafana dashboard by uid (/d/<uid>) opens one of Ray's Serve dashboards (the pack's own are
 * linked by tag) and keeps the time range: `${__url_time_range}` in the url, or keepTime on a dashboard link.
 */
function lintDashboardUrl(url: string, w: string, keepTime: boolean): string[] {
  const m = /^\/d\/([^/?#]+)/.exec(url);
  if (!m) return [];
  const problems: string[] = [];
  if (!RAY_DASHBOARD_UIDS.has(m[1])) problems.push(`${w}: link to dashboard ${m[1]}, which is not one of Ray's Serve dashboards (${[...RAY_DASHBOARD_UIDS].join(', ')})`);
  if (!keepTime && !url.includes('${__url_time_range}')) problems.push(`${w}: link to ${m[1]} drops the time range`);
  return problems;
}

function lintRunbookUrl(url: string, ctx: LintContext, w: string): string[] {
  if (!url.startsWith(RUNBOOK_BASE)) return [];
  const page = /^\/([^/#]+\.md)$/.exec(url.slice(RUNBOOK_BASE.length))?.[1];
  if (page === undefined) return [`${w}: runbook link ${url} is not a page of docs/runbooks`];
  return ctx.runbookPages.has(page) ? [] : [`${w}: runbook page ${page} is not in docs/runbooks`];
}

function overlaps(a: Panel, b: Panel): boolean {
  const [g, h] = [a.gridPos, b.gridPos];
  if (!g || !h) return false;
  return g.x < h.x + h.w && h.x < g.x + g.w && g.y < h.y + h.h && h.y < g.y + g.h;
}

/** Every problem found in one dashboard; [] when it follows the conventions. */
export function lintDashboard(d: Dashboard, ctx: LintContext): string[] {
  const where = `dashboard ${d.uid ?? d.title}`;
  const problems: string[] = [];
  if (!d.uid) problems.push(`${where}: no uid`);
  if (!d.title) problems.push(`${where}: no title`);
  if (!d.description) problems.push(`${where}: no description`);
  if (!(d.tags ?? []).includes(DASHBOARD_TAG)) problems.push(`${where}: not tagged ${DASHBOARD_TAG}`);
  if (d.id !== null) problems.push(`${where}: id must be null (provisioning matches on uid)`);
  if (d.editable !== false) problems.push(`${where}: editable (provisioned dashboards change in the TypeScript sources)`);
  if (!Array.isArray(d.annotations?.list)) problems.push(`${where}: annotations.list missing`);
  problems.push(...lintVariables(d, ctx, where));
  for (const l of d.links ?? []) if (l.url) problems.push(...lintDashboardUrl(l.url, `${where} link "${l.title}"`, l.keepTime));

  const ids = (d.panels ?? []).flatMap((p) => (p.type === 'row' ? [p.id, ...(p as { panels: Panel[] }).panels.map((q) => q.id)] : [p.id]));
  if (ids.some((id) => typeof id !== 'number')) problems.push(`${where}: a panel has no id`);
  const dup = ids.filter((id, i) => ids.indexOf(id) !== i);
  if (dup.length > 0) problems.push(`${where}: repeated panel ids ${dup.join(', ')}`);
  for (const r of rowPanels(d)) if (!r.title) problems.push(`${where}: row ${r.id} has no title`);

  const panels = allPanels(d);
  const titles = panels.map((p) => p.title);
  for (const t of new Set(titles.filter((t, i) => titles.indexOf(t) !== i))) problems.push(`${where}: panel title "${t}" repeated`);
  for (const p of panels) problems.push(...lintPanel(p, ctx, where));
  for (let i = 0; i < panels.length; i++) {
    for (let j = i + 1; j < panels.length; j++) if (overlaps(panels[i], panels[j])) problems.push(`${where}: panels "${panels[i].title}" and "${panels[j].title}" overlap`);
  }
  for (const q of dashboardQueries(d).filter((x) => x.kind === 'annotation')) problems.push(...lintExpr(q.expr, ctx, `${where} ${q.panel}`));
  return problems;
}

/** GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to dashes. */
export function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Anchors of every ATX heading outside code fences. */
export function markdownAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (m) anchors.add(githubAnchor(m[1]));
  }
  return anchors;
}
