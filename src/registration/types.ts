import type { SourceHealth } from '../snapshot/types';

// What the Hypha source publishes into the snapshot (Snapshot.hypha).

export const REGISTRATION_STATES = [
  'registered',
  'missing_scaled_to_zero',
  'missing_never_registered',
  'missing_crashed',
  'missing_other',
] as const;
export type RegistrationState = (typeof REGISTRATION_STATES)[number];

/** Registration of one expected Serve app. */
export interface AppRegistration {
  cluster: string;
  app: string;
  /** Workspace the service is expected in. */
  workspace: string;
  /** Expected full id ("ws/client:svc"); the client part is "*" while it is unknown. */
  service: string;
  registered: boolean;
  state: RegistrationState;
  /** Start of the current missing spell (Unix seconds); undefined while registered. */
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
}

export interface HyphaSample {
  /** Configured Hypha server name (the `target` label). */
  target: string;
  health: SourceHealth;
  /** Successful connections after the first one. */
  reconnectsTotal: number;
  /** Number of the current connection (1 = first). */
  generation: number;
  workspace?: string;
  serverId?: string;
  hyphaVersion?: string;
  /** Expected apps of every cluster whose Ray source has data; empty until the registry was listed once. */
  apps: AppRegistration[];
  workers: WorkerSample[];
  /** Registry entries seen, per listed workspace (status page). */
  servicesByWorkspace: Record<string, number>;
  /** Events applied since start, per type. */
  eventsTotal: Record<string, number>;
}
