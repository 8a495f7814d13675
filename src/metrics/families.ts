import { BIOENGINE_GATES, CAUSE_TEXT, isMissing, MissingState, REGISTRATION_STATES } from '../snapshot/registration';
import type { HyphaServerSample } from '../snapshot/hypha';
import type { AppRegistration, WorkerSample } from '../snapshot/registration';
import { CALL_DURATION_BUCKETS, CALL_OUTCOMES, STALE_CAUSE_TEXT, WatchedServiceSample, WITNESS_RELEASE_REASONS } from '../snapshot/services';
import {
  APP_STATUSES, DEPLOYMENT_STATUSES, PROXY_STATUSES, REPLICA_STATES, SAMPLE_ERROR_REASONS,
  RayClusterSample, ReloadStatus, ServeApp, ServeDeployment, ServeProxy, Snapshot, SourceHealth, sourceHealths, isKnown, registrationKnown,
} from '../snapshot/types';
import { isBioEngineApp } from '../registration/expected';
import { SERVICEABLE_DEPLOYMENT_STATUSES } from '../serve/judgement';
import { REVISION, VERSION } from '../util/version';
import { webConfigStatus } from './web-config-status';
import type { MetricType } from './text';

// The one declared list of every metric family the exporter serves, except the standard process_*
// and nodejs_* families of prom-client's default collectors (process.ts). Each entry names its
// type, help (and what the docs add to it), labels, stability and scope, and the function that yields its
// samples from one unit of that scope; histograms yield per-series bucket data that
// forEachSample() expands into _bucket/_sum/_count lines. The renderer (renderer.ts: per-unit
// cached lines) and the generated docs (docs.ts) read only this table; nothing else defines a family.

