import type { StalePageWaits } from '../../config/services-schema';
import {
  CALL_OUTCOMES,
  CALL_VIAS,
  CachedHolder,
  CallSeries,
  CallVia,
  CANARY_HOLDER,
  CanaryRecord,
  emptyHistogram,
  HeldId,
  HolderProbeResult,
  observe,
  ProbeResult,
  ProbeVerdicts,
  ProbeVia,
  RetainedWorker,
  StaleCause,
  StalePageDecision,
  WitnessReleaseReason,
  WorkerHolder,
} from '../../snapshot/services';

// The bookkeeping of one watched service across cycles, free of I/O and of
// the clock (time comes in with each cycle) so the rules are unit-testable:
//  - a change is a provider set that differs from the previous cycle's;
//  - a cached id is stale when it is not among the live providers — never
//    merely because a random resolution picked another live provider;
//  - a stale canary is a WITNESS for the long-lived clients the exporter cannot
//    see, which hold the same kind of cached handle. It keeps its identity until
//    there is evidence that the condition is gone: its own client id is live
//    again, every configured holder reports a live id (and its probe through its
//    cached proxy works), an operator released it, or canary.witness_max passed.
//    Only then does it take this cycle's fresh resolution; repairing the
//    exporter's own handle is never reason enough, because that would "resolve"
//    a page while workers stay stuck.
//  - one exception, from evidence too: when the clients it stands for are all
//    BioEngine workers that re-resolve by themselves (0.16.30 or later, no
//    holders configured), the witness is self-healing and ends by itself once it
//    has been so for SELF_HEALING_WITNESS_SECONDS.

/**
 * How long a self-healing witness is kept (canary.self_healing_release by default). A worker from 0.16.30
 * re-resolves its artifact-manager proxy at its next call after the re-registration (that one call fails), so
 * nothing stays bound to the old id and the witness stands for no stuck client. It is not released at once:
 * 5 minutes is long enough for an operator to see the warning it raises (HyphaServiceCachedProxySelfHealing),
 * and for a flap to show again (a second re-registration, or an older worker appearing, resets the count).
 */
export const SELF_HEALING_WITNESS_SECONDS = 300;

/** A resolution: the full id "ws/client:svc" and its client id. */
export interface Resolved {
  fullId: string;
  clientId: string;
}

export type Canary = CanaryRecord;

export interface HolderReading {
  name: string;
  clientId?: string;
  error?: string;
}

/** What a configured holder can tell: its cached id, a probe through its cached proxy, or both. */
export interface HolderSpec {
  name: string;
  reportsId: boolean;
  /** Method of the holder probe, when one is configured. */
  probeMethod?: string;
}

export interface CanaryOptions {
  enabled: boolean;
  /** undefined = no time limit; 0 = no witness (deprecated reresolve_after: immediately). */
  witnessMaxMs?: number;
  /** Bare client ids an operator released. */
  releasedClientIds?: readonly string[];
  /** How long a self-healing witness is kept; undefined = SELF_HEALING_WITNESS_SECONDS. */
  selfHealingReleaseMs?: number;
}

/** What the registry said this cycle. */
export interface RegistryObservation {
  nowSeconds: number;
  /** Client ids of the live providers; undefined when they could not be listed. */
  providers?: readonly string[];
  resolved?: Resolved;
}

/** How this cycle's calls went. */
export interface CallsObservation {
  nowSeconds: number;
  probes: readonly ProbeResult[];
  /** Readings of the holders that report an id (probe-only holders have none). */
  holders: readonly HolderReading[];
  /** Holder probes that ran this cycle (a probe with an interval may skip cycles). */
  holderProbes?: readonly HolderProbeResult[];
  /** Every attempt of the fresh path when it tried more than one provider (all observed in the histogram). */
  freshAttempts?: readonly ProbeResult[];
}

export interface WitnessRelease {
  reason: WitnessReleaseReason;
  /** The witness's full id. */
  from: string;
  /** The new canary, unless the old id came back (then the canary stays). */
  to?: string;
}

