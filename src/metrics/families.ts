import { isMissing, REGISTRATION_STATES } from '../snapshot/registration';
import type { HyphaServerSample } from '../snapshot/hypha';
import type { AppRegistration, WorkerSample } from '../snapshot/registration';
import {
  APP_STATUSES, DEPLOYMENT_STATUSES, PROXY_STATUSES, SAMPLE_ERROR_REASONS,
  RayClusterSample, ReloadStatus, ServeApp, ServeDeployment, ServeProxy, Snapshot, SourceHealth, sourceHealths, isKnown, registrationKnown,
} from '../snapshot/types';
import { isBioEngineApp } from '../registration/expected';
import { REVISION, VERSION } from '../util/version';
import type { MetricType } from './text';

// The one declared list of the metric families derived from the snapshot (and the exporter's
// own process). The renderer, the prom-client adapters kept for sections' tests, and the
// generated metrics docs all read this table; nothing else defines a family.

/** What one family's samples are computed from; units of a scope are cached and re-rendered together. */
export interface ScopeArgs {
  /** The exporter process itself and its last configuration load; rendered on every scrape. */
  process: { reload?: ReloadStatus };
  /** One upstream's health; rendered on every scrape (sample age is clock-dependent). */
  source: { h: SourceHealth; now: number };
  cluster: RayClusterSample;
  app: { cluster: string; app: ServeApp };
  deployment: { cluster: string; app: string; d: ServeDeployment };
  proxy: { cluster: string; p: ServeProxy };
  hypha: HyphaServerSample;
  /** `known`: the app's Ray source and its Hypha server's source are up and the app is settled; else the fact is unknown and absent. */
  registration: { hypha: string; a: AppRegistration; known: boolean };
  worker: { hypha: string; w: WorkerSample };
}
export type Scope = keyof ScopeArgs;

/** Scopes whose samples depend on the clock or the process, not only on the snapshot. */
export const DYNAMIC_SCOPES: readonly Scope[] = ['process', 'source'];

export type Group = 'exporter' | 'ray' | 'hypha';
/** 'deprecated': served one more release beside its replacement (named in the doc text), then removed. */
export type Stability = 'stable' | 'experimental' | 'deprecated';

/** Receives one sample: label values in the family's label order (undefined leaves the label out). */
export type Emit = (labelValues: readonly (string | undefined)[], value: number) => void;

export interface FamilyDef<S extends Scope = Scope> {
  name: string;
  type: Exclude<MetricType, 'histogram'>;
  help: string;
  labels: readonly string[];
  stability: Stability;
  /** Operator-facing meaning for the docs tables (markdown); `help` when absent. */
  doc?: string;
  group: Group;
  scope: S;
  sample: (x: ScopeArgs[S], emit: Emit) => void;
}
export type AnyFamily = { [S in Scope]: FamilyDef<S> }[Scope];

function fam<S extends Scope>(def: FamilyDef<S>): AnyFamily {
  return def as unknown as AnyFamily;
}

/** One 0/1 series per known state plus the observed value when it is unknown (open enum). */
function stateSet(emit: Emit, base: readonly (string | undefined)[], known: readonly string[], value: string): void {
  for (const s of known) emit([...base, s], s === value ? 1 : 0);
  if (!known.includes(value)) emit([...base, value], 1);
}

const SRC = ['source', 'target'] as const;
const APP = ['ray_cluster', 'app'] as const;
const DEP = ['ray_cluster', 'app', 'deployment'] as const;
const PROXY = ['ray_cluster', 'node_id', 'node_ip'] as const;
// Identity of a registration is (ray_cluster, app) on a Hypha server: the expected service id is
// derived and can change while the condition holds (a worker restart), so it lives in an _info series.
const REG = ['ray_cluster', 'app', 'hypha'] as const;
const WORKER_APP = ['hypha', 'worker', 'ray_cluster', 'app'] as const;

const startSeconds = Math.round(Date.now() / 1000 - process.uptime());

