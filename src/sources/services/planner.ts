import { fingerprint } from '../fingerprint';
import type { SourcePlanner } from '../registry';
import { SERVICE_SOURCE_KIND, WatchedServiceSource } from './source';

/** One background source per watched service, when a Hypha server is configured. */
export const planWatchedServices: SourcePlanner = (cfg, store, log) => {
  const hypha = cfg.hypha;
  if (!hypha) return [];
  return cfg.watchedServices.map((w) => ({
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
  }));
};
