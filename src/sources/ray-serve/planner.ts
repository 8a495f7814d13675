import { fingerprint } from '../fingerprint';
import type { DesiredSource, SourcePlanner } from '../plan';
import { RayServeHandover, RayServeSource } from './source';

/** One Serve source per configured Ray cluster; one a reload restarts takes its predecessor's handover. */
export const planRaySources: SourcePlanner = (cfg, store, log) =>
  cfg.rayClusters.map((c): DesiredSource<RayServeHandover> => ({
    key: `ray/${c.name}`,
    kind: 'ray',
    fingerprint: fingerprint(c),
    create: (handover) => new RayServeSource(c, store, log.child({ source: 'ray', target: c.name }), handover),
  }));
