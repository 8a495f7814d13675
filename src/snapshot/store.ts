import type { HyphaServerSample } from './hypha';
import type { RegistrationSample } from './registration';
import type { WatchedServiceSample } from './services';
import type { RayClusterSample, Snapshot } from './types';

type Listener = (s: Snapshot) => void;

/**
 * Holds the latest snapshot. Each writer replaces its own part through that part's setter;
 * readers get an immutable view and a version number that moves on every change. The store
 * carries data only, and only what is rendered or judged: a stage that needs another source to act
 * (a fresh Serve sample) asks it through an interface of its own, and a source restarted by a reload
 * gets its predecessor's state handed over (Source.handover), never through here.
 */
export class SnapshotStore {
  #snapshot: Snapshot = { version: 0, ray: new Map() };
  readonly #listeners = new Set<Listener>();

  get(): Snapshot {
    return this.#snapshot;
  }

  setRayCluster(sample: RayClusterSample): void {
    this.#replace({ ...this.#snapshot, ray: withEntry(this.#snapshot.ray, sample.cluster, sample) });
  }

  removeRayCluster(cluster: string): void {
    if (!this.#snapshot.ray.has(cluster)) return;
    this.#replace({ ...this.#snapshot, ray: withEntry(this.#snapshot.ray, cluster, undefined) });
  }

  setHyphaServer(sample: HyphaServerSample): void {
    this.#replace({ ...this.#snapshot, hypha: withEntry(this.#snapshot.hypha, sample.target, sample) });
  }

  removeHyphaServer(name: string): void {
    if (!this.#snapshot.hypha?.has(name)) return;
    this.#replace(dropEmpty({ ...this.#snapshot, hypha: withEntry(this.#snapshot.hypha, name, undefined) }, 'hypha'));
  }

  setService(id: string, sample: WatchedServiceSample): void {
    this.#replace({ ...this.#snapshot, services: withEntry(this.#snapshot.services, id, sample) });
  }

  removeService(id: string): void {
    if (!this.#snapshot.services?.has(id)) return;
    this.#replace(dropEmpty({ ...this.#snapshot, services: withEntry(this.#snapshot.services, id, undefined) }, 'services'));
  }

  /** undefined: no registration is configured (the stage has nothing to judge); the part is then removed, not kept as undefined. */
  setRegistration(r: RegistrationSample | undefined): void {
    const next: Snapshot = { ...this.#snapshot, registration: r };
    if (r === undefined) delete next.registration;
    this.#replace(next);
  }

  /** Records a configuration (re)load; a failed one keeps the time of the last success. */
  recordReload(ok: boolean, atSeconds: number): void {
    const last = ok ? atSeconds : this.#snapshot.reload?.lastSuccessSeconds;
    this.#replace({ ...this.#snapshot, reload: last === undefined ? { ok } : { ok, lastSuccessSeconds: last } });
  }

  onChange(l: Listener): () => void {
    this.#listeners.add(l);
    return () => this.#listeners.delete(l);
  }

  #replace(next: Snapshot): void {
    this.#snapshot = { ...next, version: this.#snapshot.version + 1 };
    for (const l of this.#listeners) l(this.#snapshot);
  }
}

function withEntry<V>(m: ReadonlyMap<string, V> | undefined, key: string, value: V | undefined): ReadonlyMap<string, V> {
  const next = new Map(m);
  if (value === undefined) next.delete(key);
  else next.set(key, value);
  return next;
}

function dropEmpty(s: Snapshot, part: 'hypha' | 'services'): Snapshot {
  if (s[part]?.size === 0) delete s[part];
  return s;
}
