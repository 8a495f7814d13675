// The alerting-rules pack as code: recording and alerting rules rendered from the mixin
// configuration (rules/config/mixin.yml). scripts/gen-prometheusrule.ts is the command that
// writes rules/recording.yml, rules/alerts.yml and deploy/kubernetes/prometheusrule.yaml.
//
// Design (docs/alerts.md):
// - Facts are recorded as 0/1 series that are ABSENT while unknown (their source down, the
//   exporter restarting, a reconnect settling), never 0. Alerts read them through `held()`:
//   the current value when any exporter replica knows it, else the last value within the bridge.
//   A gap therefore neither resets a pending/firing alert nor starts one, and a real fix (a 0)
//   resolves at the next evaluation.
// - A source that is down hides only what derives from it: joins on its own target.
// - Fact alerts aggregate `instance` away (an HA pair pages once); alerts about one exporter
//   process (down, reload failed, sampler stuck) stay per instance.
import fs from 'node:fs';
import path from 'node:path';
import { Document, isMap, isScalar, isSeq, parse, Scalar, YAMLMap } from 'yaml';
import { z } from 'zod';
import { formatDuration, parseDuration } from '../src/util/duration';

export const MIXIN_CONFIG_PATH = 'rules/config/mixin.yml';
export const RECORDING_PATH = 'rules/recording.yml';
export const ALERTS_PATH = 'rules/alerts.yml';

