import type { SourceHealth } from './health';
import type { HyphaServerSample } from './hypha';
import type { RayClusterSample } from './ray';
import type { AppRegistration, RegistrationSample } from './registration';
import type { WatchedServiceSample } from './services';

// The typed snapshot: everything sources learned in their latest sample, one leaf file per part
// (health.ts, ray.ts, hypha.ts, services.ts, registration.ts) combined here. Sources and the
// registration stage write their part through the store's setters; metrics, the status page and
// the JSON API only read it.

export * from './health';
export * from './ray';

/** Everything currently known; replaced wholesale, never mutated in place. */
export interface Snapshot {
  /** Increments on every change; renderers rebuild only when it moved. */
  version: number;
  ray: ReadonlyMap<string, RayClusterSample>;
  /** Watched services by configured id. */
  services?: ReadonlyMap<string, WatchedServiceSample>;
  /** Each configured Hypha server's connection and registry, by server name. */
  hypha?: ReadonlyMap<string, HyphaServerSample>;
  /** Per-app registration, written by the registration stage. */
  registration?: RegistrationSample;
  /** The last configuration (re)load; absent before the first one. */
  reload?: ReloadStatus;
}

export interface ReloadStatus {
  ok: boolean;
  /** When the configuration was last loaded successfully (Unix seconds); absent if never. */
  lastSuccessSeconds?: number;
}

/** Health of every upstream in the snapshot (each source adds its own part here). */
export function sourceHealths(s: Snapshot): SourceHealth[] {
  const out: SourceHealth[] = [];
  for (const r of s.ray.values()) out.push(r.health);
  for (const w of s.services?.values() ?? []) out.push(w.health);
  for (const h of s.hypha?.values() ?? []) out.push(h.health);
  return out;
}

/**
 * Whether an app's registration verdict is a fact: its Ray cluster's and its Hypha server's sources are
 * up and the registry has settled after a reconnect. Otherwise the verdict is unknown: metrics leave its
 * series out and the status page shows "unknown" (unknown never pages and never un-pages).
 */
export function registrationKnown(s: Snapshot, a: AppRegistration): boolean {
  return s.hypha?.get(a.hypha)?.health.up === true && s.ray.get(a.cluster)?.health.up === true && a.settled;
}
