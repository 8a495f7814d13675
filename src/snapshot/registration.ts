// What the registration stage (src/registration/stage.ts) publishes into the snapshot
// (Snapshot.registration): the join of each Ray cluster's Serve apps with the Hypha registry.

export const REGISTRATION_STATES = [
  'registered',
  // Not registered while Serve is still (un)deploying it: no registration is due yet, so not missing.
  'not_running',
  'missing_scaled_to_zero',
  'missing_never_registered',
  'missing_crashed',
  // Registered before a Hypha outage and not back after reconnect_settle: the spell began at the
  // exporter's own reconnect, so nothing in Serve's view explains it.
  'missing_after_reconnect',
  // Already missing when the exporter started: whether it was ever registered is unknown, so neither
  // "deregistered at zero" nor "never registered" may be claimed.
  'missing_history_unknown',
  'missing_other',
] as const;
export type RegistrationState = (typeof REGISTRATION_STATES)[number];

export function isMissing(state: RegistrationState): boolean {
  return state.startsWith('missing_');
}

/**
 * Why a RUNNING app's service is missing, in a sentence (the runbook branch to take): the `reason`
 * of hypha_serve_app_not_registered_cause_info, the status page and `check`. A total map over the
 * missing states; no `,` or `=` (a label value that vmalert splits on when it keys a series).
 */
export const CAUSE_TEXT: Record<MissingState, string> = {
  missing_scaled_to_zero: 'it was registered and disappeared while a deployment of the app was idle at zero replicas',
  missing_never_registered: 'this exporter saw the deployment come up and it has never been registered since',
  missing_crashed: 'a deployment of the app is DEPLOY_FAILED or UNHEALTHY or a sibling deployment cannot serve',
  missing_after_reconnect: 'it was registered before a Hypha outage and has not re-registered since the exporter reconnected',
  missing_history_unknown: 'it was already missing when the exporter started; whether it was ever registered is unknown',
  missing_other: 'none of the causes the exporter can tell apart applies',
};

/** The missing states: each has its own wait before it pages (hypha_registration.page_waits). */
export const MISSING_STATES = REGISTRATION_STATES.filter(isMissing) as Extract<RegistrationState, `missing_${string}`>[];
export type MissingState = Extract<RegistrationState, `missing_${string}`>;

/**
 * The registration gate a BioEngine app's ProxyDeployment runs (src/registration/gate.ts): releases
 * before the gate fix deregister an app whose sibling idles at zero and never register one deployed
 * at zero; the fix keeps it registered; unknown when neither the deploying worker's version nor the
 * app's own behaviour tells.
 */
export const BIOENGINE_GATES = ['deregisters_at_zero', 'serviceable_at_zero', 'unknown'] as const;
export type BioEngineGate = (typeof BIOENGINE_GATES)[number];

/** An app's gate and what it was told from. */
export interface GateKnowledge {
  gate: BioEngineGate;
  /** evidence: the app was seen registered at zero (fixed) or deregistered as a sibling reached zero (old). */
  source: 'evidence' | 'version' | 'none';
  /** The deploying worker's reported BioEngine version, when known. */
  version?: string;
  /** The deploying worker's client id, when known. */
  worker?: string;
  /** When the evidence was seen (Unix seconds). */
  seenSeconds?: number;
}

/** The exporter's decision on the incident-1 page of one app (HyphaServeAppRunningNotRegistered). */
export interface PageDecision {
  /** The page holds: RUNNING, missing, and its cause's wait has passed (or the cause is proven final), or it held earlier in this spell. */
  firing: boolean;
  /** Start of the spell in which the app is RUNNING and missing (Unix seconds). */
  sinceSeconds?: number;
  /** When the page fires (or fired), by the cause's wait; undefined while the app is not RUNNING and missing. */
  dueSeconds?: number;
  /** The worker page only: its condition holds, but the app's own page fires for the same app (one page per app). */
  coveredByAppPage?: boolean;
}

