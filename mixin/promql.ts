// PromQL and text fragments the rule groups are written with. Each fragment that recurs in the
// pack (the gap bridge, a source guard) is written here once.
import type { FamilyName } from '../src/metrics/families';
import type { MixinConfig } from './config';

/** An exporter metric, by its declared family name (a misspelt one fails to compile). */
export function m(name: FamilyName, suffix: '' | '_bucket' | '_count' | '_sum' = ''): string {
  return `${name}${suffix}`;
}

/** A hypha_serve_* metric name token (not the middle part of a recorded level:metric:ops name). */
const EXPORTER_SELECTOR_TOKEN = /(?<![A-Za-z0-9_:])(hypha_serve_[a-z0-9_]+)(?![A-Za-z0-9_:])(\{([^}]*)\})?/g;

/** Adds the exporter selector to every exporter metric selector in a PromQL expression. */
export function withSelector(expr: string, selector: string): string {
  return expr.replace(EXPORTER_SELECTOR_TOKEN, (_m, name: string, braces: string | undefined, inner: string | undefined) => {
    const rest = braces === undefined || inner === undefined || inner.trim() === '' ? '' : `, ${inner.trim()}`;
    return `${name}{${selector}${rest}}`;
  });
}

/** Trims the common indentation of a template literal and ends it with one newline. */
export function block(text: string): string {
  const lines = text.replace(/^\n/, '').replace(/\s+$/, '').split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => /^ */.exec(l)?.[0].length ?? 0));
  return `${lines.map((l) => l.slice(indent)).join('\n')}\n`;
}

