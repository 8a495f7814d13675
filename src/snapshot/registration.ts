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
