import { z } from 'zod';
import type { WorkerApp } from '../../snapshot/registration';

// Parsing what a BioEngine worker answers to get_status and get_app_status. Fields are
// optional because older workers lack them and newer ones project them for
// non-admin callers; nothing here trusts more than it has to.

export const BIOENGINE_WORKER_TYPE = 'bioengine-worker';

const rawStatus = z.object({
  client_id: z.string().optional(),
  workspace: z.string().optional(),
  is_ready: z.boolean().optional(),
  bioengine_version: z.string().optional(),
});

export interface WorkerStatus {
  clientId?: string;
  workspace?: string;
  isReady?: boolean;
  version?: string;
}

export function parseWorkerStatus(raw: unknown): WorkerStatus | undefined {
  const r = rawStatus.safeParse(raw);
  if (!r.success) return undefined;
  return { clientId: r.data.client_id, workspace: r.data.workspace, isReady: r.data.is_ready, version: r.data.bioengine_version };
}

const rawApp = z.object({
  status: z.string(),
  service_registered: z.boolean().nullish(),
  deployed_by_worker_client_id: z.string().nullish(),
});

/** get_app_status() answers a dict keyed by application id (even for one id). Malformed entries are skipped. */
export function parseWorkerApps(raw: unknown): WorkerApp[] | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const out: WorkerApp[] = [];
  for (const [app, v] of Object.entries(raw as Record<string, unknown>)) {
    const r = rawApp.safeParse(v);
    if (!r.success) continue;
    out.push({
      app,
      status: r.data.status,
      serviceRegistered: r.data.service_registered ?? undefined,
      deployedByWorkerClientId: r.data.deployed_by_worker_client_id ?? undefined,
    });
  }
  return out.sort((a, b) => (a.app < b.app ? -1 : a.app > b.app ? 1 : 0));
}

/** What a cluster's BioEngine mapping says about its worker (see clusterOfWorker). */
export interface WorkerMappingFacts {
  cluster: string;
  enabled: boolean;
  workspace: string;
  workerClientId?: string;
}

/**
 * The Ray cluster a worker serves, only where the config leaves no doubt: one mapping pins its
 * client id, or one mapping alone covers its workspace without pinning another worker. A guess
 * could page a healthy worker for another cluster's app of the same name.
 */
export function clusterOfWorker(worker: { workspace: string; clientId: string }, mappings: readonly WorkerMappingFacts[]): string | undefined {
  const bioengine = mappings.filter((m) => m.enabled);
  const pinned = bioengine.filter((m) => m.workerClientId === worker.clientId);
  if (pinned.length > 0) return pinned.length === 1 ? pinned[0].cluster : undefined;
  const byWorkspace = bioengine.filter((m) => m.workerClientId === undefined && m.workspace === worker.workspace);
  return byWorkspace.length === 1 ? byWorkspace[0].cluster : undefined;
}