/** Prometheus' duration syntax (units in descending order, each at most once). */
const PROM_DURATION = /^(?:\d+y)?(?:\d+w)?(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?(?:\d+ms)?$/;
const duration = z.string().regex(PROM_DURATION, 'a Prometheus duration such as 30s, 5m or 1h').refine((s) => s !== '', 'empty duration');

export const ALERT_NAMES = [
  'HyphaServeAppRunningNotRegistered',
  'HyphaServeWorkerAppRunningNotRegistered',
  'HyphaServeAppWillDeregisterAtZero',
  'HyphaServiceCachedProxyStale',
  'HyphaServiceCachedProbeFailing',
  'HyphaServiceProbeFailing',
  'HyphaServiceCallLatencyHigh',
  'HyphaServiceClientIdChurn',
  'HyphaServeServerIdUnstable',
  'HyphaServeAppUnhealthy',
  'HyphaServeDeploymentReplicasMismatch',
  'HyphaServeNoProxyCanWakeApps',
  'HyphaServeAllProxiesUnready',
  'HyphaServeSourceDown',
  'HyphaServeSourceStale',
  'HyphaServeExporterDown',
  'HyphaServeExporterConfigReloadFailed',
] as const;
export type AlertName = (typeof ALERT_NAMES)[number];

const alertSettings = z.strictObject({
  severity: z.enum(['critical', 'warning', 'info']),
  for: duration,
  keep_firing_for: duration.optional(),
});

/** Alerts whose wait depends on the cause (issue 19): `for:` confirms a cause the exporter proves final. */
export const CAUSE_WAIT_ALERTS = ['HyphaServeAppRunningNotRegistered', 'HyphaServiceCachedProxyStale'] as const;
export type CauseWaitAlert = (typeof CAUSE_WAIT_ALERTS)[number];

const causeWait = z.strictObject({ proven: duration, uncertain: duration });

const configSchema = z.strictObject({
  exporter_selector: z.string().min(1),
  runbook_url_template: z.string().refine((s) => s.includes('%s'), 'must contain %s (the lower-cased alert name)'),
  bridge: duration,
  probe_window: duration,
  thresholds: z.strictObject({
    call_latency_p90_seconds: z.number().positive(),
    client_id_changes_per_hour: z.number().int().positive(),
  }),
  prometheus_rule: z.strictObject({
    name: z.string().min(1),
    labels: z.record(z.string(), z.string()),
  }),
  alerts: z.strictObject(Object.fromEntries(ALERT_NAMES.map((n) => [n, alertSettings])) as Record<AlertName, typeof alertSettings>),
  cause_waits: z.strictObject(Object.fromEntries(CAUSE_WAIT_ALERTS.map((n) => [n, causeWait])) as Record<CauseWaitAlert, typeof causeWait>),
}).superRefine((c, ctx) => {
  for (const n of CAUSE_WAIT_ALERTS) {
    if ((parseDuration(c.cause_waits[n].uncertain) ?? 0) < (parseDuration(c.cause_waits[n].proven) ?? 0)) {
      ctx.addIssue({ code: 'custom', path: ['cause_waits', n, 'uncertain'], message: `must be at least cause_waits.${n}.proven (${c.cause_waits[n].proven})` });
    }
  }
});
export type MixinConfig = z.infer<typeof configSchema>;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `over` merged into `base`, key by key (mappings recursively); lists and scalars replace. */
function deepMerge(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = deepMerge(base[k], v);
  return out;
}

function readYaml(file: string): unknown {
  return parse(fs.readFileSync(file, 'utf8'));
}

/**
 * The mixin configuration: the shipped defaults (rules/config/mixin.yml under root), with a
 * user's file merged over them when given. Unknown keys and alert names are errors.
 */
export function loadMixinConfig(root: string, userFile?: string): MixinConfig {
  const defaults = readYaml(path.join(root, MIXIN_CONFIG_PATH));
  const merged = userFile === undefined ? defaults : deepMerge(defaults, readYaml(userFile) ?? {});
  const r = configSchema.safeParse(merged);
  if (!r.success) {
    const where = userFile ?? MIXIN_CONFIG_PATH;
    throw new Error(`${where}: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return r.data;
}

/**
 * The configuration with every duration (each alert's for and keep_firing_for, the bridge and the
 * probe window) divided by `divisor` and floored at `min`: the documented test override that lets
 * the end-to-end replays page in seconds with the same rule logic (test/harness/rules-override.ts).
 */
export function scaleDurations(c: MixinConfig, divisor: number, min = '5s'): MixinConfig {
  const floor = parseDuration(min) ?? 5000;
  const scale = (d: string): string => {
    const ms = parseDuration(d.replace(/(\d+)w/, (_m, n: string) => `${Number(n) * 7}d`).replace(/(\d+)y/, (_m, n: string) => `${Number(n) * 365}d`));
    if (ms === undefined) throw new Error(`not a duration: ${d}`);
    // No wait stays no wait (the per-cause alerts' for: and proven wait); the floor is for waits.
    if (ms === 0) return d;
    return formatDuration(Math.max(floor, Math.round(ms / divisor / 1000) * 1000));
  };
  const alerts = Object.fromEntries(
    Object.entries(c.alerts).map(([name, a]) => [name, { ...a, for: scale(a.for), ...(a.keep_firing_for ? { keep_firing_for: scale(a.keep_firing_for) } : {}) }]),
  ) as MixinConfig['alerts'];
  const cause_waits = Object.fromEntries(
    Object.entries(c.cause_waits).map(([name, w]) => [name, { proven: scale(w.proven), uncertain: scale(w.uncertain) }]),
  ) as MixinConfig['cause_waits'];
  return { ...c, bridge: scale(c.bridge), probe_window: scale(c.probe_window), alerts, cause_waits };
}

// ---------------------------------------------------------------------------------------------
// PromQL helpers

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
function block(text: string): string {
  const lines = text.replace(/^\n/, '').replace(/\s+$/, '').split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => /^ */.exec(l)?.[0].length ?? 0));
  return `${lines.map((l) => l.slice(indent)).join('\n')}\n`;
}

/** One line: collapses the whitespace of a folded paragraph (annotation prose). */
function prose(text: string): string {
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

// The source guards: a source's own up series, relabelled to the label its derived series join
// on. `== 1` filters (not multiplies), so a down source makes the derived fact absent (unknown)
// instead of 0 (a claim that all is well).
const RAY_UP = 'label_replace(hypha_serve_source_up{source="ray"} == 1, "ray_cluster", "$1", "target", "(.*)")';
const HYPHA_UP = 'label_replace(hypha_serve_source_up{source="hypha"} == 1, "hypha", "$1", "target", "(.*)")';
const SERVICE_UP = 'label_replace(hypha_serve_source_up{source="hypha_service"} == 1, "service", "$1", "target", "(.*)")';
/** The watched service's source was up at least once within `range`: a blip does not reset what it guards. */
const serviceUpWithin = (range: string) =>
  `label_replace(max_over_time(hypha_serve_source_up{source="hypha_service"}[${range}]) == 1, "service", "$1", "target", "(.*)")`;

// ---------------------------------------------------------------------------------------------
// Rule model

export interface RecordingRule {
  record: string;
  expr: string;
  labels?: Record<string, string>;
  /** Why the rule exists; emitted as a YAML comment. */
  comment: string;
}

export interface AlertingRule {
  alert: AlertName;
  expr: string;
  for: string;
  keep_firing_for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  comment: string;
}

export interface Group<R> {
  name: string;
  rules: R[];
}

// Recorded facts the alerts read.
export const REC = {
  notRegistered: 'ray_cluster_app:hypha_serve_app_not_registered:bool',
  runningNotRegistered: 'ray_cluster_app:hypha_serve_app_running_not_registered:bool',
  workerRunningNotRegistered: 'ray_cluster_app_worker:hypha_serve_worker_app_running_not_registered:bool',
  workerAppRunningNotRegistered: 'ray_cluster_app:hypha_serve_worker_app_running_not_registered:bool',
  deregistersAtZero: 'ray_cluster_app:hypha_serve_app_deregisters_at_zero:bool',
  cachedStale: 'service_holder:hypha_serve_service_cached_stale:max',
  clientIdChanges: 'service:hypha_serve_service_client_id_changes:increase1h',
  latency: 'service_via_quantile:hypha_serve_service_call_duration_seconds:histogram_quantile_rate10m',
  proxyReady: 'ray_cluster:hypha_serve_proxy_ready:sum',
  scaledToZero: 'ray_cluster:hypha_serve_deployment_scaled_to_zero:sum',
  runningReplicas: 'ray_cluster:hypha_serve_deployment_replicas_running:sum',
  targetMinusRunning: 'ray_cluster_app_deployment:hypha_serve_deployment_replicas:target_minus_running',
  unhealthy: 'ray_cluster_app:hypha_serve_app_unhealthy:bool',
  replicasShort: 'ray_cluster_app_deployment:hypha_serve_deployment_replicas_short:bool',
  noProxyReady: 'ray_cluster:hypha_serve_proxy_none_ready:bool',
  noProxyCanWake: 'ray_cluster:hypha_serve_proxy_none_ready_apps_at_zero:bool',
  allProxiesUnready: 'ray_cluster:hypha_serve_proxy_none_ready_replicas_running:bool',
} as const;

/** Registration state -> the sentence the page gives for it (the runbook branch to take). */
const CAUSE_TEXT: [string, string][] = [
  ['missing_scaled_to_zero', 'it was registered and disappeared while a deployment of the app was idle at zero replicas (incident 1a)'],
  ['missing_never_registered', 'this exporter saw the deployment come up, and it has never been registered since (incident 1b)'],
  ['missing_crashed', 'a deployment of the app is DEPLOY_FAILED or UNHEALTHY, or a sibling deployment cannot serve'],
  ['missing_after_reconnect', 'it was registered before a Hypha outage and has not re-registered since the exporter reconnected'],
  ['missing_history_unknown', 'it was already missing when the exporter started; whether it was ever registered is unknown'],
  ['missing_other', 'none of the causes the exporter can tell apart applies'],
  // What a resolved notification reads: the annotations are rendered from the state at its end.
  ['registered', 'the service is registered again'],
  ['not_running', 'Serve is (re)deploying or deleting the app, so no registration is due'],
];

export function buildRules(c: MixinConfig): { recording: Group<RecordingRule>[]; alerting: Group<AlertingRule>[] } {
  const B = c.bridge;
  const W = c.probe_window;
  const sel = (e: string) => withSelector(e, c.exporter_selector);
  /**
   * The value of a recorded fact with `instance` aggregated away: what the replicas that know
   * it now say (max: one witness is enough), else the last value any of them had within the
   * bridge. A replica that stopped scraping cannot outvote one that still knows.
   */
  const held = (rec: string) => `(\n    max without (instance) (${rec})\n  or\n    max without (instance) (last_over_time(${rec}[${B}]))\n)`;
  const a = (name: AlertName) => c.alerts[name];
  /**
   * Per-cause wait (mixin `cause_waits`; docs/alerts.md "Per-cause wait"). The recorded fact must
   * hold (bridged: unknown neither starts nor ends a page), and then one of:
   * - the exporter proves the cause final (`proof`, an exporter series) for `proven` (0s: at the
   *   first evaluation where the recorded fact and the proof agree);
   * - the fact has held for `uncertain` (today's wait): 1 at every step of a subquery over the
   *   bridged fact (a gap counts as its last known value) and already 1 at the window's start (the
   *   last value known then), so a series that just appeared (an exporter that just started) has
   *   not held that long, and Prometheus 2.42 (ranges closed on the left) and 3.x (open) agree;
   * - the page already fires: it stays while the fact holds even when the cause stops being proven
   *   (an app woken whose proxy is still not back; an exporter restart without its history).
   * The waits are in the expression, not in `for:` (shipped 0s): a wait in `for:` would add to the
   * uncertain one and round up to an evaluation on top of it.
   */
  const causeWaited = (name: CauseWaitAlert, rec: string, ids: string, proof: string): string => {
    const w = c.cause_waits[name];
    const flat = (x: string) => x.replace(/\n/g, ' ').replace(/\s+/g, ' ');
    const heldFor = (series: string, d: string) => (parseDuration(d) ?? 0) > 0
      ? [`min_over_time(${flat(held(series))}[${d}:]) == 1`, `  and on (${ids})`, `max without (instance) (last_over_time(${series}[${B}] offset ${d})) == 1`]
      : [`${flat(held(series))} == 1`];
    return [
      `${held(rec)} == 1`,
      `and on (${ids})`,
      '  (',
      ...heldFor(rec, w.uncertain).map((l) => `      ${l}`),
      `    or on (${ids})`,
      ...heldFor(proof, w.proven).map((l) => `      ${l}`),
      `    or on (${ids})`,
      `      ALERTS{alertname="${name}", alertstate="firing"}`,
      '  )',
      '',
    ].join('\n');
  };
  /** What an uncertain cause waits in all: its cause wait, then the alert's for: (shipped 0s). */
  const totalWait = (name: CauseWaitAlert) => formatDuration((parseDuration(c.cause_waits[name].uncertain) ?? 0) + (parseDuration(c.alerts[name].for) ?? 0));
  const human = (name: AlertName) => humanDuration(c.alerts[name].for);
  const runbook = (name: AlertName) => c.runbook_url_template.replace('%s', name.toLowerCase());

  // Annotation templates query with the alert's own identity labels; `max without (instance)`
  // and the bridge make them read the same fact the alert does, whichever replica knows it.
  const app = 'job=%q,ray_cluster=%q,app=%q,hypha=%q';
  const appArgs = '$labels.job $labels.ray_cluster $labels.app $labels.hypha';
  // The current expected id; in a gap, the last one within the bridge.
  const expectedService =
    `{{ with printf "max without (instance) (hypha_serve_app_expected_service_info{${app}})" ${appArgs} | query }}{{ . | first | label "service" }}` +
    `{{ else }}{{ with printf "max without (instance) (last_over_time(hypha_serve_app_expected_service_info{${app}}[${B}]))" ${appArgs} | query }}{{ . | first | label "service" }}{{ else }}(unknown){{ end }}{{ end }}`;
  // The causes the live replicas report now; else their current state (a page held after the app came back:
  // registered); only in a gap the last one within the bridge (a replica that died keeps its last state in
  // last_over_time for the whole bridge, which must not read as a second cause). Causes first: in an HA pair
  // the replica Prometheus has not scraped since the app left still says "registered", which is no cause.
  const stateQuery =
    `printf "max without (instance) (hypha_serve_app_registration_state{${app},state=~\\"missing_.*\\"}) == 1 ` +
    `or on (job, ray_cluster, app, hypha) max without (instance) (hypha_serve_app_registration_state{${app}}) == 1 ` +
    `or on (job, ray_cluster, app, hypha) max without (instance) (last_over_time(hypha_serve_app_registration_state{${app}}[${B}])) == 1" ` +
    `${appArgs} ${appArgs} ${appArgs} | query | sortByLabel "state"`;
  const causeStates = `{{ range $i, $s := ${stateQuery} }}{{ if $i }}, {{ end }}{{ $s.Labels.state }}{{ else }}unknown{{ end }}`;
  const causeSentences =
    `{{ range $i, $s := ${stateQuery} }}{{ if $i }}; {{ end }}{{ $s.Labels.state }}: ` +
    CAUSE_TEXT.map(([state, text], i) => `{{ ${i === 0 ? 'if' : 'else if'} eq $s.Labels.state "${state}" }}${text}`).join('') +
    `{{ else }}a state this rules pack does not know{{ end }}{{ else }}unknown (no registration state in the last ${humanDuration(B)}){{ end }}`;
  // What the page text says of the wait: none when the exporter proves the cause final.
  const stuckOr = (certain: string, otherwise: string) =>
    `{{ with printf "max without (instance) (last_over_time(hypha_serve_app_registration_stuck{${app}}[${B}])) == 1" ${appArgs} | query }}${certain}{{ else }}${otherwise}{{ end }}`;
  // The workers whose report makes the fact 1 now; a restarted worker's old id is gone from it at once.
  const workersNow =
    `{{ range $i, $w := printf "max by (worker) (${REC.workerRunningNotRegistered}{${app}} == 1)" ${appArgs} | query | sortByLabel "worker" }}{{ if $i }}, {{ end }}{{ $w.Labels.worker }}` +
    `{{ else }}none answers now: it left the Hypha registry or has not answered since; a restarted worker is asked at its next cross-check{{ end }}`;
  const missingFor = `{{ with printf "max without (instance) (time() - last_over_time(hypha_serve_app_unregistered_since_timestamp_seconds{${app}}[${B}]))" ${appArgs} | query }} (missing for {{ . | first | value | humanizeDuration }}){{ end }}`;

  const recording: Group<RecordingRule>[] = [
    {
      name: 'hypha-serve-registration.rules',
      rules: [
        {
          record: REC.notRegistered,
          comment: 'The registry has no service for the app (a missing_* state): 1; registered or not_running: 0; unknown: absent.',
          expr: block(`
            max without (state) (hypha_serve_app_registration_state{state=~"missing_.*"})
            * on (job, instance, ray_cluster) group_left () ${RAY_UP}
            * on (job, instance, hypha) group_left () ${HYPHA_UP}
          `),
        },
        {
          record: REC.runningNotRegistered,
          comment:
            'Incident 1: 1 = the app is RUNNING in Ray and in a missing_* registration state, 0 = not; absent while its own ' +
            'Ray cluster or its own Hypha server is not sampled (or the exporter is settling after a reconnect).',
          expr: block(`
            (
                max without (state) (hypha_serve_app_registration_state{state=~"missing_.*"})
              * on (job, instance, ray_cluster, app) group_left ()
                max without (status) (hypha_serve_app_status{status="RUNNING"})
            )
            * on (job, instance, ray_cluster) group_left () ${RAY_UP}
            * on (job, instance, hypha) group_left () ${HYPHA_UP}
          `),
        },
        {
          record: REC.workerRunningNotRegistered,
          comment:
            'The BioEngine worker says RUNNING (and registered, where it says at all) while the registry has no service for ' +
            'the same (ray_cluster, app): 1, else 0. A worker not attributed to a cluster has ray_cluster="" and joins nothing.',
          expr: block(`
            (
                max without (status) (hypha_serve_worker_app_status{status="RUNNING"})
              * on (job, instance, hypha, worker) group_left ()
                (hypha_serve_worker_up == 1)
            )
            * on (job, instance, hypha, worker, ray_cluster, app) group_left ()
              (
                  (hypha_serve_worker_app_service_registered != bool 0)
                or
                  (max without (status) (hypha_serve_worker_app_status) * 0 + 1)
              )
            * on (job, instance, ray_cluster, app, hypha) group_left ()
              (
                  max without (state) (hypha_serve_app_registration_state{state=~"missing_.*"})
                * on (job, instance, ray_cluster) group_left () ${RAY_UP}
                * on (job, instance, hypha) group_left () ${HYPHA_UP}
              )
          `),
        },
        {
          record: REC.workerAppRunningNotRegistered,
          comment:
            'The worker alert\'s fact, with the identity of the app (ray_cluster, app, hypha): a worker restart changes the ' +
            'worker\'s client id, not the app. 1/0 from the workers that answer now; while none answers (a restarting worker, ' +
            'a departed one: the exporter ends a departed worker\'s series at once, a known removal) it is 0 when the registry ' +
            'side knows no service is missing (registered again, or not running), else absent: a restart is a gap, not an end.',
          expr: block(`
              max without (worker) (${REC.workerRunningNotRegistered})
            or
              (
                  (${REC.notRegistered} == 0)
                and on (job, instance, hypha, ray_cluster, app)
                  max without (worker) (last_over_time(${REC.workerRunningNotRegistered}[${B}]))
              )
          `),
        },
        {
          record: REC.deregistersAtZero,
          comment:
            'The warning before incident 1a: 1 = the app is registered, its registrant is BioEngine\'s ProxyDeployment ' +
            '(hypha_serve_app_bioengine_proxy), and a deployment of it autoscales with min_replicas 0: when that deployment ' +
            'idles to zero the proxy deregisters the service (bioengine proxy_deployment.py check_health, 0.13.0 to 0.16.1). ' +
            '0 = min_replicas >= 1 everywhere, not registered, or not a BioEngine app (registrant unknown); absent while unknown.',
          expr: block(`
              (
                  max without (deployment) (
                      (hypha_serve_deployment_min_replicas == bool 0)
                    * on (job, instance, ray_cluster, app, deployment)
                      hypha_serve_deployment_autoscaling
                  )
                * on (job, instance, ray_cluster, app)
                  hypha_serve_app_bioengine_proxy
              )
            * on (job, instance, ray_cluster, app) group_right ()
              max without (state) (hypha_serve_app_registration_state{state="registered"})
            * on (job, instance, ray_cluster) group_left () ${RAY_UP}
            * on (job, instance, hypha) group_left () ${HYPHA_UP}
          `),
        },
      ],
    },
    {
      name: 'hypha-serve-services.rules',
      rules: [
        {
          record: REC.cachedStale,
          comment:
            'Incident 2: 1 = the client id this holder caches is not among the live providers (right with one provider or ' +
            'many), from the _info series OR-ed with the exporter\'s gauge; absent while the service\'s own source is down.',
          expr: block(`
            max without (client_id) (
                (
                  hypha_serve_service_cached_info
                  unless on (job, instance, service, client_id)
                  hypha_serve_service_provider_info
                )
              or
                (hypha_serve_service_cached_info * 0)
              or
                hypha_serve_service_cached_stale
            )
            * on (job, instance, service) group_left () ${SERVICE_UP}
          `),
        },
        {
          record: REC.clientIdChanges,
          comment: 'Provider-set changes of a watched service over the last hour.',
          expr: 'increase(hypha_serve_service_client_id_changes_total[1h])\n',
        },
        ...['0.5', '0.9', '0.99'].map((q) => ({
          record: REC.latency,
          comment: q === '0.5' ? 'p50/p90/p99 of probe calls per service and path (via), over 10 minutes.' : '',
          expr: block(`
            histogram_quantile(${q},
              sum without (method, outcome) (rate(hypha_serve_service_call_duration_seconds_bucket[10m])))
          `),
          labels: { quantile: q },
        })),
      ],
    },
    {
      name: 'hypha-serve-serve.rules',
      rules: [
        {
          record: REC.proxyReady,
          comment: 'Serve proxies answering /-/healthz with 200, per Ray cluster.',
          expr: 'sum without (node_id, node_ip) (hypha_serve_proxy_ready)\n',
        },
        {
          record: REC.scaledToZero,
          comment: 'Deployments idle at zero replicas by design, per Ray cluster.',
          expr: 'sum without (app, deployment) (hypha_serve_deployment_scaled_to_zero)\n',
        },
        {
          record: REC.runningReplicas,
          comment: 'RUNNING replicas of all deployments, per Ray cluster.',
          expr: 'sum without (app, deployment, state) (hypha_serve_deployment_replicas{state="RUNNING"})\n',
        },
        {
          record: REC.targetMinusRunning,
          comment: 'RUNNING replicas short of the target (negative = surplus while downscaling); dashboards plot it.',
          expr: block(`
            hypha_serve_deployment_target_replicas
            - on (job, instance, ray_cluster, app, deployment)
            hypha_serve_deployment_replicas{state="RUNNING"}
          `),
        },
        {
          record: REC.unhealthy,
          comment: '1 = the app is DEPLOY_FAILED or UNHEALTHY, 0 = another status; absent while its Ray cluster is not sampled.',
          expr: 'max without (status) (hypha_serve_app_status{status=~"DEPLOY_FAILED|UNHEALTHY"})\n',
        },
        {
          record: REC.replicasShort,
          comment:
            '1 = fewer RUNNING replicas than a target that is above zero (an idle scale-to-zero deployment has target 0) and ' +
            'has not changed for 10 minutes (not a scale-up in progress); 0 otherwise.',
          expr: block(`
              (
                  hypha_serve_deployment_target_replicas
                - on (job, instance, ray_cluster, app, deployment)
                  hypha_serve_deployment_replicas{state="RUNNING"}
                > bool 0
              )
            * on (job, instance, ray_cluster, app, deployment) (hypha_serve_deployment_target_replicas > bool 0)
            * on (job, instance, ray_cluster, app, deployment) (changes(hypha_serve_deployment_target_replicas[10m]) == bool 0)
          `),
        },
        {
          record: REC.noProxyReady,
          comment:
            '1 = no Serve proxy of the cluster is ready: every probed proxy unready, or Ray lists no proxy at all (the head ' +
            'proxy included); 0 = one is ready; absent when readiness is not probed (proxy_probe disabled) or Ray not sampled.',
          expr: block(`
              (sum without (node_id, node_ip) (hypha_serve_proxy_ready) == bool 0)
            or
              (
                max without (source, target) (${RAY_UP})
                unless on (job, instance, ray_cluster) hypha_serve_proxy_head
              )
          `),
        },
        {
          record: REC.noProxyCanWake,
          comment:
            '1 = deployments idle at zero and no proxy ready to take the request that wakes them, 0 otherwise. Only the ' +
            'head-node proxy is guaranteed ready at zero (Ray PR #47002, proxy_router.py); a worker-node proxy is ready once ' +
            'an ingress deployment it routes to had replicas (a latch), and 503 while drained.',
          expr: block(`
              (sum without (app, deployment) (hypha_serve_deployment_scaled_to_zero) > bool 0)
            * on (job, instance, ray_cluster) group_left ()
              (
                  (sum without (node_id, node_ip) (hypha_serve_proxy_ready) == bool 0)
                or
                  (
                    max without (source, target) (${RAY_UP})
                    unless on (job, instance, ray_cluster) hypha_serve_proxy_head
                  )
              )
          `),
        },
        {
          record: REC.allProxiesUnready,
          comment: '1 = deployments still have RUNNING replicas and no Serve proxy of the cluster is ready to route to them, 0 otherwise.',
          expr: block(`
              (sum without (app, deployment, state) (hypha_serve_deployment_replicas{state="RUNNING"}) > bool 0)
            * on (job, instance, ray_cluster) group_left ()
              (
                  (sum without (node_id, node_ip) (hypha_serve_proxy_ready) == bool 0)
                or
                  (
                    max without (source, target) (${RAY_UP})
                    unless on (job, instance, ray_cluster) hypha_serve_proxy_head
                  )
              )
          `),
        },
      ],
    },
  ];

  const alert = (name: AlertName, rest: Omit<AlertingRule, 'alert' | 'for' | 'keep_firing_for' | 'labels'> & { labels?: Record<string, string> }): AlertingRule => {
    const s = a(name);
    return {
      alert: name,
      expr: rest.expr,
      for: s.for,
      ...(s.keep_firing_for ? { keep_firing_for: s.keep_firing_for } : {}),
      labels: { severity: s.severity, ...(rest.labels ?? {}) },
      annotations: { ...rest.annotations, runbook_url: runbook(name) },
      comment: rest.comment,
    };
  };

  const svc = 'job=%q,service=%q';
  const goneQuery = `printf "max without (instance) (last_over_time(hypha_serve_service_cached_server_gone{job=%q,service=%q,holder=%q}[${B}])) == 1" $labels.job $labels.service $labels.holder`;
  const svcArgs = '$labels.job $labels.service';
  const latencyThreshold = c.thresholds.call_latency_p90_seconds;
  const churnThreshold = c.thresholds.client_id_changes_per_hour;

  const alerting: Group<AlertingRule>[] = [
    {
      name: 'hypha-serve-registration',
      rules: [
        alert('HyphaServeAppRunningNotRegistered', {
          comment:
            'Identity (ray_cluster, app, hypha): the expected service id changes while the condition holds (a worker restart), so ' +
            'it is in the text only. Per-cause wait: hypha_serve_app_registration_stuck (a state BioEngine\'s proxy never leaves ' +
            `by itself) pages after cause_waits.proven (${c.cause_waits.HyphaServeAppRunningNotRegistered.proven}); any other cause waits ` +
            `${c.cause_waits.HyphaServeAppRunningNotRegistered.uncertain} in total, longer than BioEngine's own recovery cycle (its proxy ` +
            'registers from check_health every 10 s, after hypha-rpc\'s reconnect backoff of up to 60 s ±10 %).',
          expr: causeWaited('HyphaServeAppRunningNotRegistered', REC.runningNotRegistered, 'job, ray_cluster, app, hypha', 'hypha_serve_app_registration_stuck'),
          annotations: {
            summary: 'Serve app is RUNNING but its Hypha service is not registered.',
            expected_service: expectedService,
            cause: causeStates,
            description: prose(`
              Ray Serve app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} is RUNNING, but its expected Hypha
              service ${expectedService} has been absent from the registry of Hypha server {{ $labels.hypha }}${stuckOr(
                ', and BioEngine will not register it by itself: a deployment it gates on is idle at zero and only a call through the missing service would wake it',
                ` for more than ${humanDuration(totalWait('HyphaServeAppRunningNotRegistered'))}`,
              )}${missingFor}. Cause: ${causeSentences}.
              Callers get "Service not found" while Ray and the worker look healthy.
            `),
          },
        }),
        alert('HyphaServeWorkerAppRunningNotRegistered', {
          comment:
            'The operator\'s view of incident 1: a BioEngine worker says RUNNING while the registry has nothing for the same ' +
            '(ray_cluster, app). Identity (ray_cluster, app, hypha), as the app alert: the worker\'s client id changes at every ' +
            'worker restart, so it is in the text (annotation worker), and a restart neither splits nor restarts the page.',
          expr: `${held(REC.workerAppRunningNotRegistered)} == 1\n`,
          annotations: {
            summary: 'BioEngine worker reports an app RUNNING that has no Hypha service.',
            worker: workersNow,
            description: prose(`
              A BioEngine worker (${workersNow}) reports app {{ $labels.app }} of Ray cluster {{ $labels.ray_cluster }} as RUNNING
              {{ with printf "max without (instance, worker) (hypha_serve_worker_app_service_registered{${app}}) == 1" ${appArgs} | query }}and its service as registered{{ else }}(it does not report registration; no released BioEngine does){{ end }},
              but Hypha server {{ $labels.hypha }} has had no service ${expectedService} for it for more than
              ${human('HyphaServeWorkerAppRunningNotRegistered')}. Anyone trusting the worker's status sees a healthy app that
              callers cannot reach.
            `),
          },
        }),
        alert('HyphaServeAppWillDeregisterAtZero', {
          comment:
            'A warning before incident 1a, not a page: the app is registered now, its registrant is BioEngine\'s ' +
            'ProxyDeployment, and a deployment of it may idle at zero, which deregisters the service until someone acts. ' +
            'Silent for min_replicas >= 1 and for Serve apps whose registrant is unknown.',
          expr: `${held(REC.deregistersAtZero)} == 1\n`,
          annotations: {
            summary: 'BioEngine app will lose its Hypha service when it idles to zero replicas.',
            description: prose(`
              Ray Serve app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} is registered on Hypha server
              {{ $labels.hypha }} as ${expectedService} through BioEngine's ProxyDeployment, and its deployment(s)
              {{ range $i, $d := printf "max without (instance) (hypha_serve_deployment_min_replicas{job=%q,ray_cluster=%q,app=%q} == 0)" $labels.job $labels.ray_cluster $labels.app | query | sortByLabel "deployment" }}{{ if $i }}, {{ end }}{{ $d.Labels.deployment }}{{ else }}(unknown){{ end }}
              autoscale with min_replicas 0. When such a deployment idles to zero replicas (after its downscale delay), the
              proxy deregisters the service (BioEngine 0.13.0 to 0.16.1, proxy_deployment.py check_health) and registers it
              again only once a replica runs, which only a call through the missing service would start: callers then get
              "Service not found" (HyphaServeAppRunningNotRegistered, cause missing_scaled_to_zero). Set min_replicas to at
              least 1 for it; no BioEngine release registers an app at zero replicas.
            `),
          },
        }),
      ],
    },
    {
      name: 'hypha-serve-services',
      rules: [
        alert('HyphaServiceCachedProxyStale', {
          comment:
            'The exporter\'s canary is a witness: it stays stale until the old client id is live again, every configured ' +
            'holder agrees with the providers, or canary.witness_max passes. The text says what the exporter cannot see. ' +
            'Per-cause wait: hypha_serve_service_cached_server_gone (the stale id is a server id the server replaced) pages ' +
            `after cause_waits.proven (${c.cause_waits.HyphaServiceCachedProxyStale.proven}); any other stale id waits ${c.cause_waits.HyphaServiceCachedProxyStale.uncertain}.`,
          expr: causeWaited('HyphaServiceCachedProxyStale', REC.cachedStale, 'job, service, holder', 'hypha_serve_service_cached_server_gone'),
          annotations: {
            summary: 'A cached Hypha service proxy points at a client that is no longer a provider.',
            description: prose(`
              {{ if eq $labels.holder "exporter" }}The exporter's canary, a proxy to {{ $labels.service }} that it resolved
              earlier and keeps as a witness,{{ else }}Holder {{ $labels.holder }}{{ end }} caches client id
              {{ with printf "max without (instance) (hypha_serve_service_cached_info{job=%q,service=%q,holder=%q} unless on (job, instance, service, client_id) hypha_serve_service_provider_info)" $labels.job $labels.service $labels.holder | query }}{{ . | first | label "client_id" }}{{ else }}{{ with printf "max without (instance) (last_over_time(hypha_serve_service_cached_info{job=%q,service=%q,holder=%q}[${B}]))" $labels.job $labels.service $labels.holder | query }}{{ . | first | label "client_id" }}{{ else }}(unknown){{ end }}{{ end }}
              for {{ $labels.service }}, which has not been among its live providers
              ({{ range $i, $p := printf "max without (instance) (hypha_serve_service_provider_info{${svc}})" ${svcArgs} | query | sortByLabel "client_id" }}{{ if $i }}, {{ end }}{{ $p.Labels.client_id }}{{ else }}{{ range $i, $p := printf "max without (instance) (last_over_time(hypha_serve_service_provider_info{${svc}}[${B}]))" ${svcArgs} | query | sortByLabel "client_id" }}{{ if $i }}, {{ end }}{{ $p.Labels.client_id }}{{ else }}none{{ end }}{{ end }})
              {{- with printf "min without (instance) (last_over_time(hypha_serve_service_cached_stale_since_timestamp_seconds{job=%q,service=%q,holder=%q}[${B}]))" $labels.job $labels.service $labels.holder | query }} since {{ . | first | value | humanizeTimestamp }}{{ else }}{{ with ${goneQuery} | query }}{{ else }} for ${humanDuration(totalWait('HyphaServiceCachedProxyStale'))}{{ end }}{{ end }}
              {{- with ${goneQuery} | query }};
              that id is a Hypha server id the server replaced when it came back under another id, so it never returns
              (a server without a fixed --server-id){{ end }}.
              Calls through such a proxy hang until they time out while fresh resolutions work. What the exporter can know:
              {{ with printf "max without (instance) (hypha_serve_service_holders_configured{${svc}}) == 0" ${svcArgs} | query }}no
              holder is configured for this service, so its own canary is the only witness it has{{ else }}its own canary and
              the holders it is configured to read or probe{{ end }}. What it cannot know: every other long-lived client
              (BioEngine workers, notebooks, services) that resolved {{ $labels.service }} before its providers last changed
              {{- with printf "max without (instance) (hypha_serve_service_client_id_last_change_timestamp_seconds{${svc}})" ${svcArgs} | query }} ({{ . | first | value | humanizeTimestamp }}){{ end }}
              and has not re-resolved since is stuck the same way, and stays stuck after this alert resolves (for the canary:
              when its old client id is live again, every configured holder agrees with the providers, or canary.witness_max
              passes): restart or re-resolve them.
            `),
          },
        }),
        alert('HyphaServiceCachedProbeFailing', {
          comment:
            `Judged over ${W}, not one sample: the cached path has not succeeded once while the fresh path succeeded at least ` +
            'once. Fresh resolution picks a provider at random, and a killed server stays listed for about a minute.',
          expr: block(`
            max without (instance) (
                max_over_time(hypha_serve_service_probe_success{via="cached"}[${W}]) == 0
              and on (job, instance, service)
                max_over_time(hypha_serve_service_probe_success{via="fresh"}[${W}]) == 1
              and on (job, instance, service)
                ${serviceUpWithin(B)}
            )
          `),
          annotations: {
            summary: 'Calls through a cached Hypha service proxy fail while fresh ones succeed.',
            description: prose(`
              No probe call to {{ $labels.service }} through the long-lived (cached) proxy has succeeded for
              ${humanDuration(W)}, while calls through a freshly resolved proxy did succeed in that time; this has held for
              ${human('HyphaServiceCachedProbeFailing')}. Cached-path outcomes over the last ${humanDuration(W)}:
              {{ range $i, $s := printf "max by (outcome) (increase(hypha_serve_service_call_duration_seconds_count{${svc},via=\\"cached\\"}[${W}])) > 0" ${svcArgs} | query | sortByLabel "outcome" }}{{ if $i }}, {{ end }}{{ $s.Labels.outcome }} {{ printf "%.0f" $s.Value }}{{ else }}none recorded{{ end }}.
              This is the symptom of a stale cached proxy.
            `),
          },
        }),
        alert('HyphaServiceProbeFailing', {
          comment: `No probe call on any path succeeded within ${W}: one success on either path (a live provider picked) clears it.`,
          expr: block(`
            max without (instance) (
                max by (job, instance, service) (max_over_time(hypha_serve_service_probe_success[${W}])) == 0
              and on (job, instance, service)
                ${serviceUpWithin(B)}
            )
          `),
          annotations: {
            summary: 'A watched Hypha service fails its probe on every path.',
            description: prose(`
              No probe call to {{ $labels.service }}, through the cached or a freshly resolved proxy, has succeeded for
              ${humanDuration(W)}, and this has held for ${human('HyphaServiceProbeFailing')} while the exporter reaches the
              Hypha server. Live providers:
              {{ with printf "max without (instance) (hypha_serve_service_providers{${svc}})" ${svcArgs} | query }}{{ . | first | value }}{{ else }}unknown{{ end }}.
            `),
          },
        }),
        alert('HyphaServiceCallLatencyHigh', {
          comment: 'The 10-minute rate rides over gaps; the guard silences it only after the service\'s source has been down for the whole bridge.',
          expr: block(`
            max without (instance) (
                ${REC.latency}{quantile="0.9", via="fresh"} > ${latencyThreshold}
              and on (job, instance, service)
                ${serviceUpWithin(B)}
            )
          `),
          annotations: {
            summary: 'Calls to a watched Hypha service are slow.',
            description: prose(`
              The 90th percentile of probe calls to {{ $labels.service }} through a freshly resolved proxy has been
              {{ $value | humanizeDuration }} over the last 10 minutes (threshold ${latencyThreshold}s) for
              ${human('HyphaServiceCallLatencyHigh')}. Artifact-backed operations (deploy_app, list_apps, get_app_manifest)
              slow down with it.
            `),
          },
        }),
        alert('HyphaServeServerIdUnstable', {
          comment:
            'A ticket before incident 2: the registry connection saw the Hypha server come back under another id. Its ' +
            'built-in services are provided by client <server_id> (hypha/core/store.py), so every such restart strands ' +
            'every proxy cached to them. Cleared when the server comes back under the same id.',
          expr: block(`
            (
                max without (instance) (label_replace(hypha_serve_hypha_server_id_changed, "hypha", "$1", "target", "(.*)"))
              or
                max without (instance) (label_replace(last_over_time(hypha_serve_hypha_server_id_changed[${B}]), "hypha", "$1", "target", "(.*)"))
            ) == 1
          `),
          annotations: {
            summary: 'The Hypha server has no stable server id: each restart strands cached proxies to its built-in services.',
            description: prose(`
              Hypha server {{ $labels.hypha }} came back under another server id
              {{- with printf "max without (instance) (hypha_serve_hypha_server_info{job=%q,target=%q})" $labels.job $labels.target | query }} ({{ . | first | label "server_id" }} now){{ end }}.
              Its built-in services, the artifact manager among them, are provided by client <server_id>, so every restart
              like this one strands every proxy that long-lived clients (BioEngine workers) cached to them: their calls hang
              until they re-resolve (incident 2). Start the server with a fixed --server-id (or HYPHA_SERVER_ID); with several
              instances on one Redis each needs its own, and a second instance with a live id refuses to start, so a rolling
              update must stop the old pod first.
            `),
          },
        }),
        alert('HyphaServiceClientIdChurn', {
          comment: `A Hypha restart without a fixed server id counts one or two provider-set changes; ${churnThreshold} in an hour is a service that keeps re-registering.`,
          expr: `max without (instance) (${REC.clientIdChanges}) >= ${churnThreshold}\n`,
          annotations: {
            summary: 'A watched Hypha service keeps re-registering under new client ids.',
            description: prose(`
              The set of client ids providing {{ $labels.service }} changed {{ printf "%.0f" $value }} times in the last hour
              (threshold ${churnThreshold}). Every change strands proxies that long-lived clients cached before it.
            `),
          },
        }),
      ],
    },
    {
      name: 'hypha-serve-serve',
      rules: [
        alert('HyphaServeAppUnhealthy', {
          comment: 'Identity (ray_cluster, app): the status (DEPLOY_FAILED or UNHEALTHY) may change while the app stays broken, so it is in the text.',
          expr: `${held(REC.unhealthy)} == 1\n`,
          annotations: {
            summary: 'Ray Serve app is DEPLOY_FAILED or UNHEALTHY.',
            description: prose(`
              Ray Serve app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} is
              {{ range $i, $s := printf "max without (instance) (last_over_time(hypha_serve_app_status{job=%q,ray_cluster=%q,app=%q,status=~\\"DEPLOY_FAILED|UNHEALTHY\\"}[${B}])) == 1" $labels.job $labels.ray_cluster $labels.app | query | sortByLabel "status" }}{{ if $i }} or {{ end }}{{ $s.Labels.status }}{{ else }}DEPLOY_FAILED or UNHEALTHY{{ end }}
              and has been DEPLOY_FAILED or UNHEALTHY for more than ${human('HyphaServeAppUnhealthy')}
              {{- with printf "max without (instance) (hypha_serve_app_message_present{job=%q,ray_cluster=%q,app=%q}) == 1" $labels.job $labels.ray_cluster $labels.app | query }}; Serve reports a status message (on the exporter's status page){{ end }}.
            `),
          },
        }),
        alert('HyphaServeDeploymentReplicasMismatch', {
          comment: 'Never at an idle zero (target 0), never during a scale-up (target changed within 10 minutes).',
          expr: `${held(REC.replicasShort)} == 1\n`,
          annotations: {
            summary: 'Serve deployment has fewer RUNNING replicas than its target.',
            description: prose(`
              Deployment {{ $labels.deployment }} of app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} has been
              {{ with printf "max without (instance) (${REC.targetMinusRunning}{job=%q,ray_cluster=%q,app=%q,deployment=%q})" $labels.job $labels.ray_cluster $labels.app $labels.deployment | query }}{{ . | first | value }}{{ else }}some{{ end }}
              RUNNING replica(s) short of its target of
              {{ with printf "max without (instance) (hypha_serve_deployment_target_replicas{job=%q,ray_cluster=%q,app=%q,deployment=%q})" $labels.job $labels.ray_cluster $labels.app $labels.deployment | query }}{{ . | first | value }}{{ else }}(unknown){{ end }}
              for ${human('HyphaServeDeploymentReplicasMismatch')} while the target stayed constant.
            `),
          },
        }),
        alert('HyphaServeNoProxyCanWakeApps', {
          comment: 'Fires with the head proxy unready and also when Ray lists no head proxy (no proxy_head == 1 series) at all.',
          expr: `${held(REC.noProxyCanWake)} == 1\n`,
          annotations: {
            summary: 'Apps are scaled to zero and no Serve proxy is ready to wake them.',
            description: prose(`
              {{ with printf "max without (instance) (${REC.scaledToZero}{job=%q,ray_cluster=%q})" $labels.job $labels.ray_cluster | query }}{{ . | first | value }}{{ else }}Some{{ end }}
              deployment(s) on Ray cluster {{ $labels.ray_cluster }} are idle at zero replicas, and for
              ${human('HyphaServeNoProxyCanWakeApps')} no Serve proxy has answered /-/healthz
              {{- with printf "max without (instance) (hypha_serve_proxy_head{job=%q,ray_cluster=%q}) == 1" $labels.job $labels.ray_cluster | query }}{{ else }} (and Ray lists no head-node proxy){{ end }}.
              The head-node proxy is the only one Ray keeps ready at zero replicas (Ray PR #47002); a worker-node proxy is
              ready only once an ingress deployment it routes to has had replicas, and not while it is drained. HTTP
              requests to apps whose ingress deployment is at zero fail and cannot wake them until a proxy is ready.
              BioEngine apps are not affected: HTTP never wakes them (their ProxyDeployment has no __call__).
            `),
          },
        }),
        alert('HyphaServeAllProxiesUnready', {
          comment: 'Apps that have replicas are unreachable over HTTP: nothing routes to them.',
          expr: `${held(REC.allProxiesUnready)} == 1\n`,
          annotations: {
            summary: 'Every Serve proxy of a Ray cluster is unready while apps there have RUNNING replicas.',
            description: prose(`
              No Serve proxy of Ray cluster {{ $labels.ray_cluster }}
              ({{ with printf "max without (instance) (count without (node_id, node_ip) (hypha_serve_proxy_head{job=%q,ray_cluster=%q}))" $labels.job $labels.ray_cluster | query }}{{ . | first | value }}{{ else }}none{{ end }} listed)
              has answered /-/healthz for ${human('HyphaServeAllProxiesUnready')}, while its deployments have
              {{ with printf "max without (instance) (${REC.runningReplicas}{job=%q,ray_cluster=%q})" $labels.job $labels.ray_cluster | query }}{{ . | first | value }}{{ else }}some{{ end }}
              RUNNING replica(s). HTTP requests to every app on the cluster fail; calls through deployment handles (BioEngine's
              Hypha services) may still work.
            `),
          },
        }),
      ],
    },
    {
      name: 'hypha-serve-exporter',
      rules: [
        alert('HyphaServeSourceDown', {
          comment:
            'A fact about the upstream: fires when no replica can sample it (max over instances is 0), with the label its ' +
            'derived alerts carry (ray_cluster, hypha or service) so Alertmanager inhibits exactly those. last_over_time ' +
            'keeps a scrape gap from resetting it; one successful sample clears it.',
          expr: block(`
              label_replace(max without (instance) (last_over_time(hypha_serve_source_up{source="ray"}[${B}])), "ray_cluster", "$1", "target", "(.*)") == 0
            or
              label_replace(max without (instance) (last_over_time(hypha_serve_source_up{source="hypha"}[${B}])), "hypha", "$1", "target", "(.*)") == 0
            or
              label_replace(max without (instance) (last_over_time(hypha_serve_source_up{source="hypha_service"}[${B}])), "service", "$1", "target", "(.*)") == 0
          `),
          annotations: {
            summary: 'The exporter cannot sample one of its upstreams.',
            description: prose(`
              No hypha-serve-exporter replica of job {{ $labels.job }} has sampled {{ $labels.source }} source
              {{ $labels.target }} successfully for ${human('HyphaServeSourceDown')} (failures by reason over the last 10
              minutes:
              {{ range $i, $s := printf "max by (reason) (increase(hypha_serve_source_errors_total{job=%q,source=%q,target=%q}[10m])) > 0" $labels.job $labels.source $labels.target | query | sortByLabel "reason" }}{{ if $i }}, {{ end }}{{ $s.Labels.reason }} {{ printf "%.0f" $s.Value }}{{ else }}none recorded{{ end }}).
              Alerts derived from this source cannot fire until it is back; their last known state was held for
              ${humanDuration(B)}.{{ with printf "increase(hypha_serve_source_errors_total{job=%q,source=%q,target=%q,reason=%q}[10m]) > 0" $labels.job $labels.source $labels.target "auth_secret_changed" | query }}
              Hypha refused a token it had accepted before (auth_secret_changed): the server likely restarted with a new
              JWT secret (HYPHA_JWT_SECRET unset), so every token it issued is invalid, the BioEngine proxies' tokens too.
              Give the exporter a new token, redeploy the apps through the BioEngine worker and set HYPHA_JWT_SECRET on
              the server.{{ end }}
            `),
          },
        }),
        alert('HyphaServeSourceStale', {
          comment: 'A stuck sampler: source_up stays 1 while nothing new is sampled, so every derived series is frozen. Per exporter process.',
          expr: block(`
              hypha_serve_source_sample_age_seconds > 3 * hypha_serve_source_interval_seconds + 60
            and
              hypha_serve_source_up == 1
          `),
          annotations: {
            summary: 'The exporter serves an upstream\'s data without sampling it anew.',
            description: prose(`
              hypha-serve-exporter {{ $labels.instance }} reports {{ $labels.source }} source {{ $labels.target }} as up, but
              its last successful sample is {{ $value | humanizeDuration }} old, more than 3 sampling intervals
              {{- with printf "hypha_serve_source_interval_seconds{job=%q,instance=%q,source=%q,target=%q}" $labels.job $labels.instance $labels.source $labels.target | query }} ({{ . | first | value | humanizeDuration }} each){{ end }}
              plus a minute. Its sampler is stuck: every series derived from this source is frozen at that sample, and no
              alert about it can change state until the exporter is restarted.
            `),
          },
        }),
        alert('HyphaServeExporterDown', {
          comment: 'Per target: each replica of an HA pair is its own target.',
          expr: block(`
              up{${c.exporter_selector}} == 0
            or
              absent(up{${c.exporter_selector}})
          `),
          annotations: {
            summary: 'The hypha-serve-exporter target is down or missing from Prometheus.',
            description: prose(`
              {{ if $labels.instance }}Prometheus has failed to scrape hypha-serve-exporter target {{ $labels.instance }} (job
              {{ $labels.job }}) for ${human('HyphaServeExporterDown')}.{{ else }}Prometheus has had no target matching
              {${c.exporter_selector.replace(/"/g, "'")}} for ${human('HyphaServeExporterDown')}.{{ end }} Every hypha-serve alert
              that needs {{ if $labels.instance }}this replica{{ else }}the exporter{{ end }} is blind until it is back.
            `),
          },
        }),
        alert('HyphaServeExporterConfigReloadFailed', {
          comment: 'Per exporter process; a scrape gap does not reset it.',
          expr: `last_over_time(hypha_serve_exporter_config_last_reload_successful[${B}]) == 0\n`,
          annotations: {
            summary: 'The exporter rejected its new configuration.',
            description: prose(`
              The last configuration reload of hypha-serve-exporter {{ $labels.instance }} failed; it keeps running with the
              previous configuration, last loaded
              {{ with printf "hypha_serve_exporter_config_last_reload_success_timestamp_seconds{job=%q,instance=%q}" $labels.job $labels.instance | query }}{{ . | first | value | humanizeTimestamp }}{{ else }}at an unknown time{{ end }}.
            `),
          },
        }),
      ],
    },
  ];

  for (const g of recording) for (const r of g.rules) r.expr = sel(r.expr);
  for (const g of alerting) for (const r of g.rules) r.expr = sel(r.expr);
  return { recording, alerting };
}

// ---------------------------------------------------------------------------------------------
// Rendering

/** Plain rule groups (no comments), as Prometheus and the PrometheusRule spec take them. */
export function plainGroups(groups: Group<RecordingRule | AlertingRule>[]): { name: string; rules: Record<string, unknown>[] }[] {
  return groups.map((g) => ({
    name: g.name,
    rules: g.rules.map((r) => {
      const { comment: _comment, ...rest } = r;
      return rest as Record<string, unknown>;
    }),
  }));
}

const LINE_WIDTH = 120;

function renderRuleFile(header: string, groups: Group<RecordingRule | AlertingRule>[]): string {
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
    `# ${what} for hypha-serve-exporter, rendered by scripts/gen-rules.ts from rules/config/mixin.yml`,
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
      `${GENERATED('Recording rules (level:metric:operations)')}\n# The alerts read several of these: load both files.`,
      recording,
    ),
    alerts: renderRuleFile(`${GENERATED('Alerting rules')}\n# Several alerts read the recording rules in recording.yml: load both files.`, alerting),
    groups: [...plainGroups(recording), ...plainGroups(alerting)],
  };
}
