// Per-cause waits (docs/alerts.md "Per-cause wait"): how long a bridged fact must have held.
import { parseDuration } from '../../src/util/duration';
import type { MixinConfig } from './config';
import type { RecordingRule } from './model';
import { block, bridge, labels } from './promql';

const isZero = (d: string) => (parseDuration(d) ?? 0) === 0;

/**
 * The bridged recorded `series` has been 1 for `d`: 1 at every evaluation of the window, and
 * already 1 at its start (the last value within the bridge before it), so a series that just
 * appeared (an exporter that just started) has not held that long. The window's start is read with
 * an explicit range, so engines that close ranges on the left (Prometheus 2.x) and those that do not
 * (3.x, VictoriaMetrics) agree.
 */
export function heldFor(c: MixinConfig, series: string, id: readonly string[], d: string): string {
  if (isZero(d)) return `${series} == 1`;
  return `min_over_time(${series}[${d}]) == 1 and on (${labels(c).of(...id)}) last_over_time(${series}[${c.bridge}] offset ${d}) == 1`;
}

/**
 * With a proven wait above 0s, the proof must have held that long: recorded as `name` (0/1), so
 * the page can read "proven within the uncertain wait" over it. None with the shipped 0s: the page
 * reads the bridged proof itself.
 */
export function proven(c: MixinConfig, proof: string, name: string, id: readonly string[], wait: string): RecordingRule[] {
  if (isZero(wait)) return [];
  return [{
    record: name,
    comment: `1 = the bridged proof ${proof} has held for ${wait} (cause_waits.proven), else 0.`,
    expr: block(`
        (${heldFor(c, proof, id, wait)})
      or on (${labels(c).of(...id)})
        ${proof} * 0
    `),
  }];
}

/**
 * The page condition of a per-cause wait (docs/alerts.md "Per-cause wait"), 0/1 while the fact is known.
 * `exempt`: series of the page's identity under which the fact does not page (0 while present).
 */
export function pageExpr(c: MixinConfig, fact: string, proof: string, id: readonly string[], uncertain: string, exempt?: string): string {
  const on = labels(c).of(...id);
  const unless = exempt === undefined ? '' : `
        unless on (${on})
          ${exempt}`;
  return block(`
      (
          ${fact} == 1
        and on (${on})
          (
              ${heldFor(c, fact, id, uncertain)}
            or on (${on})
              max_over_time(${proof}[${uncertain}]) == 1
          )${unless}
      )
    or on (${on})
      ${fact} * 0
  `);
}

/** A page condition's four records: the fact and its proof bridged, the proof held for its wait (if above 0s), the page. */
export interface PageSpec {
  fact: string;
  factBridged: string;
  factComment: string;
  proofMetric: string;
  proofBridged: string;
  proofHeld: string;
  proofComment: string;
  page: string;
  pageComment: string;
  id: readonly string[];
  waits: { proven: string; uncertain: string };
  /** Series of the page's identity under which the fact does not page (the page is 0 while it is present). */
  exempt?: string;
}

export function pageRules(c: MixinConfig, s: PageSpec): RecordingRule[] {
  return [
    { record: s.factBridged, comment: s.factComment, expr: bridge(c, s.fact, s.id) },
    { record: s.proofBridged, comment: s.proofComment, expr: bridge(c, s.proofMetric, s.id) },
    ...proven(c, s.proofBridged, s.proofHeld, s.id, s.waits.proven),
    { record: s.page, comment: s.pageComment, expr: pageExpr(c, s.factBridged, isZero(s.waits.proven) ? s.proofBridged : s.proofHeld, s.id, s.waits.uncertain, s.exempt) },
  ];
}
