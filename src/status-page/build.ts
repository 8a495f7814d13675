import type { RayClusterSample, ServeApp, ServeDeployment, Snapshot, SourceHealth } from '../snapshot/types';
import { isKnown, REASON_HINTS, sourceHealths } from '../snapshot/types';
import {
  AppV1, ClusterV1, DeploymentV1, ProblemV1, SourceV1, StatusV1, TransitionV1,
} from './model';
import { registrationView } from './registration-view';
import { servicesView } from './services-view';
import { serveAppProblems, severityRank, worst } from './severity';

/** Longest Serve message kept; tracebacks end with the exception, so the tail is kept. */
export const MESSAGE_MAX_CHARS = 2000;

export interface StatusInputs {
  snapshot: Snapshot;
  /** Newest first. */
  transitions: readonly TransitionV1[];
  transitionsCapacity: number;
  ready: boolean;
  version: string;
  revision: string;
  /** Unix seconds. */
  now: number;
}

/** The JSON status, built from the snapshot alone (never from an upstream). */
export function buildStatus(inp: StatusInputs): StatusV1 {
  const { snapshot: s, now } = inp;
  const sources = sourceHealths(s).map((h) => sourceV1(h, now)).sort(bySourceName);
  const clusters = [...s.ray.values()].map(clusterV1).sort((a, b) => cmp(a.cluster, b.cluster));
  const reg = registrationView(s);
  const services = servicesView(s);

  const apps: AppV1[] = [];
  for (const sample of s.ray.values()) {
    for (const app of sample.state?.apps ?? []) {
      const a = appV1(sample.cluster, app);
      const r = reg.forApp(sample.cluster, app);
      if (r.registration) {
        a.registration = r.registration;
        a.severity = worst(a.severity, r.severity);
        a.problems.push(...r.problems);
      }
      if (r.workerView) a.worker_view = r.workerView;
      apps.push(a);
    }
  }
  apps.sort((a, b) => severityRank(a.severity) - severityRank(b.severity) || cmp(a.cluster, b.cluster) || cmp(a.app, b.app));

  const problems: ProblemV1[] = [];
  for (const src of sources) {
    // A source still in its first attempt is unknown, not down.
    if (!src.up && !src.pending) {
      const hint = src.hint ? ` — ${src.hint}` : '';
      problems.push({
        severity: 'critical',
        kind: 'source',
        subject: `${src.source}/${src.target}`,
        text: src.last_success_at === undefined
          ? `no successful sample yet${src.last_error ? `: ${src.last_error}` : ''}${hint}`
          : `down${src.last_error ? `: ${src.last_error}` : ''}${hint}`,
        ...(src.source === 'ray' ? { cluster: src.target } : {}),
      });
    }
  }
  problems.push(...serverIdProblems(s));
  for (const c of clusters) problems.push(...clusterProblems(c));
  for (const a of apps) {
    if (a.severity === 'ok') continue;
    problems.push({ severity: a.severity, kind: 'app', subject: `${a.cluster}/${a.app}`, text: a.problems.join('; '), cluster: a.cluster, app: a.app });
  }
  problems.push(...reg.problems);
  for (const w of services.services) {
    // A service whose sample failed is already listed as a source problem.
    if (w.severity === 'ok' || w.problems.length === 0) continue;
    problems.push({ severity: w.severity, kind: 'service', subject: w.service, text: w.problems.join('; '), service: w.service });
  }
  // Stable sort: within a severity, sources before clusters before apps.
  problems.sort((a, b) => severityRank(a.severity) - severityRank(b.severity));

  const up = sources.filter((x) => x.up).length;
  return {
    version: 1,
    generated_at: now,
    exporter: { version: inp.version, revision: inp.revision, ready: inp.ready },
    summary: {
      problems: problems.length,
      critical: problems.filter((p) => p.severity === 'critical').length,
      warning: problems.filter((p) => p.severity === 'warning').length,
      apps: apps.length,
      sources_up: up,
      sources_down: sources.filter((x) => !x.up && !x.pending).length,
    },
    sections: { registration: reg.enabled, watched_services: services.enabled },
    problems,
    sources,
    clusters,
    apps,
    workers: reg.workers,
    watched_services: services.services,
    transitions: [...inp.transitions],
    transitions_capacity: inp.transitionsCapacity,
  };
}

