import type { CanaryPolicy } from '../../config/services-schema';
import {
  CALL_OUTCOMES,
  CALL_VIAS,
  CachedHolder,
  CallSeries,
  CallVia,
  CANARY_HOLDER,
  emptyHistogram,
  observe,
  ProbeResult,
} from '../../snapshot/services';

// The bookkeeping of one watched service across cycles, free of I/O and of
// the clock (time comes in with each cycle) so the rules are unit-testable:
//  - a change is a provider set that differs from the previous cycle's;
//  - a cached id is stale when it is not among the live providers — never
//    merely because a random resolution picked another live provider;
//  - the canary is kept while stale for as long as the policy says, then it
//    takes this cycle's fresh resolution and the re-resolve is counted.

/** A resolution: the full id "ws/client:svc" and its client id. */
export interface Resolved {
  fullId: string;
  clientId: string;
}

export interface Canary extends Resolved {
  sinceSeconds: number;
  staleSinceSeconds?: number;
}

export interface HolderReading {
  name: string;
  clientId?: string;
  error?: string;
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
  holders: readonly HolderReading[];
}

export interface CycleEvents {
  /** The provider set changed: previous and current (sorted). */
  providersChanged?: { from: string[]; to: string[] };
  canaryBecameStale?: boolean;
  /** The canary was replaced by the fresh resolution. */
  canaryReresolved?: { from: string; to: string };
}

function key(method: string, via: CallVia, outcome: string): string {
  return `${method}\u0000${via}\u0000${outcome}`;
}

interface HolderRecord {
  reading: HolderReading;
  sinceSeconds?: number;
  staleSinceSeconds?: number;
}

export class WatchState {
  #providers: string[] | undefined;
  /** Providers of the latest cycle, undefined when that cycle could not list them. */
  #current: Set<string> | undefined;
  #changesTotal = 0;
  #lastChangeSeconds: number | undefined;
  #canary: Canary | undefined;
  #reresolvesTotal = 0;
  #holders: HolderRecord[] = [];
  readonly #calls = new Map<string, CallSeries>();
  readonly #lastProbes: Partial<Record<CallVia, ProbeResult>> = {};

  constructor(
    private readonly canaryEnabled: boolean,
    private readonly policy: CanaryPolicy,
    probeMethod: string | undefined,
  ) {
    // Zero series for the configured probe so rate() sees the first failure.
    if (probeMethod !== undefined) {
      for (const via of CALL_VIAS) {
        for (const outcome of CALL_OUTCOMES) this.#calls.set(key(probeMethod, via, outcome), { method: probeMethod, via, outcome, histogram: emptyHistogram() });
      }
    }
  }

  get canary(): Canary | undefined {
    return this.#canary;
  }

  /** Takes the first resolution as the canary ("resolved at start", as a worker does). */
  adoptCanaryIfNone(resolved: Resolved | undefined, nowSeconds: number): boolean {
    if (!this.canaryEnabled || this.#canary || !resolved) return false;
    this.#canary = { ...resolved, sinceSeconds: nowSeconds };
    return true;
  }

  /**
   * Applies the provider listing and the fresh resolution: change detection,
   * stale state of every held id, and the canary re-resolve policy. Runs before
   * the probe calls so a stale id is published without waiting for a timeout.
   */
  applyRegistry(o: RegistryObservation): CycleEvents {
    const ev: CycleEvents = {};
    const now = o.nowSeconds;
    this.#current = undefined;
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
    if (this.#canary) {
      let c: Canary = this.#canary;
      const stale = this.#isStale(c.clientId);
      if (stale === true && c.staleSinceSeconds === undefined) {
        c = { ...c, staleSinceSeconds: now };
        ev.canaryBecameStale = true;
      } else if (stale === false && c.staleSinceSeconds !== undefined) {
        c = { ...c, staleSinceSeconds: undefined };
      }
      if (stale === true && o.resolved && this.#shouldReresolve(c, now)) {
        ev.canaryReresolved = { from: c.fullId, to: o.resolved.fullId };
        this.#reresolvesTotal += 1;
        c = { ...o.resolved, sinceSeconds: now };
        // The fresh resolution may itself not be listed (a race); judge it like any id.
        if (this.#isStale(c.clientId) === true) c.staleSinceSeconds = now;
      }
      this.#canary = c;
    }
    for (const h of this.#holders) this.#updateHolderStale(h, now);
    return ev;
  }

  /** Records probe results and the ids holders reported this cycle. */
  applyCalls(o: CallsObservation): void {
    const now = o.nowSeconds;
    for (const p of o.probes) {
      const k = key(p.method, p.via, p.outcome);
      const cur = this.#calls.get(k) ?? { method: p.method, via: p.via, outcome: p.outcome, histogram: emptyHistogram() };
      this.#calls.set(k, { ...cur, histogram: observe(cur.histogram, p.seconds) });
      this.#lastProbes[p.via] = p;
    }
    this.#holders = o.holders.map((reading) => {
      const prev = this.#holders.find((h) => h.reading.name === reading.name);
      const rec: HolderRecord = { reading };
      if (reading.clientId !== undefined) {
        const same = prev?.reading.clientId === reading.clientId;
        rec.sinceSeconds = same ? prev?.sinceSeconds : now;
        rec.staleSinceSeconds = same ? prev?.staleSinceSeconds : undefined;
        this.#updateHolderStale(rec, now);
      }
      return rec;
    });
  }

  #updateHolderStale(h: HolderRecord, now: number): void {
    if (h.reading.clientId === undefined) return;
    const stale = this.#isStale(h.reading.clientId);
    if (stale === true && h.staleSinceSeconds === undefined) h.staleSinceSeconds = now;
    if (stale === false) h.staleSinceSeconds = undefined;
  }

  /** Stale = not among the live providers; undefined when this cycle has no provider list. */
  #isStale(clientId: string): boolean | undefined {
    return this.#current ? !this.#current.has(clientId) : undefined;
  }

  #shouldReresolve(c: Canary, now: number): boolean {
    switch (this.policy.kind) {
      case 'never': return false;
      case 'immediately': return true;
      case 'after': return c.staleSinceSeconds !== undefined && (now - c.staleSinceSeconds) * 1000 >= this.policy.staleMs;
    }
  }

  get providers(): string[] | undefined {
    return this.#current ? this.#providers : undefined;
  }

  /** The canary first (when there is one), then the holders in config order. */
  get cached(): CachedHolder[] {
    const out: CachedHolder[] = [];
    const c = this.#canary;
    if (c) {
      out.push({ holder: CANARY_HOLDER, clientId: c.clientId, stale: this.#isStale(c.clientId), staleSinceSeconds: c.staleSinceSeconds, sinceSeconds: c.sinceSeconds });
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

  get changesTotal(): number {
    return this.#changesTotal;
  }

  get lastChangeSeconds(): number | undefined {
    return this.#lastChangeSeconds;
  }

  get reresolvesTotal(): number {
    return this.#reresolvesTotal;
  }

  get calls(): CallSeries[] {
    return [...this.#calls.values()];
  }

  get lastProbes(): Partial<Record<CallVia, ProbeResult>> {
    return { ...this.#lastProbes };
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
