import { isArtifactManager } from '../../config/services-schema';
import type { HolderRecovery, WorkerHolder } from '../../snapshot/services';
import { reresolvesArtifactManager } from '../../util/bioengine-release';

/** A BioEngine worker the Hypha source of a server discovered, as the watched-service source sees it. */
export interface DiscoveredWorker {
  /** The worker's client id. */
  holder: string;
  /** Its last known bioengine_version (get_status), if it ever reported one. */
  version?: string;
}

/**
 * The long-lived clients a watched service has by default: the BioEngine workers the Hypha source of its
 * server discovered (up or not, with their last known version). Served by the exporter (it reads the
 * store), so that a watched-service source never reads another source's part of the snapshot itself.
 */
export interface WorkerHolders {
  of(hypha: string): DiscoveredWorker[];
  /** Calls `listener` (not synchronously) when the workers of `hypha` or their versions change; returns the unsubscribe. */
  onChange?(hypha: string, listener: () => void): () => void;
}

/**
 * How a worker holding a proxy to `service` recovers when the service re-registers under a new client id.
 * From 0.16.30 BioEngine wraps its cached artifact-manager proxy (`_ReconnectingArtifactManager`): a failed
 * call re-resolves and is retried, so a re-registration costs at most one failed call; the wrapper covers that
 * proxy only. Up to 0.16.2 the plain proxy stays bound to the old id until the worker restarts. Anything
 * between, unreported or unparseable is unknown, and so is a 0.16.30 worker's proxy to another service.
 */
export function holderRecovery(version: string | undefined, service: string): HolderRecovery {
  const fixed = reresolvesArtifactManager(version);
  if (fixed === false) return 'stays_stale';
  if (fixed === true && isArtifactManager(service)) return 'self_healing';
  return 'unknown';
}

/** The worker holders of `service` on `hypha`: one per client id, sorted, each with its recovery. */
export function workerHoldersOf(source: WorkerHolders, hypha: string, service: string): WorkerHolder[] {
  const byId = new Map<string, WorkerHolder>();
  for (const w of source.of(hypha)) {
    // "exporter" is the canary's holder label; a worker is never named so (client ids are generated).
    if (w.holder === '' || w.holder === 'exporter') continue;
    const h: WorkerHolder = { holder: w.holder, recovery: holderRecovery(w.version, service) };
    if (w.version !== undefined) h.version = w.version;
    byId.set(w.holder, h);
  }
  return [...byId.values()].sort((a, b) => (a.holder < b.holder ? -1 : a.holder > b.holder ? 1 : 0));
}