/** Registration of one expected Serve app. */
export interface AppRegistration {
  cluster: string;
  app: string;
  /** The configured Hypha server (its name) the app is expected on. */
  hypha: string;
  /** Workspace the service is expected in. */
  workspace: string;
  /** Expected full id ("ws/client:svc"); the client part is "*" while it is unknown. */
  service: string;
  registered: boolean;
  state: RegistrationState;
  /** Start of the current missing spell (Unix seconds); undefined while registered or not_running. */
  unregisteredSinceSeconds?: number;
  /** Registered, but only under a client id other than the expected one. */
  clientIdMismatch: boolean;
  /** Client ids the app's registration moved between, counted since the exporter started. */
  clientIdChangesTotal: number;
  /** Client id of the provider currently registered (for the status page). */
  providerClientId?: string;
  /**
   * False right after a (re)connect while providers are still re-registering
   * (reconnect_settle): the registered/state series are withheld, not reported as 0.
   */
  settled: boolean;
  /**
   * Missing in a state the upstream never leaves by itself: BioEngine's proxy registers only once
   * every deployment it gates on has a RUNNING replica, and one of them is idle at zero by design,
   * which only a call through the missing service would wake. The cause is certain, not a phase of
   * BioEngine's recovery cycle (see stuckAtZero in src/registration/tracker.ts).
   */
  stuck?: boolean;
  /** The deployments behind a missing_crashed or missing_scaled_to_zero verdict (what the status page names). */
  causeDeployments?: string[];
  /** The gate of a BioEngine app's proxy; undefined for an app mapped by template. */
  gate?: GateKnowledge;
  /** The incident-1 page, decided here once: the metric, `check` and the status page read it (undefined: not firing). */
  page?: PageDecision;
  /**
   * The warning before incident 1a: registered, its proxy runs the gate that deregisters at zero,
   * and a gated deployment autoscales with min_replicas 0.
   */
  deregistersAtZero?: boolean;
  /**
   * HyphaServeWorkerAppRunningNotRegistered, decided here: a BioEngine worker tied to the app's
   * cluster says it is RUNNING (and registered, where it says) while the registry has no service.
   */
  workerPage?: PageDecision;
  /** The workers that say so now (client-facing service ids). */
  claimingWorkers?: string[];
}

/** What the workers tied to an app's cluster say about it in their last cross-check. */
export interface WorkerReport {
  /** Workers that report it RUNNING and do not deny its registration. */
  claiming: string[];
  /** Some worker tied to the cluster reports the app at all (answered about it). */
  answered: boolean;
}

/** What an evaluation remembers about one app between evaluations. */
export interface RegistrationHistory {
  /** lastDeployedSeconds when first seen; a change is a redeploy. */
  deployedSeconds?: number;
  birthObserved: boolean;
  everRegistered: boolean;
  registered?: boolean;
  missingSinceSeconds?: number;
  /** The current missing spell began at a Hypha reconnect. */
  spellAfterReconnect?: boolean;
  providerClientId?: string;
  clientIdChanges: number;
  lastEvaluatedSeconds?: number;
  lastState?: RegistrationState;
  /** When a scaled-to-zero app was first seen with replicas again (its proxy re-registers shortly). */
  wokeSeconds?: number;
  /** Last worker client id the expected service was derived from (kept through a worker restart). */
  workerClientId?: string;
  /** The deploying worker's reported BioEngine version, kept after the worker is gone (its proxy runs that code). */
  workerVersion?: string;
  /** What the app was seen doing that tells its gate (outranks the version); dropped on a redeploy. */
  gateEvidence?: { gate: Exclude<BioEngineGate, 'unknown'>; seenSeconds: number };
  /** Since when a gated deployment has been idle at zero (RUNNING 0, serviceable status), in the current zero spell. */
  zeroSinceSeconds?: number;
  /** Start of the spell in which the app is RUNNING and missing: the page's wait counts from it. */
  pageSpellSeconds?: number;
  /** The cause was proven final during the current spell. */
  provenInSpell?: boolean;
  /** When the page first held in the current spell: it holds until the spell ends. */
  pagedSeconds?: number;
  /** The worker page's own spell: last time a worker claimed the app RUNNING, the spell's start, when it fired. */
  workerClaimSeconds?: number;
  workerSpellSeconds?: number;
  workerPagedSeconds?: number;
}

/** What a BioEngine worker says (get_status / get_app_status). */
export interface WorkerApp {
  app: string;
  status: string;
  /** undefined when the worker does not say (older versions) or says null. */
  serviceRegistered?: boolean;
  deployedByWorkerClientId?: string;
}

export interface WorkerSample {
  /** Full service id of the worker ("ws/client:bioengine-worker"). */
  worker: string;
  workspace: string;
  clientId: string;
  up: boolean;
  /** Last error (scrubbed), when !up. */
  error?: string;
  /** Per app; empty when get_app_status failed or was refused. */
  apps: WorkerApp[];
  /** get_status().bioengine_version as reported (any text); undefined when not reported. */
  version?: string;
  lastSuccessSeconds?: number;
  /**
   * The Ray cluster this worker serves, when the config says so: a mapping pins its client id,
   * or it is the only cluster mapped to its workspace. Undefined = unattributable.
   */
  rayCluster?: string;
}

/** A worker as the stage attributes it: the Hypha server it was asked through, and its Ray cluster. */
export interface AttributedWorker extends WorkerSample {
  hypha: string;
}

export interface RegistrationSample {
  /** Expected apps of every cluster whose Ray source and Hypha server have data (held while either is unknown). */
  apps: AppRegistration[];
  workers: AttributedWorker[];
}