export interface CycleEvents {
  /** The provider set changed: previous and current (sorted). */
  providersChanged?: { from: string[]; to: string[] };
  /** The canary's id left the live providers: it is the witness from now on. */
  canaryBecameStale?: boolean;
  witnessReleased?: WitnessRelease;
}

/** What a WatchState hands over when a reload restarts its source (see WatchState.handover). */
export interface WatchHandover {
  /** The last provider set that could be listed. */
  providers?: string[];
  changesTotal: number;
  lastChangeSeconds?: number;
  reresolvesTotal: number;
  releasesTotal: Partial<Record<WitnessReleaseReason, number>>;
  canary?: Canary;
  calls: CallSeries[];
  lastProbes: Partial<Record<ProbeVia, ProbeResult>>;
  holders: HeldId[];
  holderProbes: HolderProbeResult[];
  /** Start of the witness's current self-healing spell (absent in handovers of older versions: it starts again). */
  selfHealingSinceSeconds?: number;
  /** Per probe path, since when it has been probed and its last success (absent in older handovers: watched anew). */
  probeSpans?: Partial<Record<ProbeVia, ProbeSpan>>;
  /** The worker holders known (absent in older handovers: only the workers listed now). */
  workers?: RetainedWorker[];
}

/** How long a probe path has been watched (this process or its predecessor of a reload) and when it last succeeded. */
export interface ProbeSpan {
  firstSeconds: number;
  lastOkSeconds?: number;
}

function key(method: string, via: CallVia, outcome: string, holder = ''): string {
  return `${method}\u0000${via}\u0000${outcome}\u0000${holder}`;
}

interface HolderRecord {
  reading: HolderReading;
  sinceSeconds?: number;
  staleSinceSeconds?: number;
  pagedSeconds?: number;
}

/** Today's waits (the defaults of watched_services[].page_waits). */
export const DEFAULT_STALE_PAGE_WAITS: StalePageWaits = { provenMs: 0, uncertainMs: 120_000 };

/**
 * The page of one stale held id, decided on its spell: it fires once the id has been stale for its
 * cause's wait (at once when the cause is proven final) and then holds until the spell ends (the id is
 * live again, or the holder holds another), whatever the cause becomes. The canary of a self-healing
 * witness never pages (it warns), and does not start the count of a page either; a worker that is not
 * listed for a moment still counts as a holder (setWorkers), so a reconnect does not make a witness
 * self-healing.
 */
export function decideStalePage(
  staleSinceSeconds: number, pagedSeconds: number | undefined, cause: StaleCause, selfHealing: boolean, nowSeconds: number, waits: StalePageWaits,
): StalePageDecision & { pagedSeconds?: number } {
  const due = staleSinceSeconds + (cause === 'server_gone' ? waits.provenMs : waits.uncertainMs) / 1000;
  const paged = pagedSeconds ?? (!selfHealing && nowSeconds >= due ? nowSeconds : undefined);
  return { firing: !selfHealing && paged !== undefined, sinceSeconds: staleSinceSeconds, dueSeconds: paged ?? due, cause, selfHealing, pagedSeconds: paged };
}

export class WatchState {
  #providers: string[] | undefined;
  /** Providers of the latest cycle, undefined when that cycle could not list them. */
  #current: Set<string> | undefined;
  #changesTotal = 0;
  #lastChangeSeconds: number | undefined;
  #canary: Canary | undefined;
  #reresolvesTotal = 0;
  readonly #releases: Partial<Record<WitnessReleaseReason, number>> = {};
  #holders: HolderRecord[] = [];
  readonly #holderProbes = new Map<string, HolderProbeResult>();
  /** This cycle's fresh resolution: what a released witness is replaced by. */
  #cycleResolved: Resolved | undefined;
  readonly #calls = new Map<string, CallSeries>();
  readonly #lastProbes: Partial<Record<ProbeVia, ProbeResult>> = {};
  readonly #canaryOpts: CanaryOptions;
  /** The BioEngine workers that hold the service by default (none while holders are configured). */
  #workers: WorkerHolder[] = [];
  /** Since when each retained worker holder has been missing from listings that list others. */
  readonly #workerMissingSince = new Map<string, number>();
  /** Since when the witness has been self-healing without a break (its release is counted from here). */
  #selfHealingSince: number | undefined;
  #probeSpans: Partial<Record<ProbeVia, ProbeSpan>> = {};

