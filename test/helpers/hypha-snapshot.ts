import type { HyphaServerSample } from '../../src/snapshot/hypha';
import type { AppRegistration, AttributedWorker, WorkerSample } from '../../src/snapshot/registration';
import type { SnapshotStore } from '../../src/snapshot/store';
import { newSourceHealth, Snapshot, SourceHealth } from '../../src/snapshot/types';

/** What tests used to write as one Hypha sample: a server's part and the registration judged on it. */
export interface HyphaFixture {
  target: string;
  health?: SourceHealth;
  up?: boolean;
  reconnectsTotal?: number;
  generation?: number;
  apps?: Array<Omit<AppRegistration, 'hypha'> & { hypha?: string }>;
  workers?: WorkerSample[];
  malformedTotal?: number;
}

/** The snapshot parts (Snapshot.hypha and Snapshot.registration) of one Hypha server. */
export function hyphaParts(f: HyphaFixture): Pick<Snapshot, 'hypha' | 'registration'> {
  const health = f.health ?? { ...newSourceHealth('hypha', f.target), up: f.up ?? true };
  const server: HyphaServerSample = {
    target: f.target, health, reconnectsTotal: f.reconnectsTotal ?? 0, generation: f.generation ?? 1,
    listedSeconds: 1, connectionsListed: 1, registry: new Map(), workers: f.workers ?? [], malformedTotal: f.malformedTotal ?? 0,
  };
  const apps = (f.apps ?? []).map((a) => ({ ...a, hypha: a.hypha ?? f.target }));
  const workers: AttributedWorker[] = (f.workers ?? []).map((w) => ({ ...w, hypha: f.target }));
  return { hypha: new Map([[f.target, server]]), registration: { apps, workers } };
}

/** Puts those parts into a store through its setters. */
export function putHypha(store: SnapshotStore, f: HyphaFixture): void {
  const parts = hyphaParts(f);
  for (const h of parts.hypha?.values() ?? []) store.setHyphaServer(h);
  store.setRegistration(parts.registration);
}

/** Puts a whole snapshot into a store through its setters (tests that build one by hand). */
export function putSnapshot(store: SnapshotStore, s: Snapshot): void {
  for (const r of s.ray.values()) store.setRayCluster(r);
  for (const [id, w] of s.services ?? []) store.setService(id, w);
  for (const h of s.hypha?.values() ?? []) store.setHyphaServer(h);
  if (s.registration) store.setRegistration(s.registration);
}
