import { ConfigError, loadConfig } from '../config/load';
import { Exporter } from '../exporter/exporter';
import { createLogger } from '../util/log';
import type { AppV1, SourceV1, WatchedServiceV1 } from '../status-page/model';
import { buildStatus } from '../status-page/build';
import type { Snapshot } from '../snapshot/types';
import { REVISION, VERSION } from '../util/version';
import { AlertCondition, alertConditions, pendingJudgements } from './check-conditions';
import type { CheckFlags } from './flags';
import { isoSeconds } from '../util/iso-seconds';

// `hypha-serve-exporter check`: the exporter itself (same sources, same registration stage),
// started in-process without an HTTP server, stopped once every source's first attempt has ended
// and every judgement has been made (or --timeout passed). Its snapshot is printed through the
// status API's own view (src/status-page/build.ts), and the exit code comes from alertConditions.

export const EXIT_OK = 0;
export const EXIT_ALERT = 1;
export const EXIT_ERROR = 2;

/** `check --output json` (docs/check.md). Version 1 may gain optional fields. */
export interface CheckResultV1 {
  check_version: 1;
  generated_at: number;
  config_file: string;
  /** --app, when given. */
  app?: string;
  exit_code: 0 | 1 | 2;
  /** True when every source was sampled and every judgement made before --timeout. */
  complete: boolean;
  /** Sources that could not be read (each one line: "<source>/<target>: <error>"). */
  errors: string[];
  /** What was still not judged when --timeout passed. */
  unknown: string[];
  /** Critical alert conditions that hold now. */
  conditions: ConditionV1[];
  /** As in GET /api/v1/status (docs/status-api.schema.json). */
  sources: SourceV1[];
  apps: AppV1[];
  watched_services: WatchedServiceV1[];
}

export interface ConditionV1 {
  alert: string;
  severity: 'critical';
  subject: string;
  text: string;
  ray_cluster?: string;
  app?: string;
  service?: string;
  holder?: string;
}

/** `--config.check`: loads and validates the file the way the exporter does, contacts nothing. */
export function checkConfigFile(file: string): { ok: true; summary: string } | { ok: false; error: string } {
  try {
    const cfg = loadConfig(file);
    const summary = `${cfg.file}: valid (${cfg.rayClusters.length} Ray cluster(s), ${cfg.hyphaServers.length} Hypha server(s), `
      + `${cfg.hyphaServers.length > 0 ? cfg.watchedServices.length : 0} watched service(s))`;
    return { ok: true, summary };
  } catch (e) {
    if (e instanceof ConfigError) return { ok: false, error: e.message };
    throw e;
  }
}

const POLL_MS = 100;
const STOP_GRACE_MS = 5000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the check; writes its report to `out` and returns the exit code. */
export async function runCheck(flags: CheckFlags, out: (text: string) => void, err: (text: string) => void): Promise<number> {
  const log = createLogger(flags.logLevel);
  const exporter = new Exporter({ configFile: flags.configFile, log, storagePath: flags.storagePath, storageReadOnly: true });
  try {
    exporter.start();
  } catch (e) {
    if (e instanceof ConfigError) {
      err(`hypha-serve-exporter: error: ${e.message}\n`);
      return EXIT_ERROR;
    }
    throw e;
  }
  const started = Date.now();
  const deadline = started + flags.timeoutMs;
  let pending: string[] = [];
  try {
    // The first cycles run at start; later cycles keep running while we wait, so a judgement that
    // needs a second look (a loss confirmed on a fresh Serve sample) gets it.
    for (;;) {
      const cfg = exporter.config;
      pending = cfg ? pendingJudgements(exporter.store.get(), cfg) : ['configuration not loaded'];
      if (pending.length === 0 || Date.now() >= deadline) break;
      await sleep(POLL_MS);
    }
    const snapshot = exporter.store.get();
    const result = checkResult(snapshot, flags, pending, exporter.ready);
    out(flags.output === 'json' ? `${JSON.stringify(result, null, 2)}\n` : renderText(result, (Date.now() - started) / 1000));
    return result.exit_code;
  } finally {
    // Bounded: the answer is printed; a connection that is slow to close must not hold the exit.
    await Promise.race([exporter.stop(), sleep(STOP_GRACE_MS)]);
  }
}