/** What one family's samples are computed from; units of a scope are cached and re-rendered together. */
export interface ScopeArgs {
  /** The exporter process itself and its last configuration load; rendered on every scrape. */
  process: { reload?: ReloadStatus };
  /** One upstream's health; rendered on every scrape (sample age is clock-dependent). */
  source: { h: SourceHealth; now: number };
  /** One watched service (docs/watched-services.md): providers, resolved vs cached client ids, churn and probe calls. */
  service: WatchedServiceSample;
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

/** 'deprecated': served one more release beside its replacement (named in the help text), then removed. */
export type Stability = 'stable' | 'experimental' | 'deprecated';

/** Receives one sample: label values in the family's label order (undefined leaves the label out). */
export type Emit = (labelValues: readonly (string | undefined)[], value: number) => void;

/** One histogram series as a source keeps it: a count per bucket (observations in (previous bound, bound]), the sum and the total. */
export interface HistogramSample {
  counts: readonly number[];
  sum: number;
  count: number;
}
/** Receives one histogram series: label values in the family's label order (without `le`) and its data. */
export type EmitHistogram = (labelValues: readonly (string | undefined)[], h: HistogramSample) => void;

/** A field of a scope's argument: a top-level key, or `key.sub` one level down (`health.up`). */
type Field<T> = { [K in keyof T & string]: K | (NonNullable<T[K]> extends object ? `${K}.${keyof NonNullable<T[K]> & string}` : never) }[keyof T & string];

/**
 * Scopes whose units are compared on a projection, not on the whole argument: the fields their
 * families read (a Hypha server sample carries the whole registry listing, which no family reads
 * and which would cost a deep comparison of thousands of services per snapshot; a Ray cluster
 * sample carries its health, which moves every sample and would re-assemble the whole body).
 */
interface ProjectedScopes {
  cluster: Field<RayClusterSample>;
  hypha: Field<HyphaServerSample>;
}
type Reads<S extends Scope> = S extends keyof ProjectedScopes
  ? {
    /** Every field of the argument the family's sample() reads: the unit's cache key is built from these (units()). */
    reads: readonly ProjectedScopes[S][];
  }
  : { reads?: never };

type FamilyBase<S extends Scope> = Reads<S> & {
  name: string;
  /** The `# HELP` text, plain (no markdown): what the family means, in a sentence or two that end with a full stop. */
  help: string;
  /** Label names in exposition order; a histogram's `_bucket` lines add `le` after them. */
  labels: readonly string[];
  stability: Stability;
  /** What the docs tables add after `help` (markdown, whole sentences); absent when `help` says it all. */
  doc?: string;
  scope: S;
};
type ValueFamily<S extends Scope> = FamilyBase<S> & {
  type: Exclude<MetricType, 'histogram'>;
  sample: (x: ScopeArgs[S], emit: Emit) => void;
};
type HistogramFamily<S extends Scope> = FamilyBase<S> & {
  type: 'histogram';
  /** Upper bounds of the buckets, ascending, without +Inf. */
  buckets: readonly number[];
  sample: (x: ScopeArgs[S], emit: EmitHistogram) => void;
};
type FamilyDef<S extends Scope> = ValueFamily<S> | HistogramFamily<S>;
export type AnyFamily = { [S in Scope]: FamilyDef<S> }[Scope];

// Both keep the literal name, so FamilyName is the union of every declared family's name.
function fam<S extends Scope, N extends string>(def: ValueFamily<S> & { name: N }): AnyFamily & { name: N } {
  return def as unknown as AnyFamily & { name: N };
}

function histogram<S extends Scope, N extends string>(def: HistogramFamily<S> & { name: N }): AnyFamily & { name: N } {
  return def as unknown as AnyFamily & { name: N };
}

/** One 0/1 series per known state plus the observed value when it is unknown (open enum). */
function stateSet(emit: Emit, base: readonly (string | undefined)[], known: readonly string[], value: string): void {
  for (const s of known) emit([...base, s], s === value ? 1 : 0);
  if (!known.includes(value)) emit([...base, value], 1);
}

// An upstream is named by the label that names it everywhere else in the contract: `ray_cluster`
// (source="ray"), `hypha` (source="hypha"), `service` plus its server's `hypha` (source="hypha_service").
// Labels that do not apply are empty (`hypha=""`: absent, to Prometheus), so every series of a family has
// the same label names and a guard joins on the derived series' own label.
const SRC = ['source', 'ray_cluster', 'hypha', 'service'] as const;
const HYPHA = ['hypha'] as const;
const SVC = ['service'] as const;
const APP = ['ray_cluster', 'app'] as const;
const DEP = ['ray_cluster', 'app', 'deployment'] as const;
const PROXY = ['ray_cluster', 'node_id', 'node_ip'] as const;
// Identity of a registration is (ray_cluster, app) on a Hypha server: the expected service id is
// derived and can change while the condition holds (a worker restart), so it lives in an _info series.
const REG = ['ray_cluster', 'app', 'hypha'] as const;
const WORKER_APP = ['hypha', 'worker', 'ray_cluster', 'app'] as const;

/** The values of SRC for one upstream's health. */
function srcLabels(h: SourceHealth): string[] {
  switch (h.source) {
    case 'ray': return [h.source, h.target, '', ''];
    case 'hypha': return [h.source, '', h.target, ''];
    case 'hypha_service': return [h.source, '', h.hypha ?? '', h.target];
  }
}

const startSeconds = Math.round(Date.now() / 1000 - process.uptime());

const depLabels = (x: ScopeArgs['deployment']) => [x.cluster, x.app, x.d.name];
const proxyLabels = (x: ScopeArgs['proxy']) => [x.cluster, x.p.nodeId, x.p.nodeIp];
const regLabels = (x: ScopeArgs['registration']) => [x.a.cluster, x.a.app, x.hypha];

/** When the two proxy pages say no Serve proxy is ready (src/serve/judgement.ts proxyPages), and when they are unknown. */
const NO_PROXY_READY = 'No proxy is ready when none of the probed proxies answers `/-/healthz` with 200, or Ray lists no proxy at all. '
  + 'Absent while Ray is not sampled or no proxy is probed (`proxy_probe` disabled, no HTTP port).';

/** Cached holders whose client id could be read this cycle (the others have no series). */
const readHolders = (w: WatchedServiceSample) => w.cached.filter((c) => c.clientId !== undefined);

export const FAMILIES = [
  // ------------------------------------------------------------ the exporter itself
  fam({
    name: 'hypha_serve_exporter_build_info', type: 'gauge', labels: ['version', 'revision', 'nodejs'], stability: 'stable', scope: 'process',
    help: 'Build of the exporter; always 1.',
    sample: (_x, emit) => emit([VERSION, REVISION, process.version], 1),
  }),
  fam({
    name: 'hypha_serve_exporter_config_last_reload_successful', type: 'gauge', labels: [], stability: 'stable', scope: 'process',
    help: '1 when the last configuration (re)load succeeded.',
    sample: (x, emit) => emit([], x.reload?.ok === true ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_exporter_config_last_reload_success_timestamp_seconds', type: 'gauge', labels: [], stability: 'stable', scope: 'process',
    help: 'When the configuration was last loaded successfully (Unix seconds).',
    sample: (x, emit) => emit([], x.reload?.lastSuccessSeconds ?? 0),
  }),
  // --web.config.file, read again when it or its files change (src/server/web-config-reloader.ts): no
  // series without that flag.
  fam({
    name: 'hypha_serve_exporter_web_config_last_reload_successful', type: 'gauge', labels: [], stability: 'stable', scope: 'process',
    help: '1 when the web config (--web.config.file) and the files it names were last read and applied; 0 while a changed one cannot be applied.',
    doc: 'The files it names are its certificate, key and CA files; while a change cannot be applied the previous one is still served (a renewed '
      + 'certificate is not). Absent without `--web.config.file`.',
    sample: (_x, emit) => {
      const w = webConfigStatus();
      if (w) emit([], w.ok ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_exporter_web_config_last_reload_success_timestamp_seconds', type: 'gauge', labels: [], stability: 'stable', scope: 'process',
    help: 'When the web config was last loaded and applied (Unix seconds).',
    doc: 'Loading includes the certificate it names. Absent without `--web.config.file`.',
    sample: (_x, emit) => {
      const w = webConfigStatus();
      if (w) emit([], w.lastSuccessSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_exporter_web_config_reload_failures_total', type: 'counter', labels: [], stability: 'stable', scope: 'process',
    help: 'Changes to the web config or its files that could not be applied (the previous one kept).',
    doc: 'Each changed content is counted once. Absent without `--web.config.file`.',
    sample: (_x, emit) => {
      const w = webConfigStatus();
      if (w) emit([], w.failuresTotal);
    },
  }),
  // The process's own footprint, hand-made in the exporter's namespace before the standard process_*
  // families (prom-client's default collectors, process.ts) were served: deprecated aliases kept
  // for 0.2.x, removed in the release after.
  fam({
    name: 'hypha_serve_exporter_start_time_seconds', type: 'gauge', labels: [], stability: 'deprecated', scope: 'process',
    help: 'When the exporter process started (Unix seconds). Deprecated: use process_start_time_seconds.',
    sample: (_x, emit) => emit([], startSeconds),
  }),
  fam({
    name: 'hypha_serve_exporter_resident_memory_bytes', type: 'gauge', labels: [], stability: 'deprecated', scope: 'process',
    help: 'Resident memory of the exporter process. Deprecated: use process_resident_memory_bytes.',
    sample: (_x, emit) => emit([], process.memoryUsage.rss()),
  }),
  fam({
    name: 'hypha_serve_exporter_heap_used_bytes', type: 'gauge', labels: [], stability: 'deprecated', scope: 'process',
    help: 'V8 heap in use by the exporter process. Deprecated: use nodejs_heap_size_used_bytes.',
    sample: (_x, emit) => emit([], process.memoryUsage().heapUsed),
  }),
  fam({
    name: 'hypha_serve_exporter_cpu_seconds_total', type: 'counter', labels: [], stability: 'deprecated', scope: 'process',
    help: 'CPU time (user + system) used by the exporter process. Deprecated: use process_cpu_seconds_total.',
    sample: (_x, emit) => {
      const cpu = process.cpuUsage();
      emit([], (cpu.user + cpu.system) / 1e6);
    },
  }),
  fam({
    name: 'hypha_serve_source_up', type: 'gauge', labels: SRC, stability: 'stable', scope: 'source',
    help: '1 when the last sample of the upstream succeeded.',
    doc: '`source="ray"` is labelled `ray_cluster`; `"hypha"` (a registry connection) `hypha` = the Hypha server\'s name; `"hypha_service"` (a '
      + 'watched service\'s connection) `service` = the service id and `hypha` = the server it is watched on. The labels that do not apply to a '
      + 'source are empty (`hypha=""`: absent to Prometheus).',
    sample: ({ h }, emit) => emit(srcLabels(h), h.up ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_source_last_success_timestamp_seconds', type: 'gauge', labels: SRC, stability: 'stable', scope: 'source',
    help: 'When the upstream was last sampled successfully (Unix seconds).',
    sample: ({ h }, emit) => {
      if (h.lastSuccessSeconds !== undefined) emit(srcLabels(h), h.lastSuccessSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_source_sample_age_seconds', type: 'gauge', labels: SRC, stability: 'stable', scope: 'source',
    help: 'Age of the data served for the upstream: now minus the last successful sample.',
    sample: ({ h, now }, emit) => {
      if (h.lastSuccessSeconds !== undefined) emit(srcLabels(h), Math.max(0, now - h.lastSuccessSeconds));
    },
  }),
  fam({
    name: 'hypha_serve_source_sample_duration_seconds', type: 'gauge', labels: SRC, stability: 'stable', scope: 'source',
    help: 'Duration of the last sample attempt of the upstream.',
    sample: ({ h }, emit) => {
      if (h.lastDurationSeconds !== undefined) emit(srcLabels(h), h.lastDurationSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_source_interval_seconds', type: 'gauge', labels: SRC, stability: 'stable', scope: 'source',
    help: 'Configured sampling interval of the upstream; a sample age far past it while source_up stays 1 is a stuck sampler.',
    sample: ({ h }, emit) => {
      if (h.intervalSeconds !== undefined) emit(srcLabels(h), h.intervalSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_source_errors_total', type: 'counter', labels: [...SRC, 'reason'], stability: 'stable', scope: 'source',
    help: 'Failed samples of the upstream by reason.',
    doc: `Reasons: ${SAMPLE_ERROR_REASONS.join(', ')}. \`schema\` also counts answers with skipped malformed entries; `
      + '`auth_secret_changed`: Hypha refused, with a signature error, a token it had accepted before (it restarted with a new JWT secret).',
    sample: ({ h }, emit) => {
      for (const reason of SAMPLE_ERROR_REASONS) emit([...srcLabels(h), reason], h.errors[reason]);
    },
  }),
  fam({
    name: 'hypha_serve_credential_last_read_timestamp_seconds', type: 'gauge', labels: [...SRC, 'file'], stability: 'experimental', scope: 'source',
    help: 'When the token file of the upstream was last read successfully (Unix seconds); it is read again whenever it changes.',
    doc: 'The token file is the source\'s `bearer_token_file`, also read again after a refusal; the token itself is never exported. Only for sources '
      + 'with a token file.',
    sample: ({ h }, emit) => {
      if (h.credential) emit([...srcLabels(h), h.credential.file], h.credential.lastReadSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_credential_read_errors_total', type: 'counter', labels: [...SRC, 'file'], stability: 'experimental', scope: 'source',
    help: 'Spells in which the token file of the upstream could not be read (missing, unreadable or empty); the last token read is kept.',
    doc: 'The token file is the source\'s `bearer_token_file`. Only for sources with a token file.',
    sample: ({ h }, emit) => {
      if (h.credential) emit([...srcLabels(h), h.credential.file], h.credential.readErrorsTotal);
    },
  }),

  // ------------------------------------------------------------ watched services (docs/watched-services.md)
  // Present while the service is configured, whether its source is up or not: the counters and
  // the histogram always (cumulative since the source started), the other facts only while known.
  fam({
    name: 'hypha_serve_service_providers', type: 'gauge', labels: SVC, stability: 'stable', scope: 'service',
    help: 'Live providers of the watched service (registrations in its workspace).',
    doc: 'A watched service is e.g. `public/artifact-manager`.',
    sample: (w, emit) => {
      if (w.providers) emit([w.service], w.providers.length);
    },
  }),
  fam({
    name: 'hypha_serve_service_provider_info', type: 'gauge', labels: [...SVC, 'client_id'], stability: 'stable', scope: 'service',
    help: 'One series per live provider of the watched service; always 1.',
    doc: 'Departed providers\' series are removed.',
    sample: (w, emit) => {
      for (const clientId of w.providers ?? []) emit([w.service, clientId], 1);
    },
  }),
  fam({
    name: 'hypha_serve_service_resolved_info', type: 'gauge', labels: [...SVC, 'client_id'], stability: 'stable', scope: 'service',
    help: 'Client id a fresh getServiceInfo on the current connection resolved to this cycle; always 1.',
    sample: (w, emit) => {
      if (w.resolvedClientId !== undefined) emit([w.service, w.resolvedClientId], 1);
    },
  }),
  fam({
    name: 'hypha_serve_service_cached_info', type: 'gauge', labels: [...SVC, 'holder', 'client_id'], stability: 'stable', scope: 'service',
    help: 'Client id a long-lived proxy addresses (holder="exporter": the exporter\'s own canary); always 1.',
    doc: 'Holders other than the exporter are the configured ones.',
    sample: (w, emit) => {
      for (const c of readHolders(w)) emit([w.service, c.holder, c.clientId], 1);
    },
  }),
  fam({
    name: 'hypha_serve_service_cached_stale', type: 'gauge', labels: [...SVC, 'holder'], stability: 'stable', scope: 'service',
    help: '1 when the cached client id of the holder is not among the live providers.',
    doc: 'The incident-2 condition.',
    sample: (w, emit) => {
      for (const c of readHolders(w)) if (c.stale !== undefined) emit([w.service, c.holder], c.stale ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_service_client_id_changes_total', type: 'counter', labels: SVC, stability: 'stable', scope: 'service',
    help: 'Cycles in which the set of provider client ids differed from the previous cycle\'s.',
    sample: (w, emit) => emit([w.service], w.clientIdChangesTotal),
  }),
  fam({
    name: 'hypha_serve_service_client_id_last_change_timestamp_seconds', type: 'gauge', labels: SVC, stability: 'stable', scope: 'service',
    help: 'When the provider set last changed (Unix seconds).',
    sample: (w, emit) => {
      if (w.lastChangeSeconds !== undefined) emit([w.service], w.lastChangeSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_service_canary_reresolves_total', type: 'counter', labels: SVC, stability: 'stable', scope: 'service',
    help: 'Times the exporter dropped its stale canary proxy and resolved the service anew.',
    doc: 'It does so when the canary\'s witness ends (holders agree, `witness_max`, operator release).',
    sample: (w, emit) => emit([w.service], w.canaryReresolvesTotal),
  }),
  histogram({
    name: 'hypha_serve_service_call_duration_seconds', type: 'histogram', labels: [...SVC, 'method', 'via', 'outcome', 'holder'],
    buckets: CALL_DURATION_BUCKETS, stability: 'stable', scope: 'service',
    help: 'Duration of probe calls to the watched service via the cached (canary) or a freshly resolved proxy, and of holder probes '
      + '(via="holder", with a holder label: a call to the holder that goes through its cached proxy), by outcome.',
    doc: `Outcomes: ${CALL_OUTCOMES.join(', ')}; every outcome's series exists from the start. Buckets (\`le\`, seconds): ${CALL_DURATION_BUCKETS.join(', ')}.`,
    sample: (w, emit) => {
      for (const c of w.calls) emit([w.service, c.method, c.via, c.outcome, c.holder], c.histogram);
    },
  }),
  fam({
    name: 'hypha_serve_service_probe_success', type: 'gauge', labels: [...SVC, 'via'], stability: 'stable', scope: 'service',
    help: '1 when the last probe call via this kind of proxy succeeded (fresh: any live provider answered).',
    sample: (w, emit) => {
      for (const p of Object.values(w.lastProbes)) emit([w.service, p.via], p.outcome === 'ok' ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_service_cached_stale_since_timestamp_seconds', type: 'gauge', labels: [...SVC, 'holder'], stability: 'stable', scope: 'service',
    help: 'Since when the cached client id of the holder has not been among the live providers (holder="exporter": when the canary became '
      + 'the witness); present while cached_stale is 1.',
    sample: (w, emit) => {
      for (const c of readHolders(w)) if (c.stale === true && c.staleSinceSeconds !== undefined) emit([w.service, c.holder], c.staleSinceSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_service_holders_configured', type: 'gauge', labels: SVC, stability: 'stable', scope: 'service',
    help: 'Configured holders (long-lived clients read or probed). 0: the exporter sees no real client; its stale canary is the only witness.',
    sample: (w, emit) => {
      if (w.holdersConfigured !== undefined) emit([w.service], w.holdersConfigured);
    },
  }),
  fam({
    name: 'hypha_serve_service_witness_max_seconds', type: 'gauge', labels: SVC, stability: 'experimental', scope: 'service',
    help: 'canary.witness_max: the longest a stale canary is kept as the witness; absent when unlimited.',
    sample: (w, emit) => {
      if (w.witnessMaxSeconds !== undefined) emit([w.service], w.witnessMaxSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_service_witness_releases_total', type: 'counter', labels: [...SVC, 'reason'], stability: 'experimental', scope: 'service',
    help: 'Times a stale canary (the witness) ended, by reason: returned (its id is live again), holders_agree, max_age (witness_max passed), '
      + 'operator (released_client_ids), self_healing (every holder a worker that re-resolves by itself, for canary.self_healing_release).',
    doc: 'Every reason\'s series is present from the start.',
    sample: (w, emit) => {
      for (const reason of WITNESS_RELEASE_REASONS) emit([w.service, reason], w.witnessReleasesTotal?.[reason] ?? 0);
    },
  }),
  fam({
    name: 'hypha_serve_service_holder_probe_success', type: 'gauge', labels: [...SVC, 'holder'], stability: 'experimental', scope: 'service',
    help: '1 when the last holder probe (a read-only call through the holder\'s cached proxy of the service) succeeded.',
    doc: 'Only while the source is up, after the holder\'s first probe.',
    sample: (w, emit) => {
      // Like the other probes: only while the source is up.
      if (w.health.up) for (const p of w.holderProbes ?? []) emit([w.service, p.holder], p.outcome === 'ok' ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_service_cached_server_gone', type: 'gauge', labels: [...SVC, 'holder'], stability: 'stable', scope: 'service',
    help: '1 when the holder\'s cached client id is stale and is a Hypha server id the server replaced (it came back under another id): '
      + 'that id never returns; 0 otherwise; absent while staleness is unknown.',
    sample: (w, emit) => {
      for (const c of readHolders(w)) if (c.serverGone !== undefined) emit([w.service, c.holder], c.serverGone ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_service_cached_stale_page', type: 'gauge', labels: [...SVC, 'holder'], stability: 'stable', scope: 'service',
    help: 'The exporter\'s decision on HyphaServiceCachedProxyStale: 1 when the holder\'s cached id has been stale for its cause\'s wait '
      + '(or is proven gone), held until the spell ends; 0 otherwise.',
    doc: 'The waits are `watched_services[].page_waits`: `uncertain` 2m, or `proven` 0s when the id is a Hypha server id the server replaced; '
      + 'the page holds while the id stays stale, whatever the cause becomes. Always 0 for the canary of a self-healing witness '
      + '(`hypha_serve_service_witness_self_healing`: a warning; a discovered worker that is not listed still counts as a holder for '
      + '`canary.self_healing_release`, so a reconnect after a Hypha restart does not make a witness self-healing). Kept across a '
      + 'restart with `--storage.path`; absent while staleness is unknown (the source down).',
    sample: (w, emit) => {
      for (const c of readHolders(w)) if (c.stale !== undefined) emit([w.service, c.holder], c.page?.firing === true ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_service_cached_stale_cause_info', type: 'gauge', labels: [...SVC, 'holder', 'client_id', 'cause', 'reason', 'holders'],
    stability: 'stable', scope: 'service',
    help: 'Why the holder\'s cached id is stale, for the page text: client_id, cause (server_gone or not_listed), reason, holders (what the '
      + 'exporter can see: none, configured or workers); always 1, present only while stale.',
    doc: '`cause`: `server_gone` (a Hypha server id the server replaced, proven never to return) or `not_listed` (not among the live providers); '
      + '`reason`: the cause in a sentence; `holders`: the long-lived clients the exporter can see besides its canary (`configured` holders, '
      + 'discovered BioEngine `workers`, or `none`). What HyphaServiceCachedProxyStale prints; its labels change with the cause, so the page\'s '
      + 'identity does not carry them.',
    sample: (w, emit) => {
      const holders = (w.holdersConfigured ?? 0) > 0 ? 'configured' : (w.workerHolders ?? []).length > 0 ? 'workers' : 'none';
      for (const c of readHolders(w)) {
        if (c.page) emit([w.service, c.holder, c.clientId, c.page.cause, STALE_CAUSE_TEXT[c.page.cause], holders], 1);
      }
    },
  }),
  fam({
    name: 'hypha_serve_service_cached_probe_failing', type: 'gauge', labels: SVC, stability: 'stable', scope: 'service',
    help: 'The exporter\'s decision on HyphaServiceCachedProbeFailing: 1 when no probe through the cached proxy succeeded within the probe '
      + 'window while one through a fresh proxy did; 0 otherwise.',
    doc: 'The probe window is `watched_services[].probe_window` (3m); the symptom of a stale cached proxy. Also 0 for the canary of a self-healing witness. '
      + 'Absent while the source is down and until the exporter has probed the cached path for a whole window since it started.',
    sample: (w, emit) => {
      if (w.probeVerdicts?.cachedFailing !== undefined) emit([w.service], w.probeVerdicts.cachedFailing ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_service_probe_failing', type: 'gauge', labels: SVC, stability: 'stable', scope: 'service',
    help: 'The exporter\'s decision on HyphaServiceProbeFailing: 1 when no probe call on any path succeeded within the probe window; '
      + '0 otherwise.',
    doc: 'The probe window is `watched_services[].probe_window` (3m). Absent while the source is down and until the exporter has probed for a whole '
      + 'window since it started.',
    sample: (w, emit) => {
      if (w.probeVerdicts?.allFailing !== undefined) emit([w.service], w.probeVerdicts.allFailing ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_service_fresh_probe_attempts', type: 'gauge', labels: SVC, stability: 'experimental', scope: 'service',
    help: 'Providers the last fresh probe tried: 1 = the first resolution answered; more = a listed provider did not answer and others were tried.',
    sample: (w, emit) => {
      if (w.lastProbes.fresh?.attempts !== undefined) emit([w.service], w.lastProbes.fresh.attempts);
    },
  }),
  fam({
    name: 'hypha_serve_service_holder_info', type: 'gauge', labels: [...SVC, 'hypha', 'holder', 'version', 'recovery'], stability: 'experimental',
    scope: 'service',
    help: 'A BioEngine worker that holds the watched service by default (no holders configured): holder = its client id, version = its last '
      + 'known bioengine_version, recovery = self_healing (0.16.30 or later, artifact manager), stays_stale (up to 0.16.2) or unknown; always 1.',
    doc: 'One series per worker the Hypha source of the service\'s server discovered (up or not): the long-lived clients the canary stands in for '
      + '(configured `holders:` win, and then there is none). `version` is empty if never reported; `self_healing`: its cached proxy re-resolves after '
      + 'one failed call; `stays_stale`: bound to the old id until it restarts.',
    sample: (w, emit) => {
      for (const h of w.workerHolders ?? []) emit([w.service, w.health.hypha ?? '', h.holder, h.version ?? '', h.recovery], 1);
    },
  }),
  fam({
    name: 'hypha_serve_service_witness_self_healing', type: 'gauge', labels: [...SVC, 'hypha'], stability: 'experimental', scope: 'service',
    help: '1 when the canary is the witness (stale) and every holder the exporter knows re-resolves by itself (at least one BioEngine worker, '
      + 'all self_healing, no configured holder): a warning, not a page; it ends by itself after canary.self_healing_release. 0 otherwise.',
    doc: '`HyphaServiceCachedProxyStale` does not page for the canary, `HyphaServiceCachedProxySelfHealing` warns, and the witness ends with reason '
      + '`self_healing` once it has been so for `canary.self_healing_release` (5m). Only while the source is up and the canary is enabled.',
    sample: (w, emit) => {
      if (w.health.up && w.witnessSelfHealing !== undefined) emit([w.service, w.health.hypha ?? ''], w.witnessSelfHealing ? 1 : 0);
    },
  }),

  // ------------------------------------------------------------ Ray Serve
  // `ray_cluster`, not `cluster`: multi-cluster Prometheus setups use `cluster` as an external label.
  fam({
    name: 'hypha_serve_app_status', type: 'gauge', labels: [...APP, 'status'], stability: 'stable', scope: 'app',
    help: 'Ray Serve application status (state set: 1 for the current status).',
    doc: `States: ${APP_STATUSES.join(', ')}.`,
    sample: (x, emit) => stateSet(emit, [x.cluster, x.app.name], APP_STATUSES, x.app.status),
  }),
  fam({
    name: 'hypha_serve_app_info', type: 'gauge', labels: [...APP, 'route_prefix', 'source'], stability: 'stable', scope: 'app',
    help: 'Ray Serve application facts; always 1.',
    sample: (x, emit) => emit([x.cluster, x.app.name, x.app.routePrefix ?? '', x.app.source ?? ''], 1),
  }),
  fam({
    name: 'hypha_serve_app_deployed_timestamp_seconds', type: 'gauge', labels: APP, stability: 'stable', scope: 'app',
    help: 'When the application was last deployed (Unix seconds).',
    sample: (x, emit) => {
      if (x.app.lastDeployedSeconds !== undefined) emit([x.cluster, x.app.name], x.app.lastDeployedSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_app_message_present', type: 'gauge', labels: APP, stability: 'stable', scope: 'app',
    help: '1 when Ray Serve reports a non-empty status message for the application.',
    doc: 'The text is on the status page, not in a label.',
    sample: (x, emit) => emit([x.cluster, x.app.name], x.app.messagePresent ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_app_bioengine_proxy', type: 'gauge', labels: APP, stability: 'stable', scope: 'app',
    help: '1 when the application\'s ingress is BioEngine\'s ProxyDeployment, which registers its Hypha service and deregisters it when '
      + 'a sibling deployment has no RUNNING replica; 0 for other Serve apps (registrant unknown).',
    doc: 'Its ProxyDeployment deregisters so since BioEngine 0.13.0.',
    sample: (x, emit) => emit([x.cluster, x.app.name], isBioEngineApp(x.app) ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_deployment_status', type: 'gauge', labels: [...DEP, 'status'], stability: 'stable', scope: 'deployment',
    help: 'Ray Serve deployment status (state set).',
    doc: `States: ${DEPLOYMENT_STATUSES.join(', ')}.`,
    sample: (x, emit) => stateSet(emit, depLabels(x), DEPLOYMENT_STATUSES, x.d.status),
  }),
  fam({
    name: 'hypha_serve_deployment_replicas', type: 'gauge', labels: [...DEP, 'state'], stability: 'stable', scope: 'deployment',
    help: 'Replicas of the deployment per replica state (explicit zeros).',
    doc: `States: ${REPLICA_STATES.join(', ')}.`,
    sample: (x, emit) => {
      const l = depLabels(x);
      for (const [state, n] of Object.entries(x.d.replicas)) emit([...l, state], n);
    },
  }),
  fam({
    name: 'hypha_serve_deployment_target_replicas', type: 'gauge', labels: DEP, stability: 'stable', scope: 'deployment',
    help: 'Replica count Ray Serve is currently targeting.',
    sample: (x, emit) => {
      if (x.d.targetReplicas !== undefined) emit(depLabels(x), x.d.targetReplicas);
    },
  }),
  fam({
    name: 'hypha_serve_deployment_min_replicas', type: 'gauge', labels: DEP, stability: 'stable', scope: 'deployment',
    help: 'Lower replica bound (autoscaling min_replicas, or the fixed num_replicas).',
    sample: (x, emit) => {
      if (x.d.minReplicas !== undefined) emit(depLabels(x), x.d.minReplicas);
    },
  }),
  fam({
    name: 'hypha_serve_deployment_max_replicas', type: 'gauge', labels: DEP, stability: 'stable', scope: 'deployment',
    help: 'Upper replica bound (autoscaling max_replicas, or the fixed num_replicas).',
    sample: (x, emit) => {
      if (x.d.maxReplicas !== undefined) emit(depLabels(x), x.d.maxReplicas);
    },
  }),
  fam({
    name: 'hypha_serve_deployment_autoscaling', type: 'gauge', labels: DEP, stability: 'stable', scope: 'deployment',
    help: '1 when the deployment has an autoscaling config.',
    sample: (x, emit) => emit(depLabels(x), x.d.autoscaling ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_deployment_scaled_to_zero', type: 'gauge', labels: DEP, stability: 'stable', scope: 'deployment',
    help: '1 when the deployment is idle at zero by design (autoscaling allows 0, target 0, no RUNNING replica, serviceable status).',
    doc: `Serviceable: ${SERVICEABLE_DEPLOYMENT_STATUSES.join(', ')} (as opposed to crashed).`,
    sample: (x, emit) => emit(depLabels(x), x.d.scaledToZero ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_proxy_ready', type: 'gauge', labels: PROXY, stability: 'stable', scope: 'proxy',
    help: '1 when the Serve HTTP proxy answers 200 on /-/healthz.',
    sample: (x, emit) => {
      if (x.p.ready !== undefined) emit(proxyLabels(x), x.p.ready ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_proxy_head', type: 'gauge', labels: PROXY, stability: 'stable', scope: 'proxy',
    help: '1 for the proxy on the controller (head) node, the one that can wake scaled-to-zero apps.',
    doc: 'It is the only one Ray keeps ready at zero replicas, to take the request that wakes a scaled-to-zero app (Ray PR #47002).',
    sample: (x, emit) => emit(proxyLabels(x), x.p.head ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_proxy_status', type: 'gauge', labels: [...PROXY, 'status'], stability: 'stable', scope: 'proxy',
    help: 'Controller view of the Serve proxy actor (state set).',
    doc: `States: ${PROXY_STATUSES.join(', ')}.`,
    sample: (x, emit) => stateSet(emit, proxyLabels(x), PROXY_STATUSES, x.p.status),
  }),
  fam({
    name: 'hypha_serve_cluster_apps_dropped_total', type: 'counter', labels: ['ray_cluster'], stability: 'experimental', scope: 'cluster',
    help: 'Applications left out by the per-cluster max_apps cap, summed over samples.',
    reads: ['cluster', 'appsDroppedTotal'],
    sample: (x, emit) => emit([x.cluster], x.appsDroppedTotal),
  }),
  fam({
    name: 'hypha_serve_cluster_malformed_entries_total', type: 'counter', labels: ['ray_cluster'], stability: 'experimental', scope: 'cluster',
    help: 'Malformed apps, deployments or proxies skipped in Serve API answers.',
    reads: ['cluster', 'malformedTotal'],
    sample: (x, emit) => emit([x.cluster], x.malformedTotal),
  }),

  fam({
    name: 'hypha_serve_cluster_no_proxy_can_wake_apps', type: 'gauge', labels: ['ray_cluster'], stability: 'stable', scope: 'cluster',
    help: 'The exporter\'s decision on HyphaServeNoProxyCanWakeApps: 1 when deployments of the cluster are idle at zero and no Serve '
      + 'proxy is ready to take the request that wakes them; 0 otherwise.',
    doc: `Idle at zero: \`hypha_serve_deployment_scaled_to_zero\`. ${NO_PROXY_READY}`,
    reads: ['cluster', 'proxyPages'],
    sample: (x, emit) => {
      if (x.proxyPages) emit([x.cluster], x.proxyPages.noProxyCanWakeApps ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_cluster_all_proxies_unready', type: 'gauge', labels: ['ray_cluster'], stability: 'stable', scope: 'cluster',
    help: 'The exporter\'s decision on HyphaServeAllProxiesUnready: 1 when deployments of the cluster have RUNNING replicas and no '
      + 'Serve proxy is ready to route to them; 0 otherwise.',
    doc: NO_PROXY_READY,
    reads: ['cluster', 'proxyPages'],
    sample: (x, emit) => {
      if (x.proxyPages) emit([x.cluster], x.proxyPages.allProxiesUnready ? 1 : 0);
    },
  }),

  // ------------------------------------------------------------ Hypha registration and BioEngine workers
  fam({
    name: 'hypha_serve_hypha_reconnects_total', type: 'counter', labels: HYPHA, stability: 'stable', scope: 'hypha',
    reads: ['target', 'reconnectsTotal'],
    help: 'Connections to the Hypha server rebuilt after the first one.',
    sample: (h, emit) => emit([h.target], h.reconnectsTotal),
  }),
  fam({
    name: 'hypha_serve_hypha_connection_generation', type: 'gauge', labels: HYPHA, stability: 'stable', scope: 'hypha',
    reads: ['target', 'generation'],
    help: 'Number of the current Hypha connection (1 = the first); moves on every rebuild.',
    sample: (h, emit) => {
      if (h.generation > 0) emit([h.target], h.generation);
    },
  }),
  fam({
    name: 'hypha_serve_hypha_server_info', type: 'gauge', labels: [...HYPHA, 'server_id'], stability: 'stable', scope: 'hypha',
    reads: ['target', 'health.up', 'serverId'],
    help: 'The id of the Hypha server the registry connection is connected to; always 1.',
    doc: '`server_id` is the id the server reports on the current connection; its built-in services, the artifact manager among them, '
      + 'are provided by client `server_id`. Absent while not connected.',
    sample: (h, emit) => {
      if (h.health.up && h.serverId !== undefined) emit([h.target, h.serverId], 1);
    },
  }),
  fam({
    name: 'hypha_serve_hypha_server_id_changed', type: 'gauge', labels: HYPHA, stability: 'stable', scope: 'hypha',
    reads: ['target', 'health.up', 'serverIdChanged'],
    help: '1 when the Hypha server came back (a rebuilt connection) under another server id than before, 0 when it came back under the same id; '
      + 'absent until the exporter has seen a comeback.',
    doc: 'A server without a fixed `--server-id`/`HYPHA_SERVER_ID` strands cached proxies to its built-in services at every restart (incident 2). '
      + 'Also absent while the source is down; kept in `--storage.path` across an exporter restart (without it unknown again until the next comeback).',
    sample: (h, emit) => {
      if (h.health.up && h.serverIdChanged !== undefined) emit([h.target], h.serverIdChanged ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_hypha_malformed_entries_total', type: 'counter', labels: HYPHA, stability: 'experimental', scope: 'hypha',
    reads: ['target', 'malformedTotal'],
    help: 'Malformed entries skipped in Hypha registry listings.',
    sample: (h, emit) => emit([h.target], h.malformedTotal),
  }),
  fam({
    name: 'hypha_serve_app_registered', type: 'gauge', labels: REG, stability: 'stable', scope: 'registration',
    help: '1 when the Serve app\'s expected Hypha service is registered (also under another client id), 0 when not. '
      + 'Present only while the Ray and Hypha sources are up.',
    sample: (x, emit) => {
      if (x.known) emit(regLabels(x), x.a.registered ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_app_expected_service_info', type: 'gauge', labels: [...REG, 'workspace', 'service'], stability: 'stable', scope: 'registration',
    help: 'The Hypha service the Serve app is expected to register ("ws/client:svc", client "*" while never known); always 1.',
    doc: 'Keeps the last known client id through a worker restart.',
    sample: (x, emit) => emit([...regLabels(x), x.a.workspace, x.a.service], 1),
  }),
  fam({
    name: 'hypha_serve_app_registration_state', type: 'gauge', labels: [...REG, 'state'], stability: 'stable', scope: 'registration',
    help: 'Registration of the Serve app in Hypha, and why it is missing (state set).',
    doc: `States: ${REGISTRATION_STATES.join(', ')}.`,
    sample: (x, emit) => {
      if (x.known) stateSet(emit, regLabels(x), REGISTRATION_STATES, x.a.state);
    },
  }),
  fam({
    name: 'hypha_serve_app_unregistered_since_timestamp_seconds', type: 'gauge', labels: REG, stability: 'stable', scope: 'registration',
    help: 'Start of the current spell in which the running app has no Hypha registration (Unix seconds); present only while missing.',
    sample: (x, emit) => {
      if (x.known && isMissing(x.a.state) && x.a.unregisteredSinceSeconds !== undefined) emit(regLabels(x), x.a.unregisteredSinceSeconds);
    },
  }),
  fam({
    name: 'hypha_serve_app_registration_stuck', type: 'gauge', labels: REG, stability: 'stable', scope: 'registration',
    help: '1 when the app is missing in a state its BioEngine proxy never leaves by itself (the proxy runs the gate that deregisters at '
      + 'zero, a gated deployment is idle at zero by design, and only a call through the missing service would wake it), 0 otherwise. '
      + 'Present only while the Ray and Hypha sources are up.',
    doc: 'The states are `missing_scaled_to_zero` or `missing_never_registered` of a BioEngine app whose proxy runs that gate '
      + '(`hypha_serve_app_bioengine_gate`, BioEngine up to 0.16.2) with a gated deployment at target 0: that proxy registers only once every '
      + 'gated deployment has a RUNNING replica. 0 also for another cause, a replica being started, a proxy that registers at zero, an unknown gate. '
      + 'A proof pages without the cause\'s wait (`hypha_registration.page_waits.proven`).',
    sample: (x, emit) => {
      if (x.known) emit(regLabels(x), x.a.stuck === true ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_app_bioengine_gate', type: 'gauge', labels: [...REG, 'gate'], stability: 'stable', scope: 'registration',
    help: 'The registration gate the BioEngine app\'s ProxyDeployment runs (state set): deregisters_at_zero (releases up to 0.16.2), '
      + 'serviceable_at_zero (the fix, from 0.16.16), unknown.',
    doc: '`deregisters_at_zero` never registers an app deployed at zero and deregisters one whose sibling idles at zero; with `serviceable_at_zero` '
      + 'an app idle at zero stays registered. Told from what the app was seen doing (registered 30 s into a sibling\'s zero spell: fixed; lost as a '
      + 'sibling reached zero: old), else from the version of the worker that deployed it (`deployed_by_worker_client_id`, `hypha_serve_worker_info`); '
      + 'absent for apps mapped by template.',
    sample: (x, emit) => {
      if (x.known && x.a.gate) stateSet(emit, regLabels(x), BIOENGINE_GATES, x.a.gate.gate);
    },
  }),
  fam({
    name: 'hypha_serve_app_running_not_registered_page', type: 'gauge', labels: REG, stability: 'stable', scope: 'registration',
    help: 'The exporter\'s decision on HyphaServeAppRunningNotRegistered: 1 when the app has been RUNNING and missing for its cause\'s wait '
      + '(or its cause is proven final), held until it is registered or no longer RUNNING; 0 otherwise.',
    doc: 'The waits are `hypha_registration.page_waits` (5 min by default); proven final: `hypha_serve_app_registration_stuck`. The page holds '
      + 'whatever the cause becomes. Kept across a restart with `--storage.path`; absent while the Ray or Hypha source is down or after a reconnect '
      + 'while providers re-register.',
    sample: (x, emit) => {
      if (x.known) emit(regLabels(x), x.a.page?.firing === true ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_app_not_registered_cause_info', type: 'gauge', labels: [...REG, 'cause', 'reason', 'gate', 'proven', 'service'],
    stability: 'stable', scope: 'registration',
    help: 'Why the app\'s service is missing, for the page text: cause (a missing_* state), reason (the cause in a sentence), gate, '
      + 'proven, the expected service; always 1, present only while missing.',
    doc: '`reason` is the runbook branch; `gate` is empty for template apps; `proven` is `true` while the cause is proven final. '
      + 'What HyphaServeAppRunningNotRegistered prints; its labels change with the cause, so the page\'s identity does not carry them.',
    sample: (x, emit) => {
      if (!x.known || !isMissing(x.a.state)) return;
      const cause = x.a.state as MissingState;
      emit([...regLabels(x), cause, CAUSE_TEXT[cause], x.a.gate?.gate ?? '', x.a.stuck === true ? 'true' : 'false', x.a.service], 1);
    },
  }),
  fam({
    name: 'hypha_serve_worker_app_running_not_registered_page', type: 'gauge', labels: REG, stability: 'stable', scope: 'registration',
    help: 'The exporter\'s decision on HyphaServeWorkerAppRunningNotRegistered: 1 when a BioEngine worker tied to the app\'s cluster has '
      + 'said it is RUNNING for the worker wait while the registry has no service for it; 0 otherwise.',
    doc: 'RUNNING, and registered where the worker reports it; the worker wait is `hypha_registration.page_waits.worker` (5 min), and the page holds '
      + 'while that lasts. A worker that stops answering (a restart) keeps its last word for 5 min; one that answers otherwise ends it. Also 0 while '
      + '`hypha_serve_app_running_not_registered_page` is 1 for the same app (one page per app; it fires at once should that page end while a worker '
      + 'still says RUNNING); absent while the Ray or Hypha source is down.',
    sample: (x, emit) => {
      if (x.known) emit(regLabels(x), x.a.workerPage?.firing === true ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_app_will_deregister_at_zero', type: 'gauge', labels: REG, stability: 'stable', scope: 'registration',
    help: '1 when the app is registered, its BioEngine proxy runs the gate that deregisters at zero, and a gated deployment autoscales '
      + 'with min_replicas 0 (HyphaServeAppWillDeregisterAtZero); 0 otherwise.',
    doc: 'When that deployment idles to zero, the proxy deregisters the service. The gate: `hypha_serve_app_bioengine_gate`. 0 also for a proxy '
      + 'that keeps an app idle at zero registered, an unknown gate, and a template app.',
    sample: (x, emit) => {
      if (x.known) emit(regLabels(x), x.a.deregistersAtZero === true ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_app_registration_client_id_mismatch', type: 'gauge', labels: REG, stability: 'stable', scope: 'registration',
    help: '1 when the app\'s service is registered only under a client id other than the expected one.',
    sample: (x, emit) => {
      if (x.known) emit(regLabels(x), x.a.clientIdMismatch ? 1 : 0);
    },
  }),
  fam({
    name: 'hypha_serve_app_registration_client_id_changes_total', type: 'counter', labels: REG, stability: 'stable', scope: 'registration',
    help: 'Times the client id registering the app\'s service changed (e.g. proxy replicas re-registering).',
    sample: (x, emit) => emit(regLabels(x), x.a.clientIdChangesTotal),
  }),
  fam({
    name: 'hypha_serve_worker_up', type: 'gauge', labels: ['hypha', 'worker'], stability: 'experimental', scope: 'worker',
    help: '1 when the BioEngine worker answered get_status in its last cross-check.',
    sample: (x, emit) => emit([x.hypha, x.w.worker], x.w.up ? 1 : 0),
  }),
  fam({
    name: 'hypha_serve_worker_info', type: 'gauge', labels: ['hypha', 'worker', 'version'], stability: 'stable', scope: 'worker',
    help: 'The BioEngine version the worker reports (get_status().bioengine_version); always 1, present while it answers and says.',
    doc: 'The gate of each app it deployed follows it (`hypha_serve_app_bioengine_gate`).',
    sample: (x, emit) => {
      if (x.w.up && x.w.version !== undefined) emit([x.hypha, x.w.worker, x.w.version], 1);
    },
  }),
  fam({
    name: 'hypha_serve_worker_app_status', type: 'gauge', labels: [...WORKER_APP, 'status'], stability: 'experimental', scope: 'worker',
    help: 'App status as the BioEngine worker reports it (state set); ray_cluster is empty when the config does not tie the worker to one cluster.',
    doc: `States: ${APP_STATUSES.join(', ')}.`,
    sample: (x, emit) => {
      if (!x.w.up) return;
      for (const app of x.w.apps) stateSet(emit, [x.hypha, x.w.worker, x.w.rayCluster ?? '', app.app], APP_STATUSES, app.status);
    },
  }),
  fam({
    name: 'hypha_serve_worker_app_service_registered', type: 'gauge', labels: WORKER_APP, stability: 'experimental', scope: 'worker',
    help: 'The BioEngine worker\'s own belief whether the app\'s service is registered; absent when the worker does not say '
      + '(BioEngine 0.16.1 and older do not).',
    doc: 'Newer workers report it.',
    sample: (x, emit) => {
      if (!x.w.up) return;
      for (const app of x.w.apps) {
        if (app.serviceRegistered !== undefined) emit([x.hypha, x.w.worker, x.w.rayCluster ?? '', app.app], app.serviceRegistered ? 1 : 0);
      }
    },
  }),
] as const satisfies readonly AnyFamily[];

/** The name of a declared family: the rules generator takes metric names as this type, so a misspelt one fails to compile. */
export type FamilyName = (typeof FAMILIES)[number]['name'];

/** Receives one exposition sample: its metric name (a histogram's with its suffix), label names and values, and value. */
export type SampleSink = (name: string, labelNames: readonly string[], labelValues: readonly (string | undefined)[], value: number) => void;

/**
 * Every sample of one family for one unit of its scope (renderer and docs alike). A histogram
 * series becomes its cumulative `_bucket` lines (`le` after the family's labels, then +Inf =
 * the count), `_sum` and `_count`, as the exposition formats define them.
 */
export function forEachSample(f: AnyFamily, arg: unknown, sink: SampleSink): void {
  if (f.type !== 'histogram') {
    (f.sample as (x: unknown, e: Emit) => void)(arg, (vals, v) => sink(f.name, f.labels, vals, v));
    return;
  }
  const bucket = `${f.name}_bucket`;
  const bucketLabels = [...f.labels, 'le'];
  const bounds = f.buckets.map(String);
  (f.sample as (x: unknown, e: EmitHistogram) => void)(arg, (vals, h) => {
    let cumulative = 0;
    bounds.forEach((le, i) => {
      cumulative += h.counts[i] ?? 0;
      sink(bucket, bucketLabels, [...vals, le], cumulative);
    });
    sink(bucket, bucketLabels, [...vals, '+Inf'], h.count);
    sink(`${f.name}_sum`, f.labels, vals, h.sum);
    sink(`${f.name}_count`, f.labels, vals, h.count);
  });
}

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

/** Every field the families of a projected scope read, in a stable order: the data its units are compared on. */
export function scopeReads<S extends keyof ProjectedScopes>(scope: S): readonly ProjectedScopes[S][] {
  const all = FAMILIES.flatMap((f) => (f.scope === scope ? (f.reads as readonly ProjectedScopes[S][]) : []));
  return [...new Set(all)].sort();
}
const CLUSTER_READS = scopeReads('cluster');
const HYPHA_READS = scopeReads('hypha');

/** The values of `fields` (`a` or `a.b`) of `x`, in their order. */
function readFields(x: object, fields: readonly string[]): unknown[] {
  return fields.map((path) => path.split('.').reduce<unknown>((v, k) => (v === undefined || v === null ? undefined : (v as Record<string, unknown>)[k]), x));
}

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
    // One unit per watched service: a sample of one service re-renders that service only (the store
    // keeps the other services' objects, so their comparison is an identity check).
    case 'service':
      for (const w of s.services?.values() ?? []) yield { key: w.service, arg: w, data: w } as U;
      return;
    case 'cluster':
      for (const c of s.ray.values()) if (isKnown(c.health)) yield { key: c.cluster, arg: c, data: readFields(c, CLUSTER_READS) } as U;
      return;
    case 'app':
      for (const c of s.ray.values()) {
        for (const app of c.state?.apps ?? []) {
          yield { key: `${c.cluster}${SEP}${app.name}`, arg: { cluster: c.cluster, app }, data: app, skip: 'deployments' } as U;
        }
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
        for (const p of c.state?.proxies ?? []) {
          yield { key: `${c.cluster}${SEP}${p.nodeId}${SEP}${p.nodeIp}`, arg: { cluster: c.cluster, p }, data: p } as U;
        }
      }
      return;
    case 'hypha':
      for (const h of s.hypha?.values() ?? []) {
        if (!isKnown(h.health)) continue;
        yield { key: h.target, arg: h, data: readFields(h, HYPHA_READS) } as U;
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

export const SCOPES: readonly Scope[] = ['process', 'source', 'service', 'cluster', 'app', 'deployment', 'proxy', 'hypha', 'registration', 'worker'];
