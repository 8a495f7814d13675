import { SERVICEABLE_DEPLOYMENT_STATUSES } from '../../serve/judgement';
import {
  REPLICA_STATES,
  ServeApp, ServeDeployment, ServeProxy,
} from '../../snapshot/types';
import { SourceError } from '../../util/errors';

// Parses GET /api/serve/applications/ (ServeInstanceDetails). The controller
// omits unset fields and the shape drifts across Ray 2.4x-2.60, so every field
// is optional unless the meaning of the sample depends on it, and enum values
// pass through as strings.

type Json = Record<string, unknown>;

function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function optString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
function optNumber(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
function optInt(v: unknown): number | undefined {
  const n = optNumber(v);
  return n !== undefined && n >= 0 ? Math.floor(n) : undefined;
}

export interface ParsedServe {
  controllerNodeId?: string;
  httpPort?: number;
  apps: ServeApp[];
  proxies: ServeProxy[];
  /** Apps or deployments skipped because their entry was malformed. */
  malformed: string[];
}

// A malformed entry throws a SourceError of class schema; the caller skips and counts it.
function parseDeployment(name: string, d: unknown): ServeDeployment {
  if (!isRecord(d)) throw new SourceError('schema', `deployment ${name} is not an object`);
  const status = optString(d.status);
  if (status === undefined) throw new SourceError('schema', `deployment ${name} has no status`);
  const replicas: Record<string, number> = Object.fromEntries(REPLICA_STATES.map((s) => [s, 0]));
  const list = d.replicas;
  if (list !== undefined && !Array.isArray(list)) throw new SourceError('schema', `deployment ${name}: replicas is not a list`);
  for (const r of list ?? []) {
    const state = isRecord(r) ? optString(r.state) : undefined;
    if (state === undefined) throw new SourceError('schema', `deployment ${name}: a replica has no state`);
    replicas[state] = (replicas[state] ?? 0) + 1;
  }
  const cfg = isRecord(d.deployment_config) ? d.deployment_config : {};
  const auto = isRecord(cfg.autoscaling_config) ? cfg.autoscaling_config : undefined;
  const fixed = optInt(cfg.num_replicas);
  let minReplicas: number | undefined;
  let maxReplicas: number | undefined;
  if (auto) {
    // AutoscalingConfig defaults (1/1) apply when the controller left them unset.
    minReplicas = optInt(auto.min_replicas) ?? 1;
    maxReplicas = optInt(auto.max_replicas) ?? 1;
  } else if (fixed !== undefined) {
    minReplicas = fixed;
    maxReplicas = fixed;
  }
  const totalReplicas = Object.values(replicas).reduce((a, b) => a + b, 0);
  let targetReplicas = optInt(d.target_num_replicas) ?? (auto ? undefined : fixed);
  if (targetReplicas === undefined && auto && totalReplicas === 0 && SERVICEABLE_DEPLOYMENT_STATUSES.includes(status)) {
    // Pre-2.10 controllers do not report a target; an idle, settled deployment's is its replica count.
    targetReplicas = status === 'HEALTHY' ? 0 : undefined;
  }
  const scaledToZero =
    minReplicas === 0 &&
    auto !== undefined &&
    targetReplicas === 0 &&
    (replicas.RUNNING ?? 0) === 0 &&
    SERVICEABLE_DEPLOYMENT_STATUSES.includes(status);
  return {
    name,
    status,
    statusTrigger: optString(d.status_trigger),
    messagePresent: (optString(d.message) ?? '') !== '',
    replicas,
    targetReplicas,
    minReplicas,
    maxReplicas,
    autoscaling: auto !== undefined,
    scaledToZero,
  };
}

function parseApp(name: string, a: unknown, malformed: string[]): ServeApp {
  if (!isRecord(a)) throw new SourceError('schema', `app ${name} is not an object`);
  const status = optString(a.status);
  if (status === undefined) throw new SourceError('schema', `app ${name} has no status`);
  const deployments: ServeDeployment[] = [];
  if (a.deployments !== undefined && !isRecord(a.deployments)) throw new SourceError('schema', `app ${name}: deployments is not an object`);
  for (const [dn, d] of Object.entries(a.deployments ?? {})) {
    try {
      deployments.push(parseDeployment(dn, d));
    } catch (e) {
      if (!(e instanceof SourceError && e.errorClass === 'schema')) throw e;
      malformed.push(`app ${name}: ${e.message}`);
    }
  }
  const message = optString(a.message) ?? '';
  const routePrefix = a.route_prefix === null ? null : optString(a.route_prefix) ?? null;
  return {
    name,
    status,
    message,
    messagePresent: message !== '',
    routePrefix,
    source: optString(a.source),
    lastDeployedSeconds: optNumber(a.last_deployed_time_s),
    deployments,
  };
}

export function parseServeInstance(body: unknown): ParsedServe {
  if (!isRecord(body)) throw new SourceError('schema', 'response is not a JSON object');
  const appsJson = body.applications;
  // Ray ~2.4 answered {host, port, application_details}; newer always has "applications".
  const appsObj = appsJson === undefined && isRecord(body.application_details) ? body.application_details : appsJson;
  if (appsObj === undefined || appsObj === null) {
    // The empty-Serve reply still has "applications": {}; a body without it is something else.
    throw new SourceError('schema', 'response has no "applications" field');
  }
  if (!isRecord(appsObj)) throw new SourceError('schema', '"applications" is not an object');
  const malformed: string[] = [];
  const apps: ServeApp[] = [];
  for (const [name, a] of Object.entries(appsObj)) {
    try {
      apps.push(parseApp(name, a, malformed));
    } catch (e) {
      if (!(e instanceof SourceError && e.errorClass === 'schema')) throw e;
      malformed.push(e.message);
    }
  }
  const controller = isRecord(body.controller_info) ? body.controller_info : {};
  const controllerNodeId = optString(controller.node_id);
  const proxiesObj = body.proxies ?? body.http_proxies; // http_proxies: Ray <= 2.6
  const proxies: ServeProxy[] = [];
  if (isRecord(proxiesObj)) {
    for (const [nodeId, p] of Object.entries(proxiesObj)) {
      if (!isRecord(p)) {
        malformed.push(`proxy ${nodeId} is not an object`);
        continue;
      }
      const id = optString(p.node_id) ?? nodeId;
      proxies.push({
        nodeId: id,
        nodeIp: optString(p.node_ip) ?? '',
        status: optString(p.status) ?? 'UNKNOWN',
        head: controllerNodeId !== undefined && id === controllerNodeId,
      });
    }
  }
  const httpOptions = isRecord(body.http_options) ? body.http_options : {};
  // exclude_unset drops a default port; 8000 is Serve's default.
  const httpPort = optInt(httpOptions.port) ?? (proxies.length > 0 ? 8000 : undefined);
  return { controllerNodeId, httpPort, apps, proxies, malformed };
}

