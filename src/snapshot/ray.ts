import type { SourceHealth } from './health';

// What a Ray Serve source learned in its latest sample: the Ray part of the snapshot.

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

/**
 * The two proxy pages of a Ray cluster, decided once by proxyPages (src/serve/judgement.ts) at each
 * sample (the metrics, `check` and the status page read the decision): no Serve proxy can take a
 * request (none of the probed proxies answers /-/healthz with 200, or Ray lists no proxy at all) while
 * deployments are idle at zero (nothing can wake them: HyphaServeNoProxyCanWakeApps) or have RUNNING
 * replicas (nothing routes to them: HyphaServeAllProxiesUnready). Proxies listed but none probed (probe
 * disabled, no HTTP port) is unknown: undefined, never a page.
 */
export interface ProxyPages {
  noProxyCanWakeApps: boolean;
  allProxiesUnready: boolean;
  /** Why no proxy can take a request, when that holds (for `check` and the status page). */
  why?: string;
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
  /** The proxy pages, decided from `state` (proxyPages in src/serve/judgement.ts); undefined while unknown. */
  proxyPages?: ProxyPages;
}