  constructor(
    canary: CanaryOptions,
    probeMethod: string | undefined,
    private readonly holderSpecs: readonly HolderSpec[] = [],
    /** The replaced source's handover (a reload): counters, histograms and the witness go on. */
    handover?: WatchHandover,
    /** A witness saved before an exporter restart (--storage.path): the page must not end with the process. */
    restartWitness?: Canary,
    /** Stale holders saved before an exporter restart: their spells and pages go on. */
    restartHolders?: readonly HeldId[],
    /** The worker holders known before an exporter restart (saved with a stale witness). */
    restartWorkers?: readonly RetainedWorker[],
  ) {
    this.#canaryOpts = canary;
    // Zero series for the configured probes so rate() sees the first failure.
    const zero = (method: string, via: CallVia, holder?: string) => {
      for (const outcome of CALL_OUTCOMES) this.#calls.set(key(method, via, outcome, holder), { method, via, outcome, holder, histogram: emptyHistogram() });
    };
    if (probeMethod !== undefined) for (const via of CALL_VIAS) zero(probeMethod, via);
    for (const h of holderSpecs) if (h.probeMethod !== undefined) zero(h.probeMethod, 'holder', h.name);
    if (handover) this.#takeHandover(handover);
    else {
      if (restartWitness && canary.enabled) this.#canary = { ...restartWitness };
      this.#takeHolders(restartHolders ?? []);
      this.#takeWorkers(restartWorkers ?? []);
    }
  }

