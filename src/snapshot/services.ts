import type { SourceHealth } from './health';

// Snapshot part of the watched-services source (docs/watched-services.md): per configured
// service, who provides it now, which client id a fresh resolution gives,
// which client ids long-lived holders (the exporter's own canary, workers)
// still address, and how probe calls through both kinds of proxy fare.

/** How a probe call ended. Closed set: it is a label value. */
export type CallOutcome = 'ok' | 'timeout' | 'not_found' | 'never_sent' | 'error';
export const CALL_OUTCOMES: readonly CallOutcome[] = ['ok', 'timeout', 'not_found', 'never_sent', 'error'];

/** cached = the proxy resolved once and kept; fresh = resolved on the current connection this cycle. */
export type ProbeVia = 'cached' | 'fresh';
export const CALL_VIAS: readonly ProbeVia[] = ['cached', 'fresh'];
/** Histogram `via`: the two probe paths, plus `holder` = a call to a holder that goes through ITS cached proxy. */
export type CallVia = ProbeVia | 'holder';

/** Why a witness (stale canary) ended. Closed set: it is a label value. */
export type WitnessReleaseReason = 'returned' | 'holders_agree' | 'max_age' | 'operator' | 'self_healing';
export const WITNESS_RELEASE_REASONS: readonly WitnessReleaseReason[] = ['returned', 'holders_agree', 'max_age', 'operator', 'self_healing'];

/**
 * How a holder recovers from a re-registered service by itself (a label value): `self_healing` = a BioEngine
 * worker from 0.16.30 whose cached artifact-manager proxy re-resolves after one failed call; `stays_stale` = a
 * worker up to 0.16.2, whose plain cached proxy stays bound to the old id until it restarts; `unknown` = any
 * other version (not reported, not pinned, unparseable) or a service the worker's wrapper does not cover.
 */
export type HolderRecovery = 'self_healing' | 'stays_stale' | 'unknown';
export const HOLDER_RECOVERIES: readonly HolderRecovery[] = ['self_healing', 'stays_stale', 'unknown'];

/** A BioEngine worker that holds the watched service's proxy by default (no configured holders): one the Hypha source discovered. */
export interface WorkerHolder {
  /** The worker's client id (the `holder` label). */
  holder: string;
  /** Its last known bioengine_version; undefined when it never reported one. */
  version?: string;
  recovery: HolderRecovery;
}

/**
 * A worker holder as a successor takes it over (a reload's handover, the state file across a restart): a
 * fresh process that has not listed the workers yet, or lists them while they reconnect one by one after a
 * Hypha restart, must judge the witness by the same holders as its predecessor.
 */
export interface RetainedWorker extends WorkerHolder {
  /** Since when it has been missing from listings that list other workers (absent: listed last time). */
  missingSinceSeconds?: number;
}

/** Holder label of the exporter's own long-lived proxy. */
export const CANARY_HOLDER = 'exporter';

/**
 * Upper bounds (seconds) of hypha_serve_service_call_duration_seconds. From
 * 1 ms (a healthy local call) to beyond any sensible probe timeout, with
 * resolution around the 5 s default so "hit the deadline" is its own bucket.
 */
export const CALL_DURATION_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 4, 5, 6, 10, 15, 30, 60,
];

/** Histogram data accumulated since the source started. */
export interface DurationHistogram {
  /** One count per bucket of CALL_DURATION_BUCKETS (observations in (prev, bound]); +Inf is count minus their sum. */
  counts: number[];
  sum: number;
  count: number;
}

export interface CallSeries {
  method: string;
  via: CallVia;
  /** Holder name, for via="holder" only. */
  holder?: string;
  outcome: CallOutcome;
  histogram: DurationHistogram;
}

/** The last probe through one kind of proxy. */
export interface ProbeResult {
  via: ProbeVia;
  method: string;
  outcome: CallOutcome;
  seconds: number;
  /** Full id the call was addressed to ("ws/client:svc"), when there was one. */
  target?: string;
  /** Concise, secret-free error text (status page, logs, tests). */
  error?: string;
  atSeconds: number;
  /** Fresh path only: providers tried this cycle (1 = the first resolution answered). */
  attempts?: number;
}

/** The last probe of a holder: a call to the holder that goes through its cached proxy of the service. */
export interface HolderProbeResult {
  holder: string;
  method: string;
  outcome: CallOutcome;
  seconds: number;
  error?: string;
  atSeconds: number;
}

/** The exporter's own long-lived proxy (what a restarted source continues, and the state file keeps while stale). */
export interface CanaryRecord {
  fullId: string;
  clientId: string;
  sinceSeconds: number;
  /** Set while the canary is the witness: since when its id has not been among the live providers. */
  staleSinceSeconds?: number;
  /** When HyphaServiceCachedProxyStale first held for it in the current stale spell (it holds until the spell ends). */
  pagedSeconds?: number;
}

/**
 * A configured holder's last reading that named an id, with its stale spell and page (what a reload
 * hands over, and a restart continues while it is stale).
 */
export interface HeldId {
  name: string;
  clientId: string;
  sinceSeconds?: number;
  staleSinceSeconds?: number;
  pagedSeconds?: number;
}

/**
 * Why a held id is stale (the `cause` of hypha_serve_service_cached_stale_cause_info). Closed set:
 * `server_gone` = proven final: the id is a Hypha server id that the server replaced when it came back
 * under another id (built-in services are provided by client `<server_id>`, hypha store.py), so it never
 * returns; `not_listed` = not among the live providers, and nothing proves it will not come back.
 */
