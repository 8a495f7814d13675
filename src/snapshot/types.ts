import type { SourceHealth } from './health';
import type { RayClusterSample } from './ray';
import type { Restored } from './restored';
import type { WatchedServiceSample } from './services';
import type { HyphaSample } from '../registration/types';

// The typed snapshot: everything sources learned in their latest sample, one leaf file per part
// (health.ts, ray.ts, services.ts, ../registration/types.ts) combined here. Sources write their
// part through the store's setters; metrics, the status page and the JSON API only read it.

export * from './health';
export * from './ray';

/** Everything currently known; replaced wholesale, never mutated in place. */
export interface Snapshot {
  /** Increments on every change; renderers rebuild only when it moved. */
  version: number;
  ray: ReadonlyMap<string, RayClusterSample>;
  /** Watched services by configured id (issue 4). */
  services?: ReadonlyMap<string, WatchedServiceSample>;
  /** The Hypha registry and per-app registration. */
  hypha?: HyphaSample;
  /** State saved before a restart (--storage.path), for sources to continue from; never rendered. */
  restored?: Restored;
}

/** Health of every upstream in the snapshot (each source adds its own part here). */
export function sourceHealths(s: Snapshot): SourceHealth[] {
  const out: SourceHealth[] = [];
  for (const r of s.ray.values()) out.push(r.health);
  for (const w of s.services?.values() ?? []) out.push(w.health);
  if (s.hypha) out.push(s.hypha.health);
  return out;
}