/** HyphaServeServerIdUnstable's line: a Hypha server that came back under another server id. */
function serverIdProblems(s: StatusInputs['snapshot']): ProblemV1[] {
  const out: ProblemV1[] = [];
  for (const h of s.hypha?.values() ?? []) {
    if (!h.health.up || h.serverIdChanged !== true) continue;
    out.push({
      severity: 'warning',
      kind: 'source',
      subject: `hypha/${h.target}`,
      text: `came back under another server id (${h.previousServerId ?? 'unknown'} → ${h.serverId ?? 'unknown'}): no fixed --server-id / HYPHA_SERVER_ID, `
        + 'so every restart strands proxies cached to its built-in services, the artifact manager among them (incident 2)',
    });
  }
  return out;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function bySourceName(a: SourceV1, b: SourceV1): number {
  return cmp(a.source, b.source) || cmp(a.target, b.target);
}

function sourceV1(h: SourceHealth, now: number): SourceV1 {
  const errors: Record<string, number> = { ...h.errors };
  const out: SourceV1 = {
    source: h.source,
    target: h.target,
    up: h.up,
    errors,
    errors_total: Object.values(errors).reduce((x, y) => x + y, 0),
  };
  if (h.lastSuccessSeconds !== undefined) {
    out.last_success_at = h.lastSuccessSeconds;
    out.last_sample_age_seconds = Math.max(0, now - h.lastSuccessSeconds);
  }
  if (h.lastDurationSeconds !== undefined) out.last_duration_seconds = h.lastDurationSeconds;
  if (h.lastError !== undefined) out.last_error = h.lastError;
  if (h.lastErrorSeconds !== undefined) out.last_error_at = h.lastErrorSeconds;
  if (h.lastErrorReason !== undefined) {
    out.last_error_reason = h.lastErrorReason;
    const hint = REASON_HINTS[h.lastErrorReason];
    if (hint !== undefined && !h.up) out.hint = hint;
  }
  if (!isKnown(h)) out.pending = true;
  if (h.credential) {
    const c = h.credential;
    out.credential = {
      file: c.file, last_read_at: c.lastReadSeconds, read_errors_total: c.readErrorsTotal, ...(c.problem !== undefined ? { problem: c.problem } : {}),
    };
  }
  return out;
}

function clusterV1(c: RayClusterSample): ClusterV1 {
  return {
    cluster: c.cluster,
    up: c.health.up && c.state !== undefined,
    apps: c.state ? c.state.apps.length : null,
    apps_dropped_total: c.appsDroppedTotal,
    malformed_total: c.malformedTotal,
    proxies: (c.state?.proxies ?? []).map((p) => ({
      node_id: p.nodeId,
      node_ip: p.nodeIp,
      status: p.status,
      head: p.head,
      ready: p.ready ?? null,
      ...(p.readyDetail !== undefined ? { ready_detail: p.readyDetail } : {}),
    })),
  };
}

function clusterProblems(c: ClusterV1): ProblemV1[] {
  const out: ProblemV1[] = [];
  for (const p of c.proxies) {
    // Only the head proxy is kept ready at zero replicas (Ray PR #47002), so its readiness matters most. With no
    // app deployed a proxy answers 503 ("Route table is not populated yet") by design.
    if (p.ready === false && c.apps !== 0) {
      out.push({
        severity: p.head ? 'critical' : 'warning',
        kind: 'proxy',
        subject: `${c.cluster}/proxy ${p.node_ip || p.node_id}`,
        text: `${p.head ? 'head ' : ''}proxy not ready${p.ready_detail ? `: ${p.ready_detail}` : ''}`,
        cluster: c.cluster,
      });
    } else if (p.status !== 'HEALTHY' && p.ready !== false) {
      out.push({ severity: 'warning', kind: 'proxy', subject: `${c.cluster}/proxy ${p.node_ip || p.node_id}`, text: `proxy ${p.status}`, cluster: c.cluster });
    }
  }
  if (c.apps_dropped_total > 0) {
    out.push({
      severity: 'warning', kind: 'cluster', subject: c.cluster, text: `${c.apps_dropped_total} app(s) dropped by the max_apps cap`, cluster: c.cluster,
    });
  }
  return out;
}

function appV1(cluster: string, app: ServeApp): AppV1 {
  const { severity, problems } = serveAppProblems(app);
  const truncated = app.message.length > MESSAGE_MAX_CHARS;
  const out: AppV1 = {
    cluster,
    app: app.name,
    status: app.status,
    severity,
    problems,
    message: truncated ? `…${app.message.slice(-MESSAGE_MAX_CHARS)}` : app.message,
    message_truncated: truncated,
    route_prefix: app.routePrefix,
    deployments: app.deployments.map(deploymentV1),
  };
  if (app.lastDeployedSeconds !== undefined) out.last_deployed_at = app.lastDeployedSeconds;
  return out;
}

function deploymentV1(d: ServeDeployment): DeploymentV1 {
  const out: DeploymentV1 = {
    name: d.name,
    status: d.status,
    message_present: d.messagePresent,
    replicas: { ...d.replicas },
    running: d.replicas.RUNNING ?? 0,
    autoscaling: d.autoscaling,
    scaled_to_zero: d.scaledToZero,
  };
  if (d.statusTrigger !== undefined) out.status_trigger = d.statusTrigger;
  if (d.targetReplicas !== undefined) out.target = d.targetReplicas;
  if (d.minReplicas !== undefined) out.min = d.minReplicas;
  if (d.maxReplicas !== undefined) out.max = d.maxReplicas;
  return out;
}