  /** Retained workers count until setWorkers judges them against the listings (configured holders win). */
  #takeWorkers(workers: readonly RetainedWorker[]): void {
    if (this.holderSpecs.length > 0) return;
    for (const { missingSinceSeconds, ...w } of workers) {
      this.#workers.push(w);
      if (missingSinceSeconds !== undefined) this.#workerMissingSince.set(w.holder, missingSinceSeconds);
    }
    this.#workers.sort((a, b) => a.holder.localeCompare(b.holder));
  }

  /** Holders a reload removed from the config are not taken over. */
  #takeHolders(held: readonly HeldId[]): void {
    const names = new Set(this.holderSpecs.map((h) => h.name));
    for (const h of held) {
      if (!names.has(h.name)) continue;
      this.#holders.push({
        reading: { name: h.name, clientId: h.clientId }, sinceSeconds: h.sinceSeconds, staleSinceSeconds: h.staleSinceSeconds, pagedSeconds: h.pagedSeconds,
      });
    }
  }

  #takeHandover(handover: WatchHandover): void {
    this.#providers = handover.providers;
    this.#changesTotal = handover.changesTotal;
    this.#lastChangeSeconds = handover.lastChangeSeconds;
    this.#reresolvesTotal = handover.reresolvesTotal;
    Object.assign(this.#releases, handover.releasesTotal);
    if (this.#canaryOpts.enabled && handover.canary) this.#canary = { ...handover.canary };
    for (const c of handover.calls) this.#calls.set(key(c.method, c.via, c.outcome, c.holder), c);
    Object.assign(this.#lastProbes, handover.lastProbes);
    this.#takeHolders(handover.holders);
    this.#takeWorkers(handover.workers ?? []);
    for (const p of handover.holderProbes) {
      const spec = this.holderSpecs.find((h) => h.name === p.holder);
      if (spec?.probeMethod === p.method) this.#holderProbes.set(p.holder, p);
    }
    if (this.#canary?.staleSinceSeconds !== undefined) this.#selfHealingSince = handover.selfHealingSinceSeconds;
    this.#probeSpans = { ...handover.probeSpans };
  }

  get canary(): Canary | undefined {
    return this.#canary;
  }

  /** Everything a successor takes over (see the constructor's handover). */
  handover(): WatchHandover {
    const holders: HeldId[] = [];
    for (const h of this.#holders) {
      const clientId = h.reading.clientId;
      if (clientId !== undefined) {
        holders.push({ name: h.reading.name, clientId, sinceSeconds: h.sinceSeconds, staleSinceSeconds: h.staleSinceSeconds, pagedSeconds: h.pagedSeconds });
      }
    }
    return {
      providers: this.#providers,
      changesTotal: this.#changesTotal,
      lastChangeSeconds: this.#lastChangeSeconds,
      reresolvesTotal: this.#reresolvesTotal,
      releasesTotal: this.releasesTotal,
      canary: this.#canary,
      calls: this.calls,
      lastProbes: this.lastProbes,
      holders,
      holderProbes: this.holderProbes,
      ...(this.#selfHealingSince !== undefined ? { selfHealingSinceSeconds: this.#selfHealingSince } : {}),
      probeSpans: { ...this.#probeSpans },
      workers: this.#workers.map((w) => {
        const missing = this.#workerMissingSince.get(w.holder);
        return missing !== undefined ? { ...w, missingSinceSeconds: missing } : { ...w };
      }),
    };
  }

  /**
   * The BioEngine workers that hold the service by default, with their recovery (the source passes none while
   * holders are configured: a configured list wins). A set that is not all self-healing ends the spell at once.
   * A worker that is no longer listed is not news at once: right after Hypha restarts, its registry lists the
   * workers one by one as each reconnects (a fixed one may be back before an older one that holds a stale proxy,
   * and a worker may take minutes), and a worker that is not listed still holds its proxy. So a worker missing
   * from listings that list others stays a holder for canary.self_healing_release (5 minutes), the time the
   * exporter also takes to believe a fleet healed; a listing with no worker at all (Hypha down or just back) is
   * no news (unknown never pages, and never un-pages). A worker gone for good (scaled down, restarted under a new
   * client id) then stops counting.
   */
  setWorkers(workers: readonly WorkerHolder[], nowSeconds: number): void {
    if (this.holderSpecs.length > 0) {
      this.#workers = [];
      this.#workerMissingSince.clear();
      return;
    }
    if (workers.length > 0) {
      const listed = new Set(workers.map((w) => w.holder));
      for (const h of listed) this.#workerMissingSince.delete(h);
      const kept = this.#workers.filter((w) => {
        if (listed.has(w.holder)) return false;
        const since = this.#workerMissingSince.get(w.holder) ?? nowSeconds;
        if ((nowSeconds - since) * 1000 >= this.#releaseBoundMs) {
          this.#workerMissingSince.delete(w.holder);
          return false;
        }
        this.#workerMissingSince.set(w.holder, since);
        return true;
      });
      this.#workers = [...workers, ...kept].sort((a, b) => a.holder.localeCompare(b.holder));
    }
    if (!this.witnessSelfHealing) this.#selfHealingSince = undefined;
  }

  get workers(): WorkerHolder[] {
    return [...this.#workers];
  }

  /**
   * The canary is the witness and every holder the exporter knows re-resolves by itself: at least one worker
   * holder, all self_healing, and no configured holder (the exporter cannot tell how those recover). An older
   * or unknown worker among them keeps the witness as it is.
   */
  get witnessSelfHealing(): boolean {
    return this.#canary?.staleSinceSeconds !== undefined && this.holderSpecs.length === 0 && this.#workers.length > 0
      && this.#workers.every((w) => w.recovery === 'self_healing');
  }

  /** canary.self_healing_release: how long the holders must heal before the witness ends, and a worker not listed still counts. */
  get #releaseBoundMs(): number {
    return this.#canaryOpts.selfHealingReleaseMs ?? SELF_HEALING_WITNESS_SECONDS * 1000;
  }

  /** Takes the first resolution as the canary ("resolved at start", as a worker does). */
  adoptCanaryIfNone(resolved: Resolved | undefined, nowSeconds: number): boolean {
    if (!this.#canaryOpts.enabled || this.#canary || !resolved) return false;
    this.#canary = { ...resolved, sinceSeconds: nowSeconds };
    return true;
  }

  /**
   * Applies the provider listing and the fresh resolution: change detection,
   * stale state of every held id, and the witness rules that need no calls.
   * Runs before the probe calls so a stale id is published without waiting
   * for a timeout.
   */
  applyRegistry(o: RegistryObservation): CycleEvents {
    const ev: CycleEvents = {};
    const now = o.nowSeconds;
    this.#current = undefined;
    this.#cycleResolved = o.resolved;
    if (o.providers) {
      const sorted = [...new Set(o.providers)].sort();
      this.#current = new Set(sorted);
      if (this.#providers && !sameList(this.#providers, sorted)) {
        this.#changesTotal += 1;
        this.#lastChangeSeconds = now;
        ev.providersChanged = { from: this.#providers, to: sorted };
      }
      this.#providers = sorted;
    }
    const c = this.#canary;
    if (c) {
      const stale = this.#isStale(c.clientId);
      if (stale === true && c.staleSinceSeconds === undefined) {
        this.#canary = { ...c, staleSinceSeconds: now };
        ev.canaryBecameStale = true;
      } else if (stale === false && c.staleSinceSeconds !== undefined) {
        // The old id is live again (e.g. a fixed server id came back): the condition itself is gone.
        this.#canary = { ...c, staleSinceSeconds: undefined, pagedSeconds: undefined };
        this.#count('returned');
        ev.witnessReleased = { reason: 'returned', from: c.fullId };
      }
      const w = this.#canary;
      if (stale === true && w?.staleSinceSeconds !== undefined) {
        const max = this.#canaryOpts.witnessMaxMs;
        const selfHealing = this.witnessSelfHealing;
        if (selfHealing) this.#selfHealingSince ??= now;
        const healedFor = this.#selfHealingSince === undefined ? undefined : now - this.#selfHealingSince;
        const bound = this.#releaseBoundMs;
        if (this.#canaryOpts.releasedClientIds?.includes(w.clientId)) this.#release('operator', now, ev);
        else if (selfHealing && healedFor !== undefined && healedFor * 1000 >= bound) this.#release('self_healing', now, ev);
        else if (max !== undefined && (now - w.staleSinceSeconds) * 1000 >= max) this.#release('max_age', now, ev);
      }
      // Not the witness any more (its id returned): a later one starts its own spell.
      if (this.#canary?.staleSinceSeconds === undefined) this.#selfHealingSince = undefined;
    }
    for (const h of this.#holders) this.#updateHolderStale(h, now);
    return ev;
  }

  /** Records probe results and what holders reported this cycle; ends the witness when every holder agrees. */
  applyCalls(o: CallsObservation): CycleEvents {
    const now = o.nowSeconds;
    const record = (method: string, via: CallVia, outcome: string, seconds: number, holder?: string) => {
      const k = key(method, via, outcome, holder);
      const cur = this.#calls.get(k) ?? { method, via, outcome: outcome as CallSeries['outcome'], holder, histogram: emptyHistogram() };
      this.#calls.set(k, { ...cur, histogram: observe(cur.histogram, seconds) });
    };
    for (const p of o.probes) {
      // Every provider the fresh path tried is a real call; the probe result is the path's verdict.
      if (!(p.via === 'fresh' && o.freshAttempts && o.freshAttempts.length > 0)) record(p.method, p.via, p.outcome, p.seconds);
      this.#lastProbes[p.via] = p;
      const span = this.#probeSpans[p.via] ?? { firstSeconds: p.atSeconds };
      this.#probeSpans[p.via] = p.outcome === 'ok' ? { ...span, lastOkSeconds: p.atSeconds } : span;
    }
    for (const a of o.freshAttempts ?? []) record(a.method, 'fresh', a.outcome, a.seconds);
    for (const hp of o.holderProbes ?? []) {
      record(hp.method, 'holder', hp.outcome, hp.seconds, hp.holder);
      this.#holderProbes.set(hp.holder, hp);
    }
    this.#holders = o.holders.map((reading) => {
      const prev = this.#holders.find((h) => h.reading.name === reading.name);
      const rec: HolderRecord = { reading };
      if (reading.clientId !== undefined) {
        const same = prev?.reading.clientId === reading.clientId;
        rec.sinceSeconds = same ? prev?.sinceSeconds : now;
        rec.staleSinceSeconds = same ? prev?.staleSinceSeconds : undefined;
        rec.pagedSeconds = same ? prev?.pagedSeconds : undefined;
        this.#updateHolderStale(rec, now);
      }
      return rec;
    });
    const ev: CycleEvents = {};
    const w = this.#canary;
    if (w?.staleSinceSeconds !== undefined && this.#isStale(w.clientId) === true && this.#holdersAgree(w.staleSinceSeconds)) {
      this.#release('holders_agree', now, ev);
    }
    return ev;
  }

  /**
   * Every configured holder has recovered: each reports a cached id among the
   * live providers this cycle, and each holder probe succeeded after the witness
   * began. Without holders there is no such evidence, so the witness stays.
   */
  #holdersAgree(witnessSince: number): boolean {
    if (this.holderSpecs.length === 0) return false;
    return this.holderSpecs.every((spec) => {
      if (spec.reportsId) {
        const r = this.#holders.find((h) => h.reading.name === spec.name)?.reading;
        if (r?.clientId === undefined || this.#isStale(r.clientId) !== false) return false;
      }
      if (spec.probeMethod !== undefined) {
        const p = this.#holderProbes.get(spec.name);
        if (!p || p.outcome !== 'ok' || p.atSeconds < witnessSince) return false;
      }
      return true;
    });
  }

  /** Ends the witness: the canary takes this cycle's fresh resolution (kept if there is none yet). */
  #release(reason: WitnessReleaseReason, now: number, ev: CycleEvents): void {
    const w = this.#canary;
    const next = this.#cycleResolved;
    if (!w || !next) return;
    this.#count(reason);
    this.#reresolvesTotal += 1;
    this.#selfHealingSince = undefined;
    ev.witnessReleased = { reason, from: w.fullId, to: next.fullId };
    const c: Canary = { ...next, sinceSeconds: now };
    // The fresh resolution may itself not be listed (a race): judged like any id, it starts a new witness.
    if (this.#isStale(c.clientId) === true) c.staleSinceSeconds = now;
    this.#canary = c;
  }

  #count(reason: WitnessReleaseReason): void {
    this.#releases[reason] = (this.#releases[reason] ?? 0) + 1;
  }

  #updateHolderStale(h: HolderRecord, now: number): void {
    if (h.reading.clientId === undefined) return;
    const stale = this.#isStale(h.reading.clientId);
    if (stale === true && h.staleSinceSeconds === undefined) h.staleSinceSeconds = now;
    if (stale === false) {
      h.staleSinceSeconds = undefined;
      h.pagedSeconds = undefined;
    }
  }

  /** Stale = not among the live providers; undefined when this cycle has no provider list. */
  #isStale(clientId: string): boolean | undefined {
    return this.#current ? !this.#current.has(clientId) : undefined;
  }

  get providers(): string[] | undefined {
    return this.#current ? this.#providers : undefined;
  }

  /** The canary first (when there is one), then the id-reporting holders in config order. */
  get cached(): CachedHolder[] {
    const out: CachedHolder[] = [];
    const c = this.#canary;
    if (c) {
      out.push({
        holder: CANARY_HOLDER, clientId: c.clientId, stale: this.#isStale(c.clientId), staleSinceSeconds: c.staleSinceSeconds, sinceSeconds: c.sinceSeconds,
      });
    }
    for (const h of this.#holders) {
      if (h.reading.clientId === undefined) {
        out.push({ holder: h.reading.name, error: h.reading.error });
        continue;
      }
      out.push({
        holder: h.reading.name,
        clientId: h.reading.clientId,
        stale: this.#isStale(h.reading.clientId),
        staleSinceSeconds: h.staleSinceSeconds,
        sinceSeconds: h.sinceSeconds,
      });
    }
    return out;
  }

  /**
   * The held ids as the snapshot shows them, judged: each stale one with its proof (the id is a server id the
   * Hypha server replaced: `replaced`) and its page decision, which marks when the page first held.
   */
  judge(nowSeconds: number, waits: StalePageWaits, replaced: (clientId: string) => boolean): CachedHolder[] {
    const selfHealing = this.witnessSelfHealing;
    return this.cached.map((c) => {
      if (c.stale === undefined || c.clientId === undefined) return c;
      const serverGone = c.stale && replaced(c.clientId);
      if (!c.stale || c.staleSinceSeconds === undefined) return { ...c, serverGone };
      const canary = c.holder === CANARY_HOLDER ? this.#canary : undefined;
      const rec = canary ? undefined : this.#holders.find((h) => h.reading.name === c.holder);
      const { pagedSeconds, ...page } = decideStalePage(
        c.staleSinceSeconds, canary ? canary.pagedSeconds : rec?.pagedSeconds, serverGone ? 'server_gone' : 'not_listed',
        selfHealing && canary !== undefined, nowSeconds, waits,
      );
      if (canary) this.#canary = { ...canary, pagedSeconds };
      else if (rec) rec.pagedSeconds = pagedSeconds;
      return { ...c, serverGone, page };
    });
  }


  /** The probe pages at `nowSeconds` over a window of `windowMs` (see ProbeVerdicts). */
  probeVerdicts(nowSeconds: number, windowMs: number): ProbeVerdicts {
    const w = windowMs / 1000;
    const spans = Object.values(this.#probeSpans);
    const watched = (s: ProbeSpan | undefined) => s !== undefined && nowSeconds - s.firstSeconds >= w;
    const okWithin = (s: ProbeSpan | undefined) => s?.lastOkSeconds !== undefined && nowSeconds - s.lastOkSeconds <= w;
    const { cached, fresh } = this.#probeSpans;
    const out: ProbeVerdicts = {};
    if (watched(cached)) out.cachedFailing = !okWithin(cached) && okWithin(fresh) && !this.witnessSelfHealing;
    if (spans.some(watched)) out.allFailing = !spans.some(okWithin);
    return out;
  }

  get changesTotal(): number {
    return this.#changesTotal;
  }

  get lastChangeSeconds(): number | undefined {
    return this.#lastChangeSeconds;
  }

  get reresolvesTotal(): number {
    return this.#reresolvesTotal;
  }

  get releasesTotal(): Partial<Record<WitnessReleaseReason, number>> {
    return { ...this.#releases };
  }

  get calls(): CallSeries[] {
    return [...this.#calls.values()];
  }

  get lastProbes(): Partial<Record<ProbeVia, ProbeResult>> {
    return { ...this.#lastProbes };
  }

  /** Last probe per holder, in config order. */
  get holderProbes(): HolderProbeResult[] {
    const out: HolderProbeResult[] = [];
    for (const h of this.holderSpecs) {
      const p = this.#holderProbes.get(h.name);
      if (p) out.push(p);
    }
    return out;
  }

  /** When the holder's probe last ran (for probes with an interval). */
  holderProbeAt(name: string): number | undefined {
    return this.#holderProbes.get(name)?.atSeconds;
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
