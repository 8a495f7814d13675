// The versioned shape of GET /api/v1/status (documented in docs/status-api.schema.json).
// Snake_case like the metric labels; times are Unix seconds (numbers), never formatted text,
// so scripts do their own formatting and the page its own.
//
// Version 1 may gain optional fields; removing or renaming one needs version 2.

/** Ordering of everything on the page: critical first. */
export type Severity = 'critical' | 'warning' | 'unknown' | 'ok';
export const SEVERITY_ORDER: readonly Severity[] = ['critical', 'warning', 'unknown', 'ok'];

export interface StatusV1 {
  version: 1;
  /** When this answer was built (Unix seconds, the exporter's clock). */
  generated_at: number;
  exporter: ExporterV1;
  summary: SummaryV1;
  /** Which optional parts the running exporter has; a false section is not configured (or not built in). */
  sections: { registration: boolean; watched_services: boolean };
  /** Everything that is not ok, critical first; one entry per subject. */
  problems: ProblemV1[];
  sources: SourceV1[];
  clusters: ClusterV1[];
  /** Problems first, then by cluster and app name. Apps of a cluster whose source is down are absent. */
  apps: AppV1[];
  /** Workers as the Hypha registration check sees them (empty without that section). */
  workers: WorkerV1[];
  watched_services: WatchedServiceV1[];
  /** Newest first. */
  transitions: TransitionV1[];
  /** How many transitions are kept at most. */
  transitions_capacity: number;
}

export interface ExporterV1 {
  version: string;
  revision: string;
  /** False until the first sampling cycle of every source finished. */
  ready: boolean;
}

export interface SummaryV1 {
  problems: number;
  critical: number;
  warning: number;
  apps: number;
  sources_up: number;
  sources_down: number;
}

export type ProblemKind = 'source' | 'proxy' | 'cluster' | 'app' | 'worker' | 'service';

export interface ProblemV1 {
  severity: Severity;
  kind: ProblemKind;
  /** Short name of what is wrong, e.g. "test/two-step" or "ray/test". */
  subject: string;
  /** One line for a person. */
  text: string;
  cluster?: string;
  app?: string;
  service?: string;
}

export interface SourceV1 {
  source: string;
  /** Configured name (cluster or Hypha server name), never a URL. */
  target: string;
  up: boolean;
  last_success_at?: number;
  /** generated_at minus last_success_at. */
  last_sample_age_seconds?: number;
  last_duration_seconds?: number;
  last_error?: string;
  last_error_at?: number;
  /** Reason of the last failure (a value of hypha_serve_source_errors_total's `reason`). */
  last_error_reason?: string;
  /** What the last failure's reason means and what to do, when the error text does not say it (e.g. auth_secret_changed). */
  hint?: string;
  /** True while the first attempt is under way: the state is unknown (up is false, but not down). */
  pending?: boolean;
  /** The token file the source reads (never the token). */
  credential?: { file: string; last_read_at: number; read_errors_total: number; problem?: string };
  /** Cumulative failed samples by reason since the exporter started. */
  errors: Record<string, number>;
  errors_total: number;
}

export interface ProxyV1 {
  node_id: string;
  node_ip: string;
  status: string;
  head: boolean;
  /** GET /-/healthz == 200; null when not probed. */
  ready: boolean | null;
  ready_detail?: string;
}

export interface ClusterV1 {
  cluster: string;
  up: boolean;
  /** Number of apps seen in the last sample; null while the source is down. */
  apps: number | null;
  apps_dropped_total: number;
  malformed_total: number;
  proxies: ProxyV1[];
}

export interface DeploymentV1 {
  name: string;
  status: string;
  status_trigger?: string;
  message_present: boolean;
  /** Count per replica state (every known state present). */
  replicas: Record<string, number>;
  running: number;
  target?: number;
  min?: number;
  max?: number;
  autoscaling: boolean;
  scaled_to_zero: boolean;
}

export interface RegistrationV1 {
  /** Name of the configured Hypha server the app is expected on (an optional field added to version 1). */
  hypha?: string;
  /** Full Hypha service id the app is expected under ("workspace/client:service"). */
  expected_service_id: string;
  /** A value of REGISTRATION_STATES, or "unknown" while the Ray or Hypha source is down. */
  state: string;
  /** Why, for a person (derived from the state and Serve's view when the check gives none). */
  cause: string;
  missing_since?: number;
  /** Client id the service is registered under, when registered. */
  client_id?: string;
  client_id_mismatch?: boolean;
  /** A BioEngine app's registration gate and what it was told from (optional, added to version 1). */
  bioengine_gate?: BioEngineGateV1;
  /** The exporter's decision on HyphaServeAppRunningNotRegistered while the app is RUNNING and missing (optional, added to version 1). */
  page?: PageV1;
}