export type StaleCause = 'server_gone' | 'not_listed';
export const STALE_CAUSE_TEXT: Record<StaleCause, string> = {
  server_gone: 'the cached id is a Hypha server id the server replaced when it came back under another id so it never returns',
  not_listed: 'the cached id is not among the live providers of the service and nothing proves it will not come back',
};

/**
 * The probe pages, decided over the probe window: undefined while the exporter has not watched the paths
 * for a whole window since it started (a restart knows nothing of the window before it: unknown, never a
 * page nor its end; the rules' gap bridge covers it).
 */
export interface ProbeVerdicts {
  /** HyphaServiceCachedProbeFailing: no cached-path success within the window while a fresh one succeeded (never for a self-healing witness). */
  cachedFailing?: boolean;
  /** HyphaServiceProbeFailing: no success on any path within the window. */
  allFailing?: boolean;
}

/** The exporter's decision on HyphaServiceCachedProxyStale for one held id. */
export interface StalePageDecision {
  firing: boolean;
  /** Start of the stale spell (Unix seconds). */
  sinceSeconds: number;
  /** When the page fires (or fired): the spell's start plus the cause's wait (watched_services[].page_waits). */
  dueSeconds: number;
  cause: StaleCause;
  /** The canary of a self-healing witness: a warning (HyphaServiceCachedProxySelfHealing), never this page. */
  selfHealing: boolean;
}

/** A client id some long-lived client keeps for the service. */
export interface CachedHolder {
  /** "exporter" for the canary, else the configured holder name. */
  holder: string;
  /** Bare client id; undefined when the holder could not be read this cycle (series absent). */
  clientId?: string;
  /** Not among the live providers; undefined when the providers are unknown this cycle. */
  stale?: boolean;
  /** Since when the current stale spell lasts (Unix seconds). */
  staleSinceSeconds?: number;
  /** When the held id was obtained (canary: resolved; holder: last read). */
  sinceSeconds?: number;
  /** Why the holder could not be read (holders only). */
  error?: string;
  /**
   * Stale, and the cached id is a Hypha server id that the server replaced (it came back under
   * another id): built-in services are provided by client `<server_id>`, so that id never returns.
   * undefined when staleness is unknown.
   */
  serverGone?: boolean;
  /** The page decision while stale (undefined while not stale or unknown). */
  page?: StalePageDecision;
}

export interface WatchedServiceSample {
  /** Configured id, e.g. "public/artifact-manager"; the `service` label. */
  service: string;
  health: SourceHealth;
  /** Client ids of the live providers, sorted; undefined when the listing failed this cycle. */
  providers?: string[];
  /** Client id a fresh getServiceInfo gave this cycle; undefined when resolution failed or was not attempted. */
  resolvedClientId?: string;
  resolveError?: string;
  /** The canary first (when enabled), then configured holders in config order. */
  cached: CachedHolder[];
  /** Cumulative: the provider set differed from the previous cycle's. */
  clientIdChangesTotal: number;
  lastChangeSeconds?: number;
  /** Cumulative: the canary was dropped and resolved anew under the re-resolve policy. */
  canaryReresolvesTotal: number;
  /** Cumulative per (method, via, outcome). */
  calls: CallSeries[];
  /** Last probe per via (absent: not probed yet, or no canary to probe through). */
  lastProbes: Partial<Record<ProbeVia, ProbeResult>>;
  // The fields below are optional so that samples built by hand (tests, older code) stay valid.
  /** Configured holders: 0 means the exporter sees no real client and its canary is the only witness. */
  holdersConfigured?: number;
  /** canary.witness_max in seconds; undefined = no time limit. */
  witnessMaxSeconds?: number;
  /** Cumulative witness endings by reason. */
  witnessReleasesTotal?: Partial<Record<WitnessReleaseReason, number>>;
  /** Last probe per holder that has one (exported only while up). */
  holderProbes?: HolderProbeResult[];
  /**
   * The BioEngine workers the Hypha source of the service's server discovered, when no holder is configured
   * (a configured list wins): the long-lived clients the canary stands in for, by holder (client id).
   */
  workerHolders?: WorkerHolder[];
  /**
   * The canary is the witness (stale) and every holder the exporter knows is self-healing (at least one worker
   * holder, no configured holder): the witness is a warning, not a page, and ends by itself after
   * selfHealingReleaseSeconds. undefined while there is no canary (disabled).
   */
  witnessSelfHealing?: boolean;
  /** How long a self-healing witness is kept (canary.self_healing_release, default 5 minutes). */
  selfHealingReleaseSeconds?: number;
  /** The probe pages over watched_services[].probe_window; empty while the source is down. */
  probeVerdicts?: ProbeVerdicts;
}

export function emptyHistogram(): DurationHistogram {
  return { counts: CALL_DURATION_BUCKETS.map(() => 0), sum: 0, count: 0 };
}

/** A new histogram with one more observation (snapshots are never mutated in place). */
export function observe(h: DurationHistogram, seconds: number): DurationHistogram {
  const counts = [...h.counts];
  const i = CALL_DURATION_BUCKETS.findIndex((b) => seconds <= b);
  if (i >= 0) counts[i] += 1;
  return { counts, sum: h.sum + seconds, count: h.count + 1 };
}
