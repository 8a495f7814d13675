import { fingerprint } from '../fingerprint';
import type { DesiredSource, SourcePlanner } from '../registry';
import { RayServeHandoff, RayServeSource } from './source';

/** One Serve source per configured Ray cluster; one a reload restarts continues its predecessor's hand-over. */
export const planRaySources: SourcePlanner = (cfg, store, log) =>
  cfg.rayClusters.map((c): DesiredSource<RayServeHandoff> => ({
    key: `ray/${c.name}`,
    kind: 'ray',
    fingerprint: fingerprint(c),
    create: (previous) => new RayServeSource(c, store, log.child({ source: 'ray', target: c.name }), previous),
  }));
