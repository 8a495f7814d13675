import type { ProxyPages, ServeApp, ServeDeployment } from '../snapshot/types';

// How Serve's states are judged, in one place: the registration cause, the status page and the
// metrics must agree on what "failed", "serviceable" and "not running" mean.

/** App or deployment statuses that mean it is broken. */
export const FAILED_STATUSES: readonly string[] = ['UNHEALTHY', 'DEPLOY_FAILED'];

/** App statuses in which Serve has not (or no longer) brought the app up. */
export const NOT_RUNNING_APP_STATUSES: readonly string[] = ['NOT_STARTED', 'DEPLOYING', 'DELETING'];

/**
 * Deployment statuses in which zero RUNNING replicas is a legitimate (idle) state: BioEngine's
 * proposed gate uses the same set (`_is_serviceable`), Ray's autoscaler reports these at zero.
 */
export const SERVICEABLE_DEPLOYMENT_STATUSES: readonly string[] = ['HEALTHY', 'UPSCALING', 'DOWNSCALING'];

/** The ingress deployment BioEngine registers through; the other deployments are what it gates on. */
export const BIOENGINE_PROXY_DEPLOYMENT = 'ProxyDeployment';

export type StatusClass = 'ok' | 'transient' | 'failed' | 'unknown';

export function appStatusClass(status: string): StatusClass {
  if (status === 'RUNNING') return 'ok';
  if (FAILED_STATUSES.includes(status)) return 'failed';
  if (NOT_RUNNING_APP_STATUSES.includes(status)) return 'transient';
  return 'unknown';
}

export function deploymentStatusClass(status: string): StatusClass {
  if (SERVICEABLE_DEPLOYMENT_STATUSES.includes(status)) return 'ok';
  if (FAILED_STATUSES.includes(status)) return 'failed';
  if (status === 'UPDATING') return 'transient';
  return 'unknown';
}

export function runningReplicas(d: ServeDeployment): number {
  return d.replicas.RUNNING ?? 0;
}

/** Able to take a request now or wake for it: a replica runs, or the status allows idling at zero. */
export function serviceable(d: ServeDeployment): boolean {
  return runningReplicas(d) > 0 || SERVICEABLE_DEPLOYMENT_STATUSES.includes(d.status);
}

/** The deployments a BioEngine proxy gates its registration on (every one but itself). */
export function gatedDeployments(app: ServeApp): ServeDeployment[] {
  return app.deployments.filter((d) => d.name !== BIOENGINE_PROXY_DEPLOYMENT);
}

/** Deployments that make an app crashed: failed ones, and gated ones that are not serviceable. */
export function crashedDeployments(app: ServeApp): ServeDeployment[] {
  const gated = new Set(gatedDeployments(app));
  return app.deployments.filter((d) => FAILED_STATUSES.includes(d.status) || (gated.has(d) && !serviceable(d)));
}

/** Gated deployments idle at zero RUNNING replicas. */
export function idleDeployments(app: ServeApp): ServeDeployment[] {
  return gatedDeployments(app).filter((d) => runningReplicas(d) === 0);
}

/** The proxy pages of a Ray cluster from its Serve state (see ProxyPages). */
export function proxyPages(state: { apps: readonly ServeApp[]; proxies: readonly { ready?: boolean }[] }): ProxyPages | undefined {
  const probed = state.proxies.filter((p) => p.ready !== undefined);
  const noneListed = state.proxies.length === 0;
  if (!noneListed && probed.length === 0) return undefined;
  const noneReady = noneListed || !probed.some((p) => p.ready === true);
  if (!noneReady) return { noProxyCanWakeApps: false, allProxiesUnready: false };
  const deployments = state.apps.flatMap((a) => a.deployments);
  return {
    noProxyCanWakeApps: deployments.some((d) => d.scaledToZero),
    allProxiesUnready: deployments.some((d) => runningReplicas(d) > 0),
    why: noneListed ? 'Ray lists no Serve proxy' : `none of ${probed.length} probed Serve proxies answers /-/healthz with 200`,
  };
}
