import type { Severity, TransitionV1 } from './model';
import { registrationInput } from './registration-view';
import { appStatusSeverity, registrationSeverity } from './severity';
import type { SnapshotStore } from '../snapshot/store';
import type { Snapshot, SourceHealth } from '../snapshot/types';
import { sourceHealths } from '../snapshot/types';

// The snapshot's history: consecutive snapshots diffed into the state changes the status page and
// /api/v1/status list. It lives beside the store because it is fed by every change of it; the page
// only reads its ring.

export const DEFAULT_TRANSITIONS_CAPACITY = 200;

type NewTransition = Omit<TransitionV1, 'seq' | 'at'>;

/** What the recorder remembers of the previous snapshot: only the fields whose changes it logs. */
interface Seen {
  /** key "source/target" → up; undefined until the source finished its first attempt. */
  sources: Map<string, boolean>;
  /** cluster → app → status and its deployments at zero; kept while the source is down. */
  apps: Map<string, Map<string, SeenApp>>;
  /** service → last known providers, fresh resolution and cached id per holder (unknown values keep the last known). */
  services: Map<string, { providers?: string; resolved?: string; cached: Map<string, { id?: string; stale?: boolean }> }>;
  /** "cluster\0app" → last known registration state and client id ("unknown" is not remembered). */
  registrations: Map<string, { state?: string; clientId?: string }>;
}

interface SeenApp {
  status: string;
  zero: Set<string>;
  /** The app object these were read from: the Ray source keeps an unchanged app's object, so it is not read again. */
  from: unknown;
}

/**
 * Keeps the last N state changes by diffing consecutive snapshots. Sources
 * publish on every cycle whether or not anything moved, so only real changes
 * of the watched fields are recorded; a source going down hides its apps
 * without recording them as removed.
 */
