import type { ServeApp } from '../snapshot/types';
import type { GateKnowledge } from '../snapshot/registration';
import { gatedDeployments, runningReplicas, SERVICEABLE_DEPLOYMENT_STATUSES } from '../serve/judgement';
import { gateOfVersion } from '../util/bioengine-release';

// Which registration gate a BioEngine app's ProxyDeployment runs. Releases up to the gate fix
// register an app only once every sibling deployment has a RUNNING replica and deregister it when a
// sibling that had one drops to zero (incident 1); the fix counts a sibling idle at zero as
// serviceable when Serve calls it HEALTHY, UPSCALING or DOWNSCALING and registers from a background
// maintenance task (docs/watched-services.md and docs/hypha-registration.md cite the upstream code).
// The proxy runs the code of the worker that deployed it: the gate follows that worker's version
// (get_status().bioengine_version of deployed_by_worker_client_id), and what the app was seen doing
// outranks the version.

/**
 * Longer than the old gate takes to deregister an app whose sibling reached zero (its check_health
 * runs every health_check_period_s = 10 s; 8 s was observed) with the registration call on top:
 * registered this long into a sibling's zero spell, the app is not on the old gate; lost within this
 * long of a sibling reaching zero, it was the old gate that deregistered it.
 */
export const GATE_EVIDENCE_SECONDS = 30;

/** Gated deployments at zero RUNNING replicas whose status Serve calls serviceable (idle, not crashed). */
export function idleServiceable(app: ServeApp): boolean {
  return gatedDeployments(app).some((d) => runningReplicas(d) === 0 && SERVICEABLE_DEPLOYMENT_STATUSES.includes(d.status));
}

/** What is known of an app's gate: evidence first, then the deploying worker's version, else unknown. */
export function gateKnowledge(evidence: GateKnowledge | undefined, version: string | undefined, worker: string | undefined): GateKnowledge {
  if (evidence) return evidence;
  const gate = gateOfVersion(version);
  if (gate) return { gate, source: 'version', version, worker };
  return { gate: 'unknown', source: version === undefined ? 'none' : 'version', version, worker };
}
