// The alerting-rules pack as code: recording and alerting rules rendered from the mixin
// configuration (rules/config/mixin.yml). mixin/build.ts is the command that writes rules/recording.yml,
// rules/alerts.yml, their vmalert copies in rules/vmalert/ and deploy/kubernetes/prometheusrule.yaml.
//
// Design (docs/alerts.md):
// - The exporter decides every page (metric contract v0.4: causes, proofs, waits, the page held); an
//   incident alert adds only the max over exporter replicas and the gap bridge (last_over_time over
//   mixin `bridge`), so an HA pair pages once and a gap neither starts nor ends a page.
// - Six warnings need the TSDB (a rate, an hour of changes, a 10-minute window): each reads one recorded
//   series placed before it in its group, so Prometheus evaluates both at one timestamp. No alert reads
//   two recorded levels, ALERTS or ALERTS_FOR_STATE.
// - Every by/on carries the topology labels (mixin topology_labels) and job.
// - A source that is down hides only what derives from it: joins on the label that names its upstream.
// - Annotations make at most one query each.
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
  ALERT_NAMES, ALERTS_PATH, loadMixinConfig, MIXIN_CONFIG_PATH, RECORDING_PATH, scaleDurations, VMALERT_DIR,
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

/**
 * The group settings of rules/vmalert/: vmalert evaluates `eval_delay` in the past and VictoriaMetrics hides
 * the newest `latency_offset` of samples from a query (both 30 s by default, -rule.evalDelay and
 * -search.latencyOffset), so the plain files would page and resolve about 30 s after Prometheus; with
 * `eval_alignment` (on by default) vmalert also rounds the query time down to the interval, up to one more
 * interval back. Per group, the pack's own pages keep within the configured offset of Prometheus whatever the
 * engine's flags, which stay as they are for every other rule.
 */
function vmalertSettings(c: MixinConfig): Record<string, unknown> {
  const offset = c.vmalert.latency_offset;
  return { eval_delay: offset, eval_alignment: false, params: { latency_offset: [offset] } };
}

/** Plain rule groups (no comments), as Prometheus and the PrometheusRule spec take them, with any group settings. */
export function plainGroups(groups: Group[], settings: Record<string, unknown> = {}): { name: string; rules: Record<string, unknown>[] }[] {
  return groups.map((g) => ({
    name: g.name,
    // A copy per group: one shared object would be written as a YAML anchor and its aliases.
    ...structuredClone(settings),
    rules: g.rules.map((r) => {
      const { comment: _comment, ...rest } = r;
      return rest as Record<string, unknown>;
    }),
  }));
}

const LINE_WIDTH = 120;

function renderRuleFile(header: string, groups: Group[], settings: Record<string, unknown> = {}): string {
  const doc = new Document({ groups: plainGroups(groups, settings) });
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

const PROMETHEUS = 'Loads on Prometheus 2.42 and 3.x and Thanos Ruler.';
const VMALERT = 'Loads on vmalert.\n# Prometheus refuses the group settings: it loads ../*.yml (docs/engines.md).';

const GENERATED = (what: string, loads: string = PROMETHEUS) =>
  [
    `# ${what} for hypha-serve-exporter, rendered by mixin/index.ts from rules/config/mixin.yml`,
    '# (and a user config, if one was given). Do not edit: change the config or the generator, then run',
    `# \`npm run build && npm run rules:gen\` (docs/alerts.md). ${loads}`,
  ].join('\n');

export interface RenderedPack {
  recording: string;
  alerts: string;
  /** The same two files for vmalert (rules/vmalert/), each group with vmalertSettings. */
  vmalert: { recording: string; alerts: string };
  /** Plain groups, recording rules first (as Prometheus' own example config loads them). */
  groups: { name: string; rules: Record<string, unknown>[] }[];
}

export function renderPack(c: MixinConfig): RenderedPack {
  const { recording, alerting } = buildRules(c);
  const recordingHeader = "# Read by dashboards and alert texts, by no alert expression; the alerts' own recording rules are in alerts.yml. Load both files.";
  const alertsHeader = '# Each group records its facts, then alerts on them, evaluated in order. Load both files.';
  const vm = vmalertSettings(c);
  return {
    recording: renderRuleFile(`${GENERATED('Recording rules (level:metric:operations)')}\n${recordingHeader}`, recording),
    alerts: renderRuleFile(`${GENERATED('Alerting rules')}\n${alertsHeader}`, alerting),
    vmalert: {
      recording: renderRuleFile(`${GENERATED('Recording rules (level:metric:operations)', VMALERT)}\n${recordingHeader}`, recording, vm),
      alerts: renderRuleFile(`${GENERATED('Alerting rules', VMALERT)}\n${alertsHeader}`, alerting, vm),
    },
    groups: [...plainGroups(recording), ...plainGroups(alerting)],
  };
}