/** The report and its exit code, from one snapshot. Exported for unit tests on recorded snapshots. */
export function checkResult(snapshot: Snapshot, flags: Pick<CheckFlags, 'app' | 'configFile'>, pending: readonly string[], ready: boolean): CheckResultV1 {
  const now = Date.now() / 1000;
  const status = buildStatus({ snapshot, transitions: [], transitionsCapacity: 0, ready, version: VERSION, revision: REVISION, now });
  let conditions: AlertCondition[] = alertConditions(snapshot);
  let apps = status.apps;
  let sources = status.sources;
  let watched = status.watched_services;
  const unknown = [...pending];
  const errors: string[] = [];
  if (flags.app !== undefined) {
    const app = flags.app;
    apps = apps.filter((a) => a.app === app);
    const clusters = new Set(apps.map((a) => a.cluster));
    const servers = new Set(apps.map((a) => a.registration?.hypha).filter((h) => h !== undefined));
    // What the app's answer rests on: its Ray clusters and the Hypha servers it registers on.
    const relevant = (kind: string, target: string) => (kind === 'ray' && clusters.has(target)) || (kind === 'hypha' && servers.has(target));
    conditions = conditions.filter((c) => c.app === app || (c.app === undefined && c.rayCluster !== undefined && clusters.has(c.rayCluster)));
    if (apps.length > 0) {
      sources = sources.filter((s) => relevant(s.source, s.target));
      watched = [];
      // Still unknown for this app: everything but watched services and other apps' registrations
      // (a Ray cluster not read yet may have the app too; a worker not asked yet may name its id).
      const unknownForApp = unknown.filter((u) => !u.startsWith('hypha_service/') && !(u.startsWith('registration of ') && !u.includes(`/${app}:`)));
      unknown.length = 0;
      unknown.push(...unknownForApp);
    } else {
      // Every Ray source must have answered before "no such app" is an answer.
      const rayDown = sources.filter((s) => s.source === 'ray' && !s.up);
      errors.push(rayDown.length > 0
        ? `app "${app}" not found; Ray cluster(s) ${rayDown.map((s) => s.target).join(', ')} could not be read`
        : `app "${app}" not found on any configured Ray cluster`);
    }
  }
  for (const s of sources) {
    if (!s.up && s.last_error !== undefined) errors.push(`${s.source}/${s.target}: ${s.last_error}`);
  }
  const complete = unknown.length === 0 && errors.length === 0;
  const exitCode: 0 | 1 | 2 = !complete ? EXIT_ERROR : conditions.length > 0 ? EXIT_ALERT : EXIT_OK;
  return {
    check_version: 1,
    generated_at: now,
    config_file: flags.configFile,
    ...(flags.app !== undefined ? { app: flags.app } : {}),
    exit_code: exitCode,
    complete,
    errors,
    unknown,
    conditions: conditions.map(conditionV1),
    sources,
    apps,
    watched_services: watched,
  };
}

function conditionV1(c: AlertCondition): ConditionV1 {
  const out: ConditionV1 = { alert: c.alert, severity: c.severity, subject: c.subject, text: c.text };
  if (c.rayCluster !== undefined) out.ray_cluster = c.rayCluster;
  if (c.app !== undefined) out.app = c.app;
  if (c.service !== undefined) out.service = c.service;
  if (c.holder !== undefined) out.holder = c.holder;
  return out;
}