export interface BioEngineGateV1 {
  /** deregisters_at_zero (BioEngine up to 0.16.2), serviceable_at_zero (from 0.16.16) or unknown. */
  gate: string;
  /** evidence (what the app was seen doing), version (of the worker that deployed it) or none. */
  source: string;
  /** The deploying worker's reported BioEngine version. */
  version?: string;
  /** The deploying worker's client id. */
  worker?: string;
}

export interface PageV1 {
  firing: boolean;
  /** Start of the spell in which the app is RUNNING and missing (Unix seconds). */
  since?: number;
  /** When the page fired, or fires unless the app registers first (Unix seconds). */
  due?: number;
}

export interface WorkerViewV1 {
  worker: string;
  worker_up: boolean;
  /** App status as the worker reports it. */
  app_status?: string;
  /** Whether the worker says the app's service is registered (absent when it does not say). */
  service_registered?: boolean;
}

export interface AppV1 {
  cluster: string;
  app: string;
  status: string;
  severity: Severity;
  /** Reasons for the severity, for a person; empty when ok. */
  problems: string[];
  /** Serve's message (tail kept when long: a traceback ends with the exception). */
  message: string;
  message_truncated: boolean;
  route_prefix: string | null;
  last_deployed_at?: number;
  deployments: DeploymentV1[];
  /** Present when the registration section is on and this app is expected in Hypha. */
  registration?: RegistrationV1;
  worker_view?: WorkerViewV1;
}

export interface WorkerV1 {
  worker: string;
  up: boolean;
}

export interface CachedHolderV1 {
  /** "exporter" (the canary) or a configured holder. */
  holder: string;
  client_id: string | null;
  /** The cached client id is not among the live providers; null when the providers are unknown this cycle. */
  stale: boolean | null;
  stale_since?: number;
  since?: number;
  error?: string;
  /** The exporter's decision on HyphaServiceCachedProxyStale while the id is stale (optional, added to version 1). */
  page?: StalePageV1;
}

export interface StalePageV1 {
  firing: boolean;
  /** When the page fired, or fires unless the id is live again first (Unix seconds). */
  due: number;
  /** server_gone (proven never to return) or not_listed. */
  cause: string;
  /** The canary of a self-healing witness: a warning, never this page. */
  self_healing: boolean;
}

export interface ProbeV1 {
  /** cached or fresh. */
  via: string;
  method?: string;
  success: boolean;
  /** outcome label of the last call: ok, timeout, not_found, never_sent, error. */
  outcome?: string;
  latency_seconds?: number;
  at?: number;
  /** Full service id the call was addressed to. */
  target?: string;
  error?: string;
}

/** A BioEngine worker that holds a watched service by default (no holders configured). */
export interface WorkerHolderV1 {
  /** The worker's client id. */
  holder: string;
  /** Last known bioengine_version; null when never reported. */
  version: string | null;
  /** self_healing (0.16.30 or later, artifact manager), stays_stale (up to 0.16.2) or unknown. */
  recovery: string;
}

export interface WatchedServiceV1 {
  service: string;
  severity: Severity;
  problems: string[];
  /** Last sample of this service succeeded. */
  up?: boolean;
  /** Live providers; null when the listing failed this cycle. */
  providers: number | null;
  provider_client_ids: string[];
  resolved_client_id: string | null;
  cached: CachedHolderV1[];
  client_id_changes_total: number;
  last_change_at?: number;
  probes: ProbeV1[];
  /** The discovered BioEngine workers that hold the service (none while holders are configured). */
  worker_holders?: WorkerHolderV1[];
  /** The stale canary's witness is self-healing: every holder re-resolves by itself; absent without a canary. */
  witness_self_healing?: boolean;
}

export type TransitionKind =
  | 'source'
  | 'app_status'
  | 'app_added'
  | 'app_removed'
  | 'scaled_to_zero'
  | 'registration'
  | 'client_id'
  | 'providers';

export interface TransitionV1 {
  /** Increasing number; gaps mean older entries fell out of the ring buffer. */
  seq: number;
  at: number;
  kind: TransitionKind;
  severity: Severity;
  /** Short name of what changed, e.g. "test/two-step" or "public/artifact-manager". */
  subject: string;
  from: string | null;
  to: string | null;
  detail?: string;
  source?: string;
  target?: string;
  cluster?: string;
  app?: string;
  deployment?: string;
  service?: string;
  holder?: string;
}
