import { fingerprint } from '../fingerprint';
import type { SourcePlanner } from '../registry';
import { RayServeSource } from './source';

/** One Serve source per configured Ray cluster. */
export const planRaySources: SourcePlanner = (cfg, store, log) =>
  cfg.rayClusters.map((c) => ({
    key: `ray/${c.name}`,
    kind: 'ray',
    fingerprint: fingerprint(c),
    create: () => new RayServeSource(c, store, log.child({ source: 'ray', target: c.name })),
  }));
