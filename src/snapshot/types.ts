import type { WatchedServiceSample } from './services';
import type { HyphaSample } from '../registration/types';
import type { Restored } from './persisted';

// The typed snapshot: everything sources learned in their latest sample.
// Sources write it; metrics, the status page and the JSON API only read it.

/** Why a sample failed. Closed set: it is a label value. */
export type SampleErrorReason =
  | 'timeout'
  | 'connect'
  | 'http_status'
  | 'too_large'
  | 'bad_json'
  | 'schema'
  | 'auth'
  | 'rpc'
  | 'other';

export const SAMPLE_ERROR_REASONS: readonly SampleErrorReason[] = [
  'timeout', 'connect', 'http_status', 'too_large', 'bad_json', 'schema', 'auth', 'rpc', 'other',
];

// 'hypha' is a registry connection (target = configured server name); 'hypha_service' is a
// watched service's own connection (target = the service id, e.g. public/artifact-manager), kept
// apart so that a failing watched service silences only the alerts derived from it.
export type SourceKind = 'ray' | 'hypha' | 'hypha_service';

/** Health of one upstream, in the style of consul_exporter's `consul_up`. */
export interface SourceHealth {
  source: SourceKind;
  /** The configured name of the upstream (cluster or Hypha server name), never its URL. */
  target: string;
  up: boolean;
  /** Wall-clock seconds of the last successful sample, if any. */
  lastSuccessSeconds?: number;
  /** Duration of the last sample attempt, seconds. */
  lastDurationSeconds?: number;
  /** Cumulative errors by reason since the exporter started. */
  errors: Record<SampleErrorReason, number>;
  /** Last error message (already free of secrets), for logs and the status page. */
  lastError?: string;
  lastErrorSeconds?: number;
  /** Configured sampling interval (seconds): a sample age well past it while `up` stays 1 is a stuck sampler. */
  intervalSeconds?: number;
}

/**
 * A source's health at start. A source restarted by a reload continues from its predecessor's
 * health (up, last success, error counts): a reload is not an outage, and counters must not reset.
 */
export function newSourceHealth(source: SourceKind, target: string, intervalSeconds?: number, previous?: SourceHealth): SourceHealth {
  if (previous && previous.source === source && previous.target === target) return { ...previous, intervalSeconds };
  const errors = Object.fromEntries(SAMPLE_ERROR_REASONS.map((r) => [r, 0])) as Record<SampleErrorReason, number>;
  return { source, target, up: false, errors, intervalSeconds };
}

/** The health after a failed sample: down, counted by reason, with the (already scrubbed) message. */
export function failedHealth(h: SourceHealth, reason: SampleErrorReason, message: string, durationSeconds?: number): SourceHealth {
  return {
    ...h,
    up: false,
    lastDurationSeconds: durationSeconds ?? h.lastDurationSeconds,
    errors: { ...h.errors, [reason]: h.errors[reason] + 1 },
    lastError: message,
    lastErrorSeconds: Date.now() / 1000,
  };
}

// ---------------------------------------------------------------- Ray Serve

export const APP_STATUSES = ['NOT_STARTED', 'DEPLOYING', 'DEPLOY_FAILED', 'RUNNING', 'UNHEALTHY', 'DELETING'] as const;
export const DEPLOYMENT_STATUSES = ['UPDATING', 'HEALTHY', 'UNHEALTHY', 'DEPLOY_FAILED', 'UPSCALING', 'DOWNSCALING'] as const;
export const REPLICA_STATES = ['STARTING', 'UPDATING', 'RECOVERING', 'RUNNING', 'STOPPING', 'PENDING_MIGRATION'] as const;
export const PROXY_STATUSES = ['STARTING', 'HEALTHY', 'UNHEALTHY', 'DRAINING', 'DRAINED'] as const;


export interface ServeDeployment {
  name: string;
  /** Upstream value as-is; unknown values pass through. */
  status: string;
  statusTrigger?: string;
  messagePresent: boolean;
  /** Count per replica state; every known state is present (explicit zeros), unknown ones added. */
  replicas: Record<string, number>;
  targetReplicas?: number;
  minReplicas?: number;
  maxReplicas?: number;
  autoscaling: boolean;
  /** Idle at zero by design: autoscaling allows 0, target 0, no RUNNING replica, serviceable status. */
  scaledToZero: boolean;
}

export interface ServeApp {
  name: string;
  status: string;
  messagePresent: boolean;
  message: string;
  routePrefix: string | null;
  source?: string;
  lastDeployedSeconds?: number;
  deployments: ServeDeployment[];
}

export interface ServeProxy {
  nodeId: string;
  nodeIp: string;
  /** Controller's view (ProxyStatus); not the same as readiness. */
  status: string;
  /** Runs on the controller's (head) node: the only proxy that can wake a scaled-to-zero app. */
  head: boolean;
  /** Result of GET /-/healthz; undefined when the probe is disabled or no HTTP port is known. */
  ready?: boolean;
  readyDetail?: string;
}

export interface ServeState {
  apps: ServeApp[];
  proxies: ServeProxy[];
  /** Apps left out because of the per-cluster cap (cumulative count lives in the source). */
  appsDropped: number;
  /**
   * When the request behind this state was sent (Unix seconds): a registry
   * change seen later may not be explained by it yet.
   */
  requestedSeconds?: number;
}

export interface RayClusterSample {
  cluster: string;
  health: SourceHealth;
  /** Undefined whenever the last sample failed: no stale app series are rendered. */
  state?: ServeState;
  /** Cumulative count of apps dropped by the cap. */
  appsDroppedTotal: number;
  /** Cumulative count of malformed entries skipped while parsing (an app or deployment). */
  malformedTotal: number;
}

/** Everything currently known; replaced wholesale, never mutated in place. */
export interface Snapshot {
  /** Increments on every change; renderers rebuild only when it moved. */
  version: number;
  ray: ReadonlyMap<string, RayClusterSample>;
  /** Watched services by configured id (issue 4). */
  services?: ReadonlyMap<string, WatchedServiceSample>;
  /** The Hypha registry and per-app registration. */
  hypha?: HyphaSample;
  /** State saved before a restart (--storage.path), for sources to continue from; never rendered. */
  restored?: Restored;
}

/** Health of every upstream in the snapshot (each source adds its own part here). */
export function sourceHealths(s: Snapshot): SourceHealth[] {
  const out: SourceHealth[] = [];
  for (const r of s.ray.values()) out.push(r.health);
  for (const w of s.services?.values() ?? []) out.push(w.health);
  if (s.hypha) out.push(s.hypha.health);
  return out;
}
