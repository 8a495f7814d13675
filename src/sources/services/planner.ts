import crypto from 'node:crypto';
import { fingerprint, SourcePlanner } from '../registry';
import { WatchedServiceSource } from './source';

/** One background source per watched service, when a Hypha server is configured. */
export const planWatchedServices: SourcePlanner = (cfg, store, log) => {
  const hypha = cfg.hypha;
  if (!hypha) return [];
  return cfg.watchedServices.map((w) => ({
    key: `service/${w.service}`,
    // A changed connection or service config restarts the source; the new one continues the
    // previous one's state from the store (counters, histograms, the witness).
    // (registry's fingerprint() sees a Secret only as "<secret>", since JSON.stringify applies toJSON first,
    // so a changed token is folded in here as a digest.)
    fingerprint: fingerprint({ w, hypha, token: hypha.token ? crypto.createHash('sha256').update(hypha.token.reveal()).digest('hex') : null }),
    create: () =>
      new WatchedServiceSource(
        w,
        { name: hypha.name, options: { serverUrl: hypha.serverUrl, workspace: hypha.workspace, token: hypha.token } },
        store,
        log.child({ source: 'hypha_service', target: w.service }),
      ),
  }));
};
