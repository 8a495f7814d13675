import { serverIdKey } from '../../snapshot/handover';
import type { DesiredSource, SourcePlanner } from '../plan';
import { fingerprint } from '../fingerprint';
import { SERVICE_SOURCE_KIND, WatchedServiceHandover, WatchedServiceSource } from './source';
import type { WorkerHolders } from './worker-holders';

/**
 * One background source per watched service, on its Hypha server (default: the first configured). `workers`:
 * the BioEngine workers each Hypha source discovered (served by the exporter), the services' holders when none
 * is configured.
 */
export const watchedServicesPlanner = (workers?: WorkerHolders): SourcePlanner => (cfg, store, log, restart) => {
  const first = cfg.hypha;
  if (!first) return [];
  return cfg.watchedServices.map((w): DesiredSource<WatchedServiceHandover> => {
    const hypha = cfg.hyphaServers.find((h) => h.name === w.hypha) ?? first;
    const idKey = serverIdKey('service', w.service);
    return {
      key: `service/${w.service}`,
      kind: SERVICE_SOURCE_KIND,
      // A changed connection (token included) or service config restarts the source; the new one
      // takes the replaced one's handover (counters, histograms, the witness). One the first load
      // starts takes the witness and server-id facts of the restart handover (saved before an exporter restart).
      fingerprint: fingerprint({ w, hypha }),
      create: (handover) =>
        new WatchedServiceSource(
          w,
          { name: hypha.name, options: { serverUrl: hypha.serverUrl, workspace: hypha.workspace, token: hypha.token } },
          store,
          log.child({ source: 'hypha_service', target: w.service }),
          {
            handover,
            restart: {
              witness: restart?.witnesses.get(w.service),
              holders: restart?.holders.get(w.service),
              workers: restart?.workers.get(w.service),
              serverIds: restart?.serverIds.get(idKey),
            },
            workers,
          },
        ),
      save: (h, into) => {
        if (h.watch.canary) into.witnesses.set(w.service, h.watch.canary);
        into.holders.set(w.service, h.watch.holders);
        into.workers.set(w.service, h.watch.workers ?? []);
        into.serverIds.set(idKey, h.serverIds);
      },
    };
  });
};

/** The planner without worker holders (a config's sources alone; the exporter gives its own WorkerHolders). */
export const planWatchedServices: SourcePlanner = watchedServicesPlanner();