/** One line: collapses the whitespace of a folded paragraph (annotation prose). */
export function prose(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

const UNIT_WORDS: Record<string, [string, string]> = {
  y: ['year', 'years'], w: ['week', 'weeks'], d: ['day', 'days'], h: ['hour', 'hours'], m: ['minute', 'minutes'], s: ['second', 'seconds'], ms: ['millisecond', 'milliseconds'],
};

/** "5m" -> "5 minutes", "1h30m" -> "1 hour 30 minutes" (for page text). */
export function humanDuration(d: string): string {
  const parts = [...d.matchAll(/(\d+)(ms|y|w|d|h|m|s)/g)].map(([, n, u]) => `${n} ${UNIT_WORDS[u][n === '1' ? 0 : 1]}`);
  return parts.join(' ');
}

/**
 * The label lists of one configuration. Every `by`/`on` starts with the topology labels (a
 * global view over several Prometheus servers tells installs apart by them) and `job`.
 */
export interface Labels {
  /** `on (...)`/`by (...)` text of the topology labels, job and the given labels. */
  of(...labels: string[]): string;
}

export function labels(c: MixinConfig): Labels {
  return { of: (...l: string[]) => [...c.topology_labels, 'job', ...l].join(', ') };
}

/** The identity of each kind of fact, without the exporter replica (instance). */
export const ID = {
  app: ['ray_cluster', 'app', 'hypha'],
  deployment: ['ray_cluster', 'app', 'deployment'],
  cluster: ['ray_cluster'],
  holder: ['service', 'holder'],
  service: ['service'],
  hypha: ['hypha'],
  /** An upstream: the labels that do not apply to its source are absent. */
  source: ['source', 'ray_cluster', 'hypha', 'service'],
} as const;

/**
 * The gap bridge of a per-replica fact, aggregated to its identity: what the replicas that know it
 * now say (max: one witness is enough), else the last value any of them had within the bridge. A
 * replica that stopped scraping cannot outvote one that still knows, and a gap (a failed sample or
 * scrape, a restart, a reload, a reconnect) neither ends nor starts what reads it.
 */
export function bridge(c: MixinConfig, series: string, id: readonly string[]): string {
  const by = labels(c).of(...id);
  return block(`
      max by (${by}) (${series})
    or
      max by (${by}) (last_over_time(${series}[${c.bridge}]))
  `);
}

/**
 * A 0/1 series (an exporter decision, or a state-set member) over the exporter replicas and bridged,
 * compared with 1, in two lines and without a recorded level: what any replica says now (max: one
 * witness is enough), else in a gap the last value any of them had within the bridge. A replica that
 * stopped scraping cannot outvote one that still knows, and a gap shorter than the bridge neither ends
 * nor starts the page (a longer one is unknown: absent, no page).
 * No recorded level: vmalert reads a recorded series only an evaluation after it is written, so an
 * alert over one pages an evaluation later there than on Prometheus. `series` is a selector (matchers
 * allowed); `id` the identity without the topology labels and job.
 */
export function decidedOver(c: MixinConfig, series: string, id: readonly string[]): string {
  const by = labels(c).of(...id);
  return `(max by (${by}) (${series})\n  or max by (${by}) (last_over_time(${series}[${c.bridge}]))) == 1\n`;
}

/**
 * The gap bridge of a per-replica fact computed from several exporter series, aggregated to its
 * identity without recording the per-replica fact first (one recorded level instead of two): the fact
 * from the series as the replicas serve them now, else the fact from each series' last value within
 * the bridge. `fact` writes the fact with each exporter series passed through `v` (the series itself,
 * then `last_over_time(series[bridge])`); range functions it applies itself (`max_over_time(x[10m])`)
 * already reach over a gap and are written as they are.
 */
export function bridgedFact(c: MixinConfig, id: readonly string[], fact: (v: (series: string) => string) => string): string {
  const by = labels(c).of(...id);
  const branch = (v: (series: string) => string) => `  max by (${by}) (\n${indent(block(fact(v)), 4)}\n  )`;
  return `${branch((s) => s)}\nor\n${branch((s) => `last_over_time(${s}[${c.bridge}])`)}\n`;
}

// The source guard: a source's own up series, which names its upstream by the label its derived
// series join on (service). `== 1` filters (not multiplies), so a down source makes the derived fact
// absent (unknown) instead of 0 (a claim that all is well). In parentheses:
// `x * on (...) group_left () up == 1` would compare the product (`*` binds tighter than `==`).
/** The watched service's source was up at least once within `range`: a blip does not reset what it guards. */
export const serviceUpWithin = (range: string) =>
  `(max_over_time(${m('hypha_serve_source_up')}{source="hypha_service"}[${range}]) == 1)`;

/** Indents every line of a fragment (to nest it in a larger expression). */
export function indent(text: string, by: number): string {
  const pad = ' '.repeat(by);
  return text.replace(/\n$/, '').split('\n').map((line) => (line === '' ? line : pad + line)).join('\n');
}

/**
 * An annotation's one query: `printf "<series>{<identity matchers>}" <the alert's labels> | query`,
 * selecting the series of this alert's identity (topology labels and job included). `matchers`
 * adds to the selector (quotes escaped for the template string); `wrap` puts the selector into an
 * expression.
 */
export function queryOf(
  c: MixinConfig, series: string, id: readonly (string | readonly [string, string])[], o: { matchers?: string; wrap?: (selector: string) => string } = {},
): string {
  // An id entry [seriesLabel, alertLabel] selects the series' label by the alert's value of another.
  const pairs = [...c.topology_labels, 'job', ...id].map((n) => (typeof n === 'string' ? [n, n] : n));
  const selector = `${series}{${[...pairs.map(([n]) => `${n}=%q`), ...(o.matchers ? [o.matchers.replace(/"/g, '\\"')] : [])].join(',')}}`;
  return `printf "${o.wrap ? o.wrap(selector) : selector}" ${pairs.map(([, a]) => `$labels.${a}`).join(' ')} | query`;
}

/**
 * An annotation's one query over several series of the alert's identity (queryOf selects one): `build`
 * writes the expression with `sel(series, matchers)` for each selector, and the identity's values are
 * given to printf once (explicit argument indexes, `%[1]q`).
 */
export function queryOfEach(
  c: MixinConfig, id: readonly string[], build: (sel: (series: string, matchers?: string) => string) => string,
): string {
  const names = [...c.topology_labels, 'job', ...id];
  const sel = (series: string, matchers?: string) =>
    `${series}{${[...names.map((n, i) => `${n}=%[${i + 1}]q`), ...(matchers ? [matchers.replace(/"/g, '\\"')] : [])].join(',')}}`;
  return `printf "${build(sel)}" ${names.map((n) => `$labels.${n}`).join(' ')} | query`;
}
