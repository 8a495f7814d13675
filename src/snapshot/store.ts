import { RayClusterSample, Snapshot, SourceKind } from './types';

type Listener = (s: Snapshot) => void;
type FreshListener = { kind: SourceKind; target: string; run: () => void };

/**
 * Holds the latest snapshot. Sources replace their own part; readers get an
 * immutable view and a version number that moves on every change.
 */
export class SnapshotStore {
  #snapshot: Snapshot = { version: 0, ray: new Map() };
  readonly #listeners = new Set<Listener>();
  readonly #freshListeners = new Set<FreshListener>();

  get(): Snapshot {
    return this.#snapshot;
  }

  setRayCluster(sample: RayClusterSample): void {
    const ray = new Map(this.#snapshot.ray);
    ray.set(sample.cluster, sample);
    this.#replace({ ...this.#snapshot, ray });
  }

  removeRayCluster(cluster: string): void {
    if (!this.#snapshot.ray.has(cluster)) return;
    const ray = new Map(this.#snapshot.ray);
    ray.delete(cluster);
    this.#replace({ ...this.#snapshot, ray });
  }

  /** Generic replacement of other parts (used by sources added later). */
  update(mutate: (s: Snapshot) => Snapshot): void {
    this.#replace(mutate(this.#snapshot));
  }

  onChange(l: Listener): () => void {
    this.#listeners.add(l);
    return () => this.#listeners.delete(l);
  }

  /**
   * Asks the source of (kind, target) for a sample taken from now on, e.g.
   * because another upstream just changed and the reading of both must be
   * of the same moment. The answer arrives as an ordinary snapshot change.
   */
  requestFresh(kind: SourceKind, target: string): void {
    for (const l of this.#freshListeners) if (l.kind === kind && l.target === target) l.run();
  }

  onFreshRequest(kind: SourceKind, target: string, run: () => void): () => void {
    const l: FreshListener = { kind, target, run };
    this.#freshListeners.add(l);
    return () => this.#freshListeners.delete(l);
  }

  #replace(next: Snapshot): void {
    this.#snapshot = { ...next, version: this.#snapshot.version + 1 };
    for (const l of this.#listeners) l(this.#snapshot);
  }
}