export class TransitionRecorder {
  readonly capacity: number;
  readonly #ring: TransitionV1[] = [];
  #next = 0;
  #seq = 0;
  readonly #seen: Seen = { sources: new Map(), apps: new Map(), services: new Map(), registrations: new Map() };
  /**
   * What the last diffs read, by identity: each diff is idempotent on the same input, and the store
   * replaces only the part a writer changed (a Ray sample leaves the registration part as it was), so a
   * part whose objects did not move is not walked again. At thousands of apps every store change
   * (four per cycle: Ray, Hypha, the stage after each) walked every app twice.
   */
  readonly #read: {
    rayStates: Map<string, unknown>;
    services?: Snapshot['services'];
    registration?: Snapshot['registration'];
    /** The up flags of the sources registrationInput() reads, with the registration part they were read for. */
    registrationUp?: string;
  } = { rayStates: new Map() };
  readonly #now: () => number;
  readonly #unsubscribe: () => void;

  constructor(store: SnapshotStore, opts: { capacity?: number; now?: () => number } = {}) {
    this.capacity = Math.max(1, opts.capacity ?? DEFAULT_TRANSITIONS_CAPACITY);
    this.#now = opts.now ?? (() => Date.now() / 1000);
    this.#observe(store.get());
    this.#unsubscribe = store.onChange((s) => this.#observe(s));
  }

  /** Newest first. */
  list(): TransitionV1[] {
    const n = this.#ring.length;
    const out: TransitionV1[] = [];
    for (let i = 1; i <= n; i++) out.push(this.#ring[(this.#next - i + n) % n]);
    return out;
  }

  stop(): void {
    this.#unsubscribe();
  }

  #push(t: NewTransition, at: number): void {
    const entry: TransitionV1 = { seq: ++this.#seq, at, ...t };
    if (this.#ring.length < this.capacity) {
      this.#ring.push(entry);
      this.#next = this.#ring.length % this.capacity;
    } else {
      this.#ring[this.#next] = entry;
      this.#next = (this.#next + 1) % this.capacity;
    }
  }

  #observe(s: Snapshot): void {
    const at = this.#now();
    const out: NewTransition[] = [];
    this.#diffSources(s, out);
    this.#diffRay(s, out);
    this.#diffServices(s, out);
    this.#diffRegistrations(s, out);
    for (const t of out) this.#push(t, at);
  }

  #diffSources(s: Snapshot, out: NewTransition[]): void {
    const present = new Set<string>();
    for (const h of sourceHealths(s)) {
      const key = `${h.source}/${h.target}`;
      present.add(key);
      // Before its first attempt a source reads as down; that is not a transition.
      if (!attempted(h)) continue;
      const before = this.#seen.sources.get(key);
      if (before === h.up) continue;
      this.#seen.sources.set(key, h.up);
      out.push({
        kind: 'source',
        severity: h.up ? 'ok' : 'critical',
        subject: key,
        from: before === undefined ? null : before ? 'up' : 'down',
        to: h.up ? 'up' : 'down',
        ...(h.up ? {} : h.lastError ? { detail: h.lastError } : {}),
        source: h.source,
        target: h.target,
        ...(h.source === 'ray' ? { cluster: h.target } : {}),
      });
    }
    for (const key of [...this.#seen.sources.keys()]) {
      if (present.has(key)) continue;
      const [source, ...rest] = key.split('/');
      out.push({
        kind: 'source', severity: 'unknown', subject: key, from: this.#seen.sources.get(key) ? 'up' : 'down', to: null,
        detail: 'removed from the configuration', source, target: rest.join('/'),
      });
      this.#seen.sources.delete(key);
    }
  }

  #diffRay(s: Snapshot, out: NewTransition[]): void {
    for (const [cluster, sample] of s.ray) {
      // Source down: apps are unknown, not gone; keep what was seen.
      if (!sample.state) continue;
      // The state this cluster's apps were last diffed from (a change of health alone keeps it).
      if (this.#read.rayStates.get(cluster) === sample.state) continue;
      this.#read.rayStates.set(cluster, sample.state);
      const before = this.#seen.apps.get(cluster);
      const now = new Map<string, SeenApp>();
      for (const app of sample.state.apps) {
        const prev = before?.get(app.name);
        if (prev !== undefined && prev.from === app) {
          now.set(app.name, prev);
          continue;
        }
        const zero = new Set(app.deployments.filter((d) => d.scaledToZero).map((d) => d.name));
        now.set(app.name, { status: app.status, zero, from: app });
        const subject = `${cluster}/${app.name}`;
        const base = { subject, cluster, app: app.name };
        // The first sample of a cluster lists what exists; "added" would be noise.
        if (!before) continue;
        if (!prev) {
          out.push({ kind: 'app_added', severity: appStatusSeverity(app.status), from: null, to: app.status, ...base });
          continue;
        }
        if (prev.status !== app.status) {
          out.push({ kind: 'app_status', severity: appStatusSeverity(app.status), from: prev.status, to: app.status, ...base });
        }
        for (const d of zero) {
          if (!prev.zero.has(d)) {
            out.push({ kind: 'scaled_to_zero', severity: 'ok', from: 'running', to: 'scaled to zero', ...base, subject: `${subject}/${d}`, deployment: d });
          }
        }
        for (const d of prev.zero) {
          if (!zero.has(d) && app.deployments.some((x) => x.name === d)) {
            out.push({ kind: 'scaled_to_zero', severity: 'ok', from: 'scaled to zero', to: 'waking', ...base, subject: `${subject}/${d}`, deployment: d });
          }
        }
      }
      for (const [name, prev] of before ?? []) {
        if (!now.has(name)) {
          out.push({ kind: 'app_removed', severity: 'ok' as Severity, subject: `${cluster}/${name}`, cluster, app: name, from: prev.status, to: null });
        }
      }
      this.#seen.apps.set(cluster, now);
    }
    for (const cluster of [...this.#seen.apps.keys()]) {
      if (!s.ray.has(cluster)) this.#seen.apps.delete(cluster);
    }
    for (const cluster of [...this.#read.rayStates.keys()]) {
      if (!s.ray.has(cluster)) this.#read.rayStates.delete(cluster);
    }
  }

  #diffServices(s: Snapshot, out: NewTransition[]): void {
    if (s.services !== undefined && s.services === this.#read.services) return;
    this.#read.services = s.services;
    for (const [service, w] of s.services ?? []) {
      let seen = this.#seen.services.get(service);
      const first = seen === undefined;
      if (!seen) {
        seen = { cached: new Map() };
        this.#seen.services.set(service, seen);
      }
      const base = { service };
      // The first values seen are the starting point, not a change.
      if (w.providers) {
        const now = w.providers.join(', ');
        if (seen.providers !== undefined && seen.providers !== now) {
          out.push({
            kind: 'providers', severity: w.providers.length === 0 ? 'critical' : 'ok', subject: service,
            from: seen.providers || '(none)', to: now || '(none)',
            detail: `${seen.providers ? seen.providers.split(', ').length : 0} → ${w.providers.length} live provider(s)`, ...base,
          });
        }
        seen.providers = now;
      }
      if (w.resolvedClientId !== undefined) {
        if (seen.resolved !== undefined && seen.resolved !== w.resolvedClientId) {
          out.push({ kind: 'client_id', severity: 'ok', subject: `${service} (fresh resolve)`, from: seen.resolved, to: w.resolvedClientId, ...base });
        }
        seen.resolved = w.resolvedClientId;
      }
      for (const c of w.cached) {
        const prev = seen.cached.get(c.holder) ?? {};
        const next = { ...prev };
        const subject = `${service} cached by ${c.holder}`;
        if (c.clientId !== undefined) {
          if (prev.id !== undefined && prev.id !== c.clientId) {
            out.push({ kind: 'client_id', severity: 'ok', subject, from: prev.id, to: c.clientId, ...base, holder: c.holder });
          }
          next.id = c.clientId;
        }
        if (c.stale !== undefined) {
          if (prev.stale !== undefined && prev.stale !== c.stale) {
            out.push({
              kind: 'client_id', severity: c.stale ? 'critical' : 'ok', subject,
              from: prev.stale ? 'stale' : 'current', to: c.stale ? 'stale' : 'current',
              detail: `client id ${c.clientId ?? next.id ?? '?'} ${c.stale ? 'is no longer among the live providers' : 'is live again'}`,
              ...base, holder: c.holder,
            });
          } else if (prev.stale === undefined && c.stale && !first) {
            out.push({
              kind: 'client_id', severity: 'critical', subject, from: null, to: 'stale',
              detail: `client id ${c.clientId ?? '?'} is not among the live providers`, ...base, holder: c.holder,
            });
          }
          next.stale = c.stale;
        }
        seen.cached.set(c.holder, next);
      }
    }
    for (const service of [...this.#seen.services.keys()]) {
      if (!s.services?.has(service)) this.#seen.services.delete(service);
    }
  }

  #diffRegistrations(s: Snapshot, out: NewTransition[]): void {
    // registrationInput() reads the registration part and whether each Ray and Hypha source is up.
    const up = upFlags(s);
    if (s.registration !== undefined && s.registration === this.#read.registration && up === this.#read.registrationUp) return;
    this.#read.registration = s.registration;
    this.#read.registrationUp = up;
    const input = registrationInput(s);
    if (!input) return;
    // Rebuilt each time (an app no longer expected leaves), keeping the entry of an app whose state did not move.
    const seen = this.#seen.registrations;
    const next: Seen['registrations'] = new Map();
    this.#seen.registrations = next;
    for (const r of input.apps) {
      const key = `${r.cluster}\u0000${r.app}`;
      const prev = seen.get(key);
      const base = { cluster: r.cluster, app: r.app, service: r.expectedServiceId };
      // While a source is down the state is unknown; the next known state is compared with the last known one.
      if (r.state !== 'unknown') {
        if (prev?.state !== undefined && prev.state !== r.state) {
          out.push({ kind: 'registration', severity: registrationSeverity(r.state), subject: `${r.cluster}/${r.app}`, from: prev.state, to: r.state, ...base });
        } else if (prev === undefined && r.state !== 'registered') {
          // First sight of an expected app that is missing is worth a line; a registered one is not.
          out.push({ kind: 'registration', severity: registrationSeverity(r.state), subject: `${r.cluster}/${r.app}`, from: null, to: r.state, ...base });
        }
      }
      if (r.clientId !== undefined && prev?.clientId !== undefined && prev.clientId !== r.clientId) {
        out.push({
          kind: 'client_id', severity: r.clientIdMismatch ? 'warning' : 'ok', subject: `${r.cluster}/${r.app} registration`,
          from: prev.clientId, to: r.clientId, ...base,
        });
      }
      const state = r.state === 'unknown' ? prev?.state : r.state;
      const clientId = r.clientId ?? prev?.clientId;
      next.set(key, prev !== undefined && prev.state === state && prev.clientId === clientId ? prev : { state, clientId });
    }
  }
}

/** Which Ray and Hypha sources are up, as one string (a handful of sources: cheaper than walking thousands of apps). */
function upFlags(s: Snapshot): string {
  let out = '';
  for (const [cluster, r] of s.ray) out += `r${cluster}\u0000${r.health.up ? 1 : 0}\u0000`;
  for (const [name, h] of s.hypha ?? []) out += `h${name}\u0000${h.health.up ? 1 : 0}\u0000`;
  return out;
}

function attempted(h: SourceHealth): boolean {
  return h.up || h.lastSuccessSeconds !== undefined || h.lastErrorSeconds !== undefined;
}
