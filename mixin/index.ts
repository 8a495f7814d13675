// The alerting-rules pack as code: recording and alerting rules rendered from the mixin
// configuration (rules/config/mixin.yml). mixin/build.ts is the command that
// writes rules/recording.yml, rules/alerts.yml and deploy/kubernetes/prometheusrule.yaml.
//
// Design (docs/alerts.md):
// - The judgement lives in named recording rules; every alert is a comparison over one of them.
//   Each group records its facts first and alerts on them after, so Prometheus evaluates them in
//   order at one timestamp: a real fix resolves the page in the same evaluation. Exception: the
//   registration group reads the exporter's own decisions (metric contract v0.4) with only the HA
//   max and the gap bridge in the alert, and records nothing.
// - Facts are recorded per exporter replica as 0/1 series that are ABSENT while unknown (their
//   source down, the exporter restarting, a reconnect settling), never 0. Each fact's gap bridge is
//   recorded once (`:bridged`, promql.ts bridge()): aggregated to the fact's identity with the
//   topology labels (mixin topology_labels) and job, the last value within the bridge in a gap. A
//   gap therefore neither resets a page nor starts one.
// - No rule reads ALERTS or ALERTS_FOR_STATE: a fired page is held by the proof's own
//   max_over_time (waits.ts), which every engine evaluates alike.
// - A source that is down hides only what derives from it: joins on the label that names its upstream.
// - Annotations make at most one query each, mostly of a recorded context series.
import { Document, isMap, isScalar, isSeq, Scalar, YAMLMap } from 'yaml';
import type { MixinConfig } from './config';
import { withSelector } from './promql';
import { Group, isAlert } from './model';
import { registrationGroup } from './registration';
import { workerGroup } from './worker';
import { quantileGroup, servicesGroup } from './services';
import { serveGroup } from './serve';
import { exporterGroup } from './exporter';

export {
  ALERT_NAMES, ALERTS_PATH, loadMixinConfig, MIXIN_CONFIG_PATH, RECORDING_PATH, scaleDurations,
} from './config';
export type { MixinConfig } from './config';
export { humanDuration, withSelector } from './promql';
export { compact } from './model';
export type { Group } from './model';

/** The pack: `recording` holds what no alert expression reads (rules/recording.yml), `alerting` the groups of rules/alerts.yml. */
export function buildRules(c: MixinConfig): { recording: Group[]; alerting: Group[] } {
  const recording = [quantileGroup()];
  const built = [registrationGroup(c), workerGroup(c), servicesGroup(c), serveGroup(c), exporterGroup(c)];
  // A disabled alert goes; a group left without rules too (Prometheus loads an empty group, the operator refuses it).
  const alerting = built
    .map((g) => ({ ...g, rules: g.rules.filter((r) => !(isAlert(r) && c.alerts[r.alert].disabled === true)) }))
    .filter((g) => g.rules.length > 0);
  for (const g of [...recording, ...alerting]) for (const r of g.rules) r.expr = withSelector(r.expr, c.exporter_selector);
  return { recording, alerting };
}

export { isAlert };

// ---------------------------------------------------------------------------------------------
// Rendering

/** Plain rule groups (no comments), as Prometheus and the PrometheusRule spec take them. */
export function plainGroups(groups: Group[]): { name: string; rules: Record<string, unknown>[] }[] {
  return groups.map((g) => ({
    name: g.name,
    rules: g.rules.map((r) => {
      const { comment: _comment, ...rest } = r;
      return rest as Record<string, unknown>;
    }),
  }));
}

const LINE_WIDTH = 120;

function renderRuleFile(header: string, groups: Group[]): string {
  const doc = new Document({ groups: plainGroups(groups) });
  const groupsNode = doc.get('groups', true);
  if (isSeq(groupsNode)) {
    groupsNode.items.forEach((gNode, gi) => {
      if (!isMap(gNode)) return;
      const rulesNode = gNode.get('rules', true);
      if (!isSeq(rulesNode)) return;
      rulesNode.items.forEach((rNode, ri) => {
        const comment = groups[gi].rules[ri].comment;
        if (!isMap(rNode)) return;
        if (comment) (rNode as YAMLMap).commentBefore = wrapComment(comment);
        // PromQL as a literal block (byte for byte), long prose folded (the same value, readable).
        const expr = rNode.get('expr', true);
        if (isScalar(expr)) expr.type = Scalar.BLOCK_LITERAL;
        const ann = rNode.get('annotations', true);
        if (isMap(ann)) {
          for (const item of ann.items) {
            if (isScalar(item.value) && / /.test(String(item.value.value)) && String(item.value.value).length > LINE_WIDTH - 20) item.value.type = Scalar.BLOCK_FOLDED;
          }
        }
      });
    });
  }
  return `${header}\n${doc.toString({ lineWidth: LINE_WIDTH })}`;
}

/** A comment wrapped to the line width (the yaml library adds the leading "#"). */
function wrapComment(text: string): string {
  const out: string[] = [];
  let line = '';
  for (const w of text.split(/\s+/)) {
    if (line && line.length + 1 + w.length > LINE_WIDTH - 12) {
      out.push(` ${line}`);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) out.push(` ${line}`);
  return out.join('\n');
}

const GENERATED = (what: string) =>
  [
    `# ${what} for hypha-serve-exporter, rendered by mixin/index.ts from rules/config/mixin.yml`,
    '# (and a user config, if one was given). Do not edit: change the config or the generator, then run',
    '# `npm run build && npm run rules:gen` (docs/alerts.md). Loads on Prometheus 2.42 and 3.x.',
  ].join('\n');

export interface RenderedPack {
  recording: string;
  alerts: string;
  /** Plain groups, recording rules first (as Prometheus' own example config loads them). */
  groups: { name: string; rules: Record<string, unknown>[] }[];
}

export function renderPack(c: MixinConfig): RenderedPack {
  const { recording, alerting } = buildRules(c);
  return {
    recording: renderRuleFile(
      `${GENERATED('Recording rules (level:metric:operations)')}\n# Read by dashboards and alert texts, by no alert expression; the alerts' own recording rules are in alerts.yml. Load both files.`,
      recording,
    ),
    alerts: renderRuleFile(`${GENERATED('Alerting rules')}\n# Each group records its facts, then alerts on them, evaluated in order. Load both files.`, alerting),
    groups: [...plainGroups(recording), ...plainGroups(alerting)],
  };
}
