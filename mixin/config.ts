// The mixin configuration (rules/config/mixin.yml): what a deployment changes in the rules pack.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { durationProblem, formatDuration, parseDuration } from '../src/util/duration';

export const MIXIN_CONFIG_PATH = 'rules/config/mixin.yml';
export const RECORDING_PATH = 'rules/recording.yml';
export const ALERTS_PATH = 'rules/alerts.yml';
/** The same two files for vmalert, with the group settings Prometheus refuses (mixin/index.ts vmalertSettings). */
export const VMALERT_DIR = 'rules/vmalert';

/**
 * Prometheus' duration syntax (src/util/duration.ts: units in descending order, each at most once);
 * a bare "0" is written back as 0s, which the page texts and range selectors read.
 */
const duration = z
  .string()
  .superRefine((s, ctx) => {
    const problem = durationProblem(s);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform((s) => (s === '0' ? '0s' : s));

export const ALERT_NAMES = [
  'HyphaServeAppRunningNotRegistered',
  'HyphaServeWorkerAppRunningNotRegistered',
  'HyphaServeAppWillDeregisterAtZero',
  'HyphaServiceCachedProxyStale',
  'HyphaServiceCachedProxySelfHealing',
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
  'HyphaServeExporterWebConfigReloadFailed',
] as const;
export type AlertName = (typeof ALERT_NAMES)[number];

const alertSettings = z.strictObject({
  severity: z.enum(['critical', 'warning', 'info']),
  for: duration,
  keep_firing_for: duration.optional(),
  /** Leaves the alert out of the pack (its recording rules stay: dashboards and other alerts read them). */
  disabled: z.boolean().optional(),
});

const labelName = z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, 'a Prometheus label name');

/** Labels the pack's own identities use: a topology label may not be one of them. */
const RESERVED_LABELS = new Set(['job', 'instance', 'ray_cluster', 'app', 'hypha', 'service', 'holder', 'deployment', 'source', 'state', 'status', 'worker', 'severity', 'alertname']);

const configSchema = z.strictObject({
  topology_labels: z.array(labelName).refine((l) => !l.some((n) => RESERVED_LABELS.has(n)), 'must not name a label the pack uses itself (job, instance, ray_cluster, app, hypha, service, ...)'),
  exporter_selector: z.string().min(1),
  runbook_url_template: z.string().refine((s) => s.includes('%s'), 'must contain %s (the alert name)'),
  /** Added to every alert; an alert's own labels (severity, its identity) win. */
  rule_labels: z.record(labelName, z.string()).default({}),
  /** Added to every alert; an alert's own annotations win. */
  rule_annotations: z.record(z.string().min(1), z.string()).default({}),
  bridge: duration,
  thresholds: z.strictObject({
    call_latency_p90_seconds: z.number().positive(),
    client_id_changes_per_hour: z.number().int().positive(),
  }),
  vmalert: z.strictObject({
    /** Each group's eval_delay and its queries' latency_offset in rules/vmalert/ (they must match). */
    latency_offset: duration,
  }),
  prometheus_rule: z.strictObject({
    name: z.string().min(1),
    labels: z.record(z.string(), z.string()),
  }),
  alerts: z.strictObject(Object.fromEntries(ALERT_NAMES.map((n) => [n, alertSettings])) as Record<AlertName, typeof alertSettings>),
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
  // Keys of metric contract v0.3 whose judgement moved into the exporter (v0.4): an error that says where they went.
  const moved: Record<string, string> = {
    cause_waits: 'the exporter decides the pages with per-cause waits now; set them in the exporter config: '
      + 'hypha_registration.page_waits (HyphaServeAppRunningNotRegistered) and watched_services[].page_waits (HyphaServiceCachedProxyStale)',
    probe_window: 'the exporter decides the probe pages now; set watched_services[].probe_window in the exporter config',
  };
  for (const [key, where] of Object.entries(moved)) {
    if (isPlainObject(merged) && merged[key] !== undefined) throw new Error(`${userFile ?? MIXIN_CONFIG_PATH}: ${key}: ${where} (docs/alerts.md)`);
  }
  const r = configSchema.safeParse(merged);
  if (!r.success) {
    const where = userFile ?? MIXIN_CONFIG_PATH;
    throw new Error(`${where}: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return r.data;
}

/**
 * The configuration with every duration (each alert's for and keep_firing_for, and the bridge) divided by `divisor` and floored at `min`: the documented test override that lets
 * the end-to-end replays page in seconds with the same rule logic (test/harness/rules-override.ts).
 */
export function scaleDurations(c: MixinConfig, divisor: number, min = '5s'): MixinConfig {
  const floor = parseDuration(min) ?? 5000;
  const scale = (d: string): string => {
    const ms = parseDuration(d);
    if (ms === undefined) throw new Error(durationProblem(d));
    // No wait stays no wait (the per-cause alerts' for: and proven wait); the floor is for waits.
    if (ms === 0) return d;
    return formatDuration(Math.max(floor, Math.round(ms / divisor / 1000) * 1000));
  };
  const alerts = Object.fromEntries(
    Object.entries(c.alerts).map(([name, a]) => [name, { ...a, for: scale(a.for), ...(a.keep_firing_for ? { keep_firing_for: scale(a.keep_firing_for) } : {}) }]),
  ) as MixinConfig['alerts'];
  return { ...c, bridge: scale(c.bridge), alerts };
}

