import type { DesiredSource, SourcePlanner } from '../registry';
import { fingerprint } from '../fingerprint';
import { SERVICE_SOURCE_KIND, WatchedServiceSource } from './source';

/** One background source per watched service, on its Hypha server (default: the first configured). */
export const planWatchedServices: SourcePlanner = (cfg, store, log) => {
  const first = cfg.hypha;
  if (!first) return [];
  return cfg.watchedServices.map((w): DesiredSource => {
    const hypha = cfg.hyphaServers.find((h) => h.name === w.hypha) ?? first;
    return {
      key: `service/${w.service}`,
      kind: SERVICE_SOURCE_KIND,
      // A changed connection (token included) or service config restarts the source; the new one
      // continues the previous one's state from the store (counters, histograms, the witness).
      fingerprint: fingerprint({ w, hypha }),
      create: () =>
        new WatchedServiceSource(
          w,
          { name: hypha.name, options: { serverUrl: hypha.serverUrl, workspace: hypha.workspace, token: hypha.token } },
          store,
          log.child({ source: 'hypha_service', target: w.service }),
        ),
    };
  });
};
