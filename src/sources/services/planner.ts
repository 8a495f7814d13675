import { serverIdKey } from '../../snapshot/restored';
import type { DesiredSource, SourcePlanner } from '../registry';
import { fingerprint } from '../fingerprint';
import { SERVICE_SOURCE_KIND, WatchedServiceHandoff, WatchedServiceSource } from './source';

/** One background source per watched service, on its Hypha server (default: the first configured). */
export const planWatchedServices: SourcePlanner = (cfg, store, log, restored) => {
  const first = cfg.hypha;
  if (!first) return [];
  return cfg.watchedServices.map((w): DesiredSource<WatchedServiceHandoff> => {
    const hypha = cfg.hyphaServers.find((h) => h.name === w.hypha) ?? first;
    const idKey = serverIdKey('service', w.service);
    return {
      key: `service/${w.service}`,
      kind: SERVICE_SOURCE_KIND,
      // A changed connection (token included) or service config restarts the source; the new one
      // continues the previous one's hand-over (counters, histograms, the witness). One the first
      // load starts continues the witness and server-id facts saved before an exporter restart.
      fingerprint: fingerprint({ w, hypha }),
      create: (previous) =>
        new WatchedServiceSource(
          w,
          { name: hypha.name, options: { serverUrl: hypha.serverUrl, workspace: hypha.workspace, token: hypha.token } },
          store,
          log.child({ source: 'hypha_service', target: w.service }),
          { previous, restored: { witness: restored?.witnesses.get(w.service), serverIds: restored?.serverIds.get(idKey) } },
        ),
      save: (h, into) => {
        if (h.watch.canary) into.witnesses.set(w.service, h.watch.canary);
        into.serverIds.set(idKey, h.serverIds);
      },
    };
  });
};