/** The report for a person at a terminal. */
export function renderText(r: CheckResultV1, seconds: number): string {
  const lines: string[] = [];
  lines.push(`hypha-serve-exporter check: ${r.config_file}${r.app !== undefined ? `, app ${r.app}` : ''} `
    + `(${isoSeconds(r.generated_at)}, sampled in ${seconds.toFixed(1)} s)`);
  lines.push('', 'Sources');
  for (const s of r.sources) {
    const state = s.up ? 'up  ' : 'DOWN';
    const detail = s.up
      ? (s.last_duration_seconds !== undefined ? `sampled in ${s.last_duration_seconds.toFixed(2)} s` : '')
      : (s.last_error ?? 'no answer yet');
    lines.push(`  ${state}  ${`${s.source}/${s.target}`.padEnd(40)} ${detail}`);
  }
  lines.push('', 'Apps');
  if (r.apps.length === 0) lines.push('  (none)');
  for (const a of r.apps) {
    lines.push(`  ${a.cluster}/${a.app}`);
    const deps = a.deployments.map((d) => `${d.name} ${d.status} ${d.running}/${d.target ?? '?'} running${d.scaled_to_zero ? ', at zero' : ''}`).join('; ');
    lines.push(`    Ray status:        ${a.status}${deps ? ` (${deps})` : ''}`);
    const reg = a.registration;
    if (!reg) {
      lines.push('    expected service:  not judged (no registration mapping covers this app, or its Hypha server could not be read)');
      continue;
    }
    lines.push(`    expected service:  ${reg.expected_service_id} (Hypha server ${reg.hypha ?? '?'})`);
    const registered = reg.state === 'registered'
      ? `yes${reg.client_id ? `, client ${reg.client_id}` : ''}${reg.client_id_mismatch ? ' (NOT the expected client id)' : ''}`
      : reg.state === 'unknown' ? 'unknown' : 'NO';
    lines.push(`    registered:        ${registered}`);
    lines.push(`    cause:             ${reg.state}: ${reg.cause}`);
    if (reg.missing_since !== undefined) lines.push(`    missing since:     ${isoSeconds(reg.missing_since)}`);
    if (reg.bioengine_gate) {
      const g = reg.bioengine_gate;
      const from = g.source === 'evidence' ? 'seen doing so'
        : g.version !== undefined ? `worker ${g.worker ?? '?'} reports BioEngine ${g.version}` : 'worker version not known';
      lines.push(`    BioEngine gate:    ${g.gate} (${from})`);
    }
    if (reg.page) {
      const p = reg.page;
      const due = p.due !== undefined ? isoSeconds(p.due) : '?';
      lines.push(`    page:              ${p.firing ? `FIRING since ${due}` : `fires at ${due} unless it registers first`}`);
    }
    if (a.worker_view) {
      lines.push(`    worker says:       ${a.worker_view.app_status ?? '?'} (${a.worker_view.worker}${a.worker_view.worker_up ? '' : ', not answering'})`);
    }
  }
  if (r.app === undefined) {
    lines.push('', 'Watched services');
    if (r.watched_services.length === 0) lines.push('  (none)');
    for (const w of r.watched_services) {
      lines.push(`  ${w.service}${w.up === false ? ' (DOWN)' : ''}`);
      lines.push(`    providers:         ${w.providers === null ? 'unknown' : w.provider_client_ids.join(', ') || 'none'}`);
      lines.push(`    resolved:          ${w.resolved_client_id ?? 'none'}`);
      for (const c of w.cached) {
        const since = c.stale_since !== undefined ? ` since ${isoSeconds(c.stale_since)}` : '';
        const st = c.stale === true ? `STALE${since}` : c.stale === false ? 'live' : 'unknown';
        lines.push(`    cached (${c.holder}):`.padEnd(23) + `${c.client_id ?? '?'} ${st}${c.error ? ` (${c.error})` : ''}`);
      }
      for (const p of w.probes) {
        lines.push(`    probe ${p.via}:`.padEnd(23) + `${p.outcome ?? '?'}${p.latency_seconds !== undefined ? ` in ${p.latency_seconds.toFixed(2)} s` : ''}`);
      }
      for (const h of w.worker_holders ?? []) {
        lines.push(`    worker holder:`.padEnd(23) + `${h.holder} (${h.version === null ? 'version unknown' : `BioEngine ${h.version}`}): ${h.recovery}`);
      }
      if (w.witness_self_healing === true) {
        lines.push(`    witness:`.padEnd(23) + 'self-healing: every holder re-resolves by itself; a warning (HyphaServiceCachedProxySelfHealing),'
          + ' released by the exporter by itself');
      }
    }
  }
  lines.push('', 'Alert conditions (critical pages whose condition holds now; the rules page after their for:)');
  if (r.conditions.length === 0) lines.push('  none');
  for (const c of r.conditions) lines.push(`  ${c.alert}  ${c.subject}: ${c.text}`);
  if (r.errors.length > 0) {
    lines.push('', 'Errors');
    for (const e of r.errors) lines.push(`  ${e}`);
  }
  if (r.unknown.length > 0) {
    lines.push('', 'Unknown (not judged before --timeout; nothing is claimed about it)');
    for (const u of r.unknown) lines.push(`  ${u}`);
  }
  const verdict = r.exit_code === EXIT_OK ? 'no alert condition holds'
    : r.exit_code === EXIT_ALERT ? `${r.conditions.length} alert condition(s) hold` : 'incomplete: see Errors/Unknown';
  lines.push('', `Result: ${verdict} (exit ${r.exit_code})`);
  return `${lines.join('\n')}\n`;
}
