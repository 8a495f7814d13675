// Every PromQL query a dashboard runs (panel targets, annotations, query variables), and the
// template-variable substitution Grafana would apply before sending one to Prometheus.
import type { Dashboard, Panel, RowPanel, VariableModel } from '@grafana/grafana-foundation-sdk/dashboard';
import { allValueOf } from './conventions';

export interface DashboardQuery {
  dashboard: string;
  kind: 'panel' | 'annotation' | 'variable';
  /** Panel title, `annotation:<name>`, or `variable:<name>`. */
  panel: string;
  panelType: string;
  refId: string;
  /** As written in the dashboard, with template variables. */
  expr: string;
  /** Instant (table/stat) queries are evaluated at one time; range ones over the dashboard range. */
  instant: boolean;
}

interface PromTarget {
  refId?: string;
  expr?: string;
  instant?: boolean;
}

function isRow(p: Panel | RowPanel): p is RowPanel {
  return p.type === 'row';
}

/** Panels in display order, with the panels inside collapsed rows. */
export function allPanels(d: Dashboard): Panel[] {
  const out: Panel[] = [];
  for (const p of d.panels ?? []) {
    if (isRow(p)) out.push(...p.panels);
    else out.push(p);
  }
  return out;
}

export function rowPanels(d: Dashboard): RowPanel[] {
  return (d.panels ?? []).filter(isRow);
}

export function variables(d: Dashboard): VariableModel[] {
  return d.templating?.list ?? [];
}

const LABEL_VALUES = /^\s*label_values\(\s*(.*)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$/s;

/**
 * The PromQL behind a `label_values(expr, label)` variable query, as Prometheus would be asked
 * for it: the distinct values of `label` among the series of `expr`.
 */
export function variableQueryAsPromql(query: string): { expr: string; label: string } | undefined {
  const m = LABEL_VALUES.exec(query);
  if (!m) return undefined;
  return { expr: `count by (${m[2]}) (${m[1]})`, label: m[2] };
}

export function dashboardQueries(d: Dashboard): DashboardQuery[] {
  const uid = d.uid ?? '(no uid)';
  const out: DashboardQuery[] = [];
  for (const p of allPanels(d)) {
    for (const t of (p.targets ?? []) as PromTarget[]) {
      out.push({
        dashboard: uid,
        kind: 'panel',
        panel: p.title ?? '',
        panelType: p.type,
        refId: t.refId ?? '',
        expr: t.expr ?? '',
        instant: t.instant === true,
      });
    }
  }
  for (const a of d.annotations?.list ?? []) {
    if (a.builtIn || a.expr === undefined) continue;
    out.push({ dashboard: uid, kind: 'annotation', panel: `annotation:${a.name}`, panelType: 'annotation', refId: 'Anno', expr: a.expr, instant: false });
  }
  for (const v of variables(d)) {
    if (v.type !== 'query' || typeof v.query !== 'string') continue;
    const q = variableQueryAsPromql(v.query);
    out.push({
      dashboard: uid,
      kind: 'variable',
      panel: `variable:${v.name}`,
      panelType: 'variable',
      refId: 'Var',
      expr: q ? q.expr : v.query,
      instant: true,
    });
  }
  return out;
}

/** Values for one substitution: a template variable either "All" or one concrete value. */
export type VariableValues = Record<string, { all: true } | { value: string }>;

/** Grafana's built-in range variables, with the values the tests use. */
export const BUILTIN_INTERVALS: Record<string, string> = {
  __rate_interval: '1m',
  __interval: '15s',
  __range: '1h',
};

/** How Grafana writes one value of a multi-value variable into a regex matcher: escaped, inside a PromQL string. */
function regexEscapedForPromqlString(value: string): string {
  return value.replace(/[\\^$*+?.()|[\]{}]/g, (c) => `\\\\${c}`);
}

/**
 * The expression Grafana would send: `$var` / `${var}` replaced by the variable's allValue (allValueOf) when
 * "All" is selected, else by the escaped value; built-in intervals replaced by BUILTIN_INTERVALS.
 * Throws on a variable it has no value for, so a typo cannot pass as an unsubstituted string.
 */
export function substitute(expr: string, values: VariableValues): string {
  return expr.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, braced: string | undefined, bare: string | undefined) => {
    const name = braced ?? bare ?? '';
    if (name in BUILTIN_INTERVALS) return BUILTIN_INTERVALS[name];
    const v = values[name];
    if (!v) throw new Error(`no value for template variable ${whole} in: ${expr}`);
    return 'all' in v ? allValueOf(name) : regexEscapedForPromqlString(v.value);
  });
}

/** Template variables an expression refers to (built-in intervals excluded). */
export function variablesIn(text: string): string[] {
  const names = new Set<string>();
  for (const m of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g)) {
    const n = m[1] ?? m[2];
    if (!(n in BUILTIN_INTERVALS)) names.add(n);
  }
  return [...names];
}