const depLabels = (x: ScopeArgs['deployment']) => [x.cluster, x.app, x.d.name];
const proxyLabels = (x: ScopeArgs['proxy']) => [x.cluster, x.p.nodeId, x.p.nodeIp];
const regLabels = (x: ScopeArgs['registration']) => [x.a.cluster, x.a.app, x.hypha];

export const FAMILIES: readonly AnyFamily[] = [
  // ------------------------------------------------------------ the exporter itself
  fam({
    name: 'hypha_serve_exporter_build_info', type: 'gauge', help: 'Build of the exporter; always 1.', labels: ['version', 'revision', 'nodejs'],
    stability: 'stable', doc: "always 1", group: 'exporter', scope: 'process', sample: (_x, emit) => emit([VERSION, REVISION, process.version], 1),
  }),
  fam({
    name: 'hypha_serve_exporter_config_last_reload_successful', type: 'gauge', help: '1 when the last configuration (re)load succeeded.', labels: [],
    stability: 'stable', doc: "1 if the last (re)load succeeded", group: 'exporter', scope: 'process', sample: (x, emit) => emit([], x.reload?.ok === true ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_exporter_config_last_reload_success_timestamp_seconds', type: 'gauge', help: 'When the configuration was last loaded successfully (Unix seconds).', labels: [],
    stability: 'stable', doc: "time of the last successful load", group: 'exporter', scope: 'process', sample: (x, emit) => emit([], x.reload?.lastSuccessSeconds ?? 0),
  }),
  // The process's own footprint, hand-made in the exporter's namespace before the standard process_*
  // families (prom-client's default collectors, metrics/exporter.ts) were served: deprecated aliases
  // kept for 0.2.x, removed in the release after.
  fam({
    name: 'hypha_serve_exporter_start_time_seconds', type: 'gauge', help: 'When the exporter process started (Unix seconds). Deprecated: use process_start_time_seconds.', labels: [],
    stability: 'deprecated', doc: "process start time; deprecated, use `process_start_time_seconds`", group: 'exporter', scope: 'process', sample: (_x, emit) => emit([], startSeconds),
  }),
  fam({
    name: 'hypha_serve_exporter_resident_memory_bytes', type: 'gauge', help: 'Resident memory of the exporter process. Deprecated: use process_resident_memory_bytes.', labels: [],
    stability: 'deprecated', doc: "resident memory of the exporter; deprecated, use `process_resident_memory_bytes`", group: 'exporter', scope: 'process', sample: (_x, emit) => emit([], process.memoryUsage.rss()),
  }),
  fam({
    name: 'hypha_serve_exporter_heap_used_bytes', type: 'gauge', help: 'V8 heap in use by the exporter process. Deprecated: use nodejs_heap_size_used_bytes.', labels: [],
    stability: 'deprecated', doc: "V8 heap in use; deprecated, use `nodejs_heap_size_used_bytes`", group: 'exporter', scope: 'process', sample: (_x, emit) => emit([], process.memoryUsage().heapUsed),
  }),
  fam({
    name: 'hypha_serve_exporter_cpu_seconds_total', type: 'counter', help: 'CPU time (user + system) used by the exporter process. Deprecated: use process_cpu_seconds_total.', labels: [],
    stability: 'deprecated', doc: "CPU time used by the exporter; deprecated, use `process_cpu_seconds_total`", group: 'exporter', scope: 'process', sample: (_x, emit) => {
      const cpu = process.cpuUsage();
      emit([], (cpu.user + cpu.system) / 1e6);
    },
  }),
  fam({
    name: 'hypha_serve_source_up', type: 'gauge', help: '1 when the last sample of the upstream succeeded.', labels: SRC,
    stability: 'stable', doc: "1 if the last sample of the upstream succeeded: `source=\"ray\"` (`target` = Ray cluster), `\"hypha\"` (registry connection, `target` = Hypha server name), `\"hypha_service\"` (a watched service's connection, `target` = service id)", group: 'exporter', scope: 'source', sample: ({ h }, emit) => emit([h.source, h.target], h.up ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_source_last_success_timestamp_seconds', type: 'gauge', help: 'When the upstream was last sampled successfully (Unix seconds).', labels: SRC,
    stability: 'stable', doc: "time of the last successful sample", group: 'exporter', scope: 'source', sample: ({ h }, emit) => {
      if (h.lastSuccessSeconds !== undefined) emit([h.source, h.target], h.lastSuccessSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_source_sample_age_seconds', type: 'gauge', help: 'Age of the data served for the upstream: now minus the last successful sample.', labels: SRC,
    stability: 'stable', doc: "now − last successful sample", group: 'exporter', scope: 'source', sample: ({ h, now }, emit) => {
      if (h.lastSuccessSeconds !== undefined) emit([h.source, h.target], Math.max(0, now - h.lastSuccessSeconds));
    },
  }),
  fam({
    name: 'hypha_serve_source_sample_duration_seconds', type: 'gauge', help: 'Duration of the last sample attempt of the upstream.', labels: SRC,
    stability: 'stable', doc: "duration of the last sample attempt", group: 'exporter', scope: 'source', sample: ({ h }, emit) => {
      if (h.lastDurationSeconds !== undefined) emit([h.source, h.target], h.lastDurationSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_source_interval_seconds', type: 'gauge', help: 'Configured sampling interval of the upstream; a sample age far past it while source_up stays 1 is a stuck sampler.', labels: SRC,
    stability: 'stable', doc: "configured sampling interval (a sample age far past it while `source_up` stays 1 is a stuck sampler)", group: 'exporter', scope: 'source', sample: ({ h }, emit) => {
      if (h.intervalSeconds !== undefined) emit([h.source, h.target], h.intervalSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_source_errors_total', type: 'counter', help: 'Failed samples of the upstream by reason.', labels: [...SRC, 'reason'],
    stability: 'stable', doc: "failed samples by reason: timeout, connect, http_status, too_large, bad_json, schema, auth, auth_secret_changed, rpc, other (`schema` also counts answers with skipped malformed entries; `auth_secret_changed`: Hypha refused, with a signature error, a token it had accepted before — it restarted with a new JWT secret)", group: 'exporter', scope: 'source', sample: ({ h }, emit) => {
      for (const reason of SAMPLE_ERROR_REASONS) emit([h.source, h.target, reason], h.errors[reason]);
    },
  }),
  fam({
    name: 'hypha_serve_credential_last_read_timestamp_seconds', type: 'gauge', help: 'When the token file of the upstream was last read successfully (Unix seconds); it is read again whenever it changes.', labels: [...SRC, 'file'],
    stability: 'experimental', doc: "last successful read of the `bearer_token_file` the upstream's source uses (re-read whenever the file changes and after a refusal; never the token); only for sources with a token file", group: 'exporter', scope: 'source', sample: ({ h }, emit) => {
      if (h.credential) emit([h.source, h.target, h.credential.file], h.credential.lastReadSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_credential_read_errors_total', type: 'counter', help: 'Spells in which the token file of the upstream could not be read (missing, unreadable or empty); the last token read is kept.', labels: [...SRC, 'file'],
    stability: 'experimental', doc: "spells in which the `bearer_token_file` was missing, unreadable or empty (the last token read stays in use); only for sources with a token file", group: 'exporter', scope: 'source', sample: ({ h }, emit) => {
      if (h.credential) emit([h.source, h.target, h.credential.file], h.credential.readErrorsTotal);
    },
  }),

  // ------------------------------------------------------------ Ray Serve
  // `ray_cluster`, not `cluster`: multi-cluster Prometheus setups use `cluster` as an external label.
  fam({
    name: 'hypha_serve_app_status', type: 'gauge', help: 'Ray Serve application status (state set: 1 for the current status).', labels: [...APP, 'status'],
    stability: 'stable', doc: "state set over NOT_STARTED, DEPLOYING, DEPLOY_FAILED, RUNNING, UNHEALTHY, DELETING", group: 'ray', scope: 'app', sample: (x, emit) => stateSet(emit, [x.cluster, x.app.name], APP_STATUSES, x.app.status),
  }),
  fam({
    name: 'hypha_serve_app_info', type: 'gauge', help: 'Ray Serve application facts; always 1.', labels: [...APP, 'route_prefix', 'source'],
    stability: 'stable', doc: "always 1", group: 'ray', scope: 'app', sample: (x, emit) => emit([x.cluster, x.app.name, x.app.routePrefix ?? '', x.app.source ?? ''], 1),
  }),
  fam({
    name: 'hypha_serve_app_deployed_timestamp_seconds', type: 'gauge', help: 'When the application was last deployed (Unix seconds).', labels: APP,
    stability: 'stable', doc: "last deployment time", group: 'ray', scope: 'app', sample: (x, emit) => {
      if (x.app.lastDeployedSeconds !== undefined) emit([x.cluster, x.app.name], x.app.lastDeployedSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_app_message_present', type: 'gauge', help: '1 when Ray Serve reports a non-empty status message for the application.', labels: APP,
    stability: 'stable', doc: "1 if Ray reports a status message (the text is on the status page, not in a label)", group: 'ray', scope: 'app', sample: (x, emit) => emit([x.cluster, x.app.name], x.app.messagePresent ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_app_bioengine_proxy', type: 'gauge',
    help: '1 when the application\'s ingress is BioEngine\'s ProxyDeployment, which registers its Hypha service and deregisters it when a sibling deployment has no RUNNING replica; 0 for other Serve apps (registrant unknown).', labels: APP,
    stability: 'stable', doc: "1 if the app's ingress is BioEngine's `ProxyDeployment` (its Hypha registrant; since BioEngine 0.13.0 it deregisters the service while a sibling deployment has no RUNNING replica), 0 for other Serve apps (registrant unknown)", group: 'ray', scope: 'app', sample: (x, emit) => emit([x.cluster, x.app.name], isBioEngineApp(x.app) ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_deployment_status', type: 'gauge', help: 'Ray Serve deployment status (state set).', labels: [...DEP, 'status'],
    stability: 'stable', doc: "state set over UPDATING, HEALTHY, UNHEALTHY, DEPLOY_FAILED, UPSCALING, DOWNSCALING", group: 'ray', scope: 'deployment', sample: (x, emit) => stateSet(emit, depLabels(x), DEPLOYMENT_STATUSES, x.d.status),
  }),
  fam({
    name: 'hypha_serve_deployment_replicas', type: 'gauge', help: 'Replicas of the deployment per replica state (explicit zeros).', labels: [...DEP, 'state'],
    stability: 'stable', doc: "replicas per state STARTING, UPDATING, RECOVERING, RUNNING, STOPPING, PENDING_MIGRATION (explicit zeros)", group: 'ray', scope: 'deployment', sample: (x, emit) => {
      const l = depLabels(x);
      for (const [state, n] of Object.entries(x.d.replicas)) emit([...l, state], n);
    },
  }),
  fam({
    name: 'hypha_serve_deployment_target_replicas', type: 'gauge', help: 'Replica count Ray Serve is currently targeting.', labels: DEP,
    stability: 'stable', doc: "replica count Serve targets now", group: 'ray', scope: 'deployment', sample: (x, emit) => {
      if (x.d.targetReplicas !== undefined) emit(depLabels(x), x.d.targetReplicas);
    },
  }),
  fam({
    name: 'hypha_serve_deployment_min_replicas', type: 'gauge', help: 'Lower replica bound (autoscaling min_replicas, or the fixed num_replicas).', labels: DEP,
    stability: 'stable', doc: "autoscaling `min_replicas`, or fixed `num_replicas`", group: 'ray', scope: 'deployment', sample: (x, emit) => {
      if (x.d.minReplicas !== undefined) emit(depLabels(x), x.d.minReplicas);
    },
  }),
  fam({
    name: 'hypha_serve_deployment_max_replicas', type: 'gauge', help: 'Upper replica bound (autoscaling max_replicas, or the fixed num_replicas).', labels: DEP,
    stability: 'stable', doc: "autoscaling `max_replicas`, or fixed `num_replicas`", group: 'ray', scope: 'deployment', sample: (x, emit) => {
      if (x.d.maxReplicas !== undefined) emit(depLabels(x), x.d.maxReplicas);
    },
  }),
  fam({
    name: 'hypha_serve_deployment_autoscaling', type: 'gauge', help: '1 when the deployment has an autoscaling config.', labels: DEP,
    stability: 'stable', doc: "1 if the deployment autoscales", group: 'ray', scope: 'deployment', sample: (x, emit) => emit(depLabels(x), x.d.autoscaling ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_deployment_scaled_to_zero', type: 'gauge',
    help: '1 when the deployment is idle at zero by design (autoscaling allows 0, target 0, no RUNNING replica, serviceable status).', labels: DEP,
    stability: 'stable', doc: "1 when idle at zero by design: autoscaling allows 0, target 0, no RUNNING replica, status HEALTHY/UPSCALING/DOWNSCALING (as opposed to crashed)", group: 'ray', scope: 'deployment', sample: (x, emit) => emit(depLabels(x), x.d.scaledToZero ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_proxy_ready', type: 'gauge', help: '1 when the Serve HTTP proxy answers 200 on /-/healthz.', labels: PROXY,
    stability: 'stable', doc: "1 if the Serve HTTP proxy answers 200 on `/-/healthz`", group: 'ray', scope: 'proxy', sample: (x, emit) => {
      if (x.p.ready !== undefined) emit(proxyLabels(x), x.p.ready ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_proxy_head', type: 'gauge', help: '1 for the proxy on the controller (head) node, the one that can wake scaled-to-zero apps.', labels: PROXY,
    stability: 'stable', doc: "1 for the proxy on the controller's (head) node: the only one Ray keeps ready at zero replicas, to take the request that wakes a scaled-to-zero app (Ray PR #47002)", group: 'ray', scope: 'proxy', sample: (x, emit) => emit(proxyLabels(x), x.p.head ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_proxy_status', type: 'gauge', help: 'Controller view of the Serve proxy actor (state set).', labels: [...PROXY, 'status'],
    stability: 'stable', doc: "controller's view of the proxy actor: STARTING, HEALTHY, UNHEALTHY, DRAINING, DRAINED", group: 'ray', scope: 'proxy', sample: (x, emit) => stateSet(emit, proxyLabels(x), PROXY_STATUSES, x.p.status),
  }),
  fam({
    name: 'hypha_serve_cluster_apps_dropped_total', type: 'counter', help: 'Applications left out by the per-cluster max_apps cap, summed over samples.', labels: ['ray_cluster'],
    stability: 'experimental', doc: "apps left out by `max_apps`, summed over samples", group: 'ray', scope: 'cluster', sample: (x, emit) => emit([x.cluster], x.appsDroppedTotal),
  }),
  fam({
    name: 'hypha_serve_cluster_malformed_entries_total', type: 'counter', help: 'Malformed apps, deployments or proxies skipped in Serve API answers.', labels: ['ray_cluster'],
    stability: 'experimental', doc: "malformed apps/deployments/proxies skipped in Serve API answers", group: 'ray', scope: 'cluster', sample: (x, emit) => emit([x.cluster], x.malformedTotal),
  }),

  // ------------------------------------------------------------ Hypha registration and BioEngine workers
  fam({
    name: 'hypha_serve_hypha_reconnects_total', type: 'counter', help: 'Connections to the Hypha server rebuilt after the first one.', labels: ['target'],
    stability: 'stable', doc: "Hypha connections rebuilt after the first", group: 'hypha', scope: 'hypha', sample: (h, emit) => emit([h.target], h.reconnectsTotal),
  }),
  fam({
    name: 'hypha_serve_hypha_connection_generation', type: 'gauge', help: 'Number of the current Hypha connection (1 = the first); moves on every rebuild.', labels: ['target'],
    stability: 'stable', doc: "number of the current Hypha connection", group: 'hypha', scope: 'hypha', sample: (h, emit) => {
      if (h.generation > 0) emit([h.target], h.generation);
    },
  }),
  fam({
    name: 'hypha_serve_hypha_server_info', type: 'gauge', help: 'The id of the Hypha server the registry connection is connected to; always 1.', labels: ['target', 'server_id'],
    stability: 'stable', doc: "1; `server_id` is the id the Hypha server reports on the current connection (its built-in services, the artifact manager among them, are provided by client `server_id`); absent while not connected", group: 'hypha', scope: 'hypha', sample: (h, emit) => {
      if (h.health.up && h.serverId !== undefined) emit([h.target, h.serverId], 1);
    },
  }),
  fam({
    name: 'hypha_serve_hypha_server_id_changed', type: 'gauge',
    help: '1 when the Hypha server came back (a rebuilt connection) under another server id than before, 0 when it came back under the same id; absent until the exporter has seen a comeback.',
    labels: ['target'], stability: 'stable', doc: "1 if the last time the registry connection was rebuilt the server reported another id than before (a server without a fixed `--server-id`/`HYPHA_SERVER_ID`: every restart strands cached proxies to its built-in services, incident 2), 0 if it came back under the same id; absent until a comeback was seen and while the source is down (kept in `--storage.path` across an exporter restart; without it unknown again until the next comeback)", group: 'hypha', scope: 'hypha', sample: (h, emit) => {
      if (h.health.up && h.serverIdChanged !== undefined) emit([h.target], h.serverIdChanged ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_hypha_malformed_entries_total', type: 'counter', help: 'Malformed entries skipped in Hypha registry listings.', labels: ['target'],
    stability: 'experimental', doc: "malformed entries skipped in Hypha registry listings", group: 'hypha', scope: 'hypha', sample: (h, emit) => emit([h.target], h.malformedTotal),
  }),
  fam({
    name: 'hypha_serve_app_registered', type: 'gauge',
    help: '1 when the Serve app\'s expected Hypha service is registered (also under another client id), 0 when not. Present only while the Ray and Hypha sources are up.',
    labels: REG, stability: 'stable', doc: "1 if the app's expected Hypha service is registered, 0 if not; only while both the Ray and the Hypha source are up (absent otherwise)", group: 'hypha', scope: 'registration', sample: (x, emit) => {
      if (x.known) emit(regLabels(x), x.a.registered ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_app_expected_service_info', type: 'gauge',
    help: 'The Hypha service the Serve app is expected to register ("ws/client:svc", client "*" while never known); always 1.',
    labels: [...REG, 'workspace', 'service'], stability: 'stable', doc: "1; the service (`ws/client:svc`) the app is expected to register; keeps the last known client id through a worker restart", group: 'hypha', scope: 'registration',
    sample: (x, emit) => emit([...regLabels(x), x.a.workspace, x.a.service], 1),
  }),
  fam({
    name: 'hypha_serve_app_registration_state', type: 'gauge', help: 'Registration of the Serve app in Hypha, and why it is missing (state set).', labels: [...REG, 'state'],
    stability: 'stable', doc: "state set: registered, not_running, missing_scaled_to_zero, missing_never_registered, missing_crashed, missing_after_reconnect, missing_history_unknown, missing_other", group: 'hypha', scope: 'registration', sample: (x, emit) => {
      if (x.known) stateSet(emit, regLabels(x), REGISTRATION_STATES, x.a.state);
    },
  }),
  fam({
    name: 'hypha_serve_app_unregistered_since_timestamp_seconds', type: 'gauge',
    help: 'Start of the current spell in which the running app has no Hypha registration (Unix seconds); present only while missing.', labels: REG,
    stability: 'stable', doc: "start of the current missing spell (only in a `missing_*` state)", group: 'hypha', scope: 'registration', sample: (x, emit) => {
      if (x.known && isMissing(x.a.state) && x.a.unregisteredSinceSeconds !== undefined) emit(regLabels(x), x.a.unregisteredSinceSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_app_registration_stuck', type: 'gauge',
    help: '1 when the app is missing in a state its BioEngine proxy never leaves by itself (a gated deployment idle at zero by design; only a call through the missing service would wake it), 0 otherwise. Present only while the Ray and Hypha sources are up.',
    labels: REG, stability: 'stable', doc: "1 if the app is missing in a state the upstream never leaves by itself: `missing_scaled_to_zero` or `missing_never_registered` of a BioEngine app (it has a `ProxyDeployment`) one of whose gated deployments is idle at zero by design (target 0); its proxy registers only once every gated deployment has a RUNNING replica (bioengine `proxy_deployment.py`), and only a call through the missing service would start one. 0 otherwise (registered, another cause, a replica being started). With it the incident-1 page needs no 5-minute wait (`cause_waits` in rules/config/mixin.yml, docs/alerts.md, Per-cause wait)", group: 'hypha', scope: 'registration', sample: (x, emit) => {
      if (x.known) emit(regLabels(x), x.a.stuck === true ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_app_registration_client_id_mismatch', type: 'gauge',
    help: '1 when the app\'s service is registered only under a client id other than the expected one.', labels: REG,
    stability: 'stable', doc: "1 if registered only under another client id", group: 'hypha', scope: 'registration', sample: (x, emit) => {
      if (x.known) emit(regLabels(x), x.a.clientIdMismatch ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_app_registration_client_id_changes_total', type: 'counter',
    help: 'Times the client id registering the app\'s service changed (e.g. proxy replicas re-registering).', labels: REG,
    stability: 'stable', doc: "the registering client id changed (a proxy replica re-registered)", group: 'hypha', scope: 'registration', sample: (x, emit) => emit(regLabels(x), x.a.clientIdChangesTotal),
  }),
  fam({
    name: 'hypha_serve_worker_up', type: 'gauge', help: '1 when the BioEngine worker answered get_status in its last cross-check.', labels: ['hypha', 'worker'],
    stability: 'experimental', doc: "1 if the BioEngine worker answered `get_status`", group: 'hypha', scope: 'worker', sample: (x, emit) => emit([x.hypha, x.w.worker], x.w.up ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_worker_app_status', type: 'gauge',
    help: 'App status as the BioEngine worker reports it (state set); ray_cluster is empty when the config does not tie the worker to one cluster.',
    labels: [...WORKER_APP, 'status'], stability: 'experimental', doc: "app status as the worker reports it (state set); `ray_cluster` empty unless the config ties the worker to one cluster", group: 'hypha', scope: 'worker', sample: (x, emit) => {
      if (!x.w.up) return;
      for (const app of x.w.apps) stateSet(emit, [x.hypha, x.w.worker, x.w.rayCluster ?? '', app.app], APP_STATUSES, app.status);
    },
  }),
  fam({
    name: 'hypha_serve_worker_app_service_registered', type: 'gauge',
    help: 'The BioEngine worker\'s own belief whether the app\'s service is registered; absent when the worker does not say (no released BioEngine does).',
    labels: WORKER_APP, stability: 'experimental', doc: "the worker's own belief (absent when it does not say: no released BioEngine reports it)", group: 'hypha', scope: 'worker', sample: (x, emit) => {
      if (!x.w.up) return;
      for (const app of x.w.apps) if (app.serviceRegistered !== undefined) emit([x.hypha, x.w.worker, x.w.rayCluster ?? '', app.app], app.serviceRegistered ? 1 : 0);
    },
  }),
];

/** A unit of a scope: `key` identifies it across snapshots; `data` is compared to decide whether its lines are still valid. */
export interface Unit<S extends Scope> {
  key: string;
  arg: ScopeArgs[S];
  /** Plain data the unit's samples derive from (compared structurally against the cached one). */
  data: unknown;
  /** A field of `data` that other units cover (an app's deployments), skipped in the comparison. */
  skip?: string;
}

const SEP = '\u0000';

/**
 * The units of one scope in a snapshot, in a stable order. This is the single place that decides
 * which facts exist (e.g. registration only while its sources are up); the renderer caches per unit.
 */
export function* units<S extends Scope>(s: Snapshot, scope: S, now: number): Generator<Unit<S>> {
  type U = Unit<S>;
  switch (scope) {
    case 'process':
      yield { key: '', arg: { reload: s.reload }, data: s.reload } as U;
      return;
    // A source whose first attempt has not ended is unknown: no series at all (not a false 0).
    case 'source':
      for (const h of sourceHealths(s)) if (isKnown(h)) yield { key: `${h.source}${SEP}${h.target}`, arg: { h, now }, data: h } as U;
      return;
    case 'cluster':
      for (const c of s.ray.values()) if (isKnown(c.health)) yield { key: c.cluster, arg: c, data: c, skip: 'state' } as U;
      return;
    case 'app':
      for (const c of s.ray.values()) {
        for (const app of c.state?.apps ?? []) yield { key: `${c.cluster}${SEP}${app.name}`, arg: { cluster: c.cluster, app }, data: app, skip: 'deployments' } as U;
      }
      return;
    case 'deployment':
      for (const c of s.ray.values()) {
        for (const app of c.state?.apps ?? []) {
          for (const d of app.deployments) {
            yield { key: `${c.cluster}${SEP}${app.name}${SEP}${d.name}`, arg: { cluster: c.cluster, app: app.name, d }, data: d } as U;
          }
        }
      }
      return;
    case 'proxy':
      for (const c of s.ray.values()) {
        for (const p of c.state?.proxies ?? []) yield { key: `${c.cluster}${SEP}${p.nodeId}${SEP}${p.nodeIp}`, arg: { cluster: c.cluster, p }, data: p } as U;
      }
      return;
    case 'hypha':
      for (const h of s.hypha?.values() ?? []) {
        if (!isKnown(h.health)) continue;
        const data = [h.target, h.reconnectsTotal, h.generation, h.malformedTotal, h.health.up, h.serverId, h.serverIdChanged];
        yield { key: h.target, arg: h, data } as U;
      }
      return;
    case 'registration':
      for (const a of s.registration?.apps ?? []) {
        const known = registrationKnown(s, a);
        yield { key: `${a.hypha}${SEP}${a.cluster}${SEP}${a.app}${SEP}${known ? 1 : 0}`, arg: { hypha: a.hypha, a, known }, data: a } as U;
      }
      return;
    case 'worker':
      for (const w of s.registration?.workers ?? []) {
        const unit: Unit<'worker'> = { key: `${w.hypha}${SEP}${w.worker}`, arg: { hypha: w.hypha, w }, data: w };
        if (s.hypha?.get(w.hypha)?.health.up === true) yield unit as U;
      }
      return;
  }
}

export const SCOPES: readonly Scope[] = ['process', 'source', 'cluster', 'app', 'deployment', 'proxy', 'hypha', 'registration', 'worker'];

export function familiesOf(group: Group): AnyFamily[] {
  return FAMILIES.filter((f) => f.group === group);
}

/** Samples of one family over a snapshot, as label objects (prom-client adapters, docs, tests). */
export function collect(f: AnyFamily, s: Snapshot, now: number): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  const emit: Emit = (vals, value) => {
    const labels: Record<string, string> = {};
    f.labels.forEach((l, i) => {
      const v = vals[i];
      if (v !== undefined) labels[l] = v;
    });
    out.push({ labels, value });
  };
  for (const u of units(s, f.scope, now)) (f.sample as (x: unknown, e: Emit) => void)(u.arg, emit);
  return out;
}
