import { clusterRegistrations } from '../../config/cluster-mappings';
import { fingerprint } from '../fingerprint';
import type { SourcePlanner } from '../registry';
import { HyphaSource } from './source';
import { mappedWorkspaces } from './workspaces';

/**
 * One Hypha source per configured server. Its fingerprint leaves out the mappings and the Ray
 * clusters: they only change which workspaces it lists (set in place), so a reload that adds a
 * cluster or edits a mapping keeps the connection and its registry.
 */
export const planHyphaRegistration: SourcePlanner = (cfg, store, log) => {
  const registrations = clusterRegistrations(cfg);
  const { clusters: _mappings, reconnectSettleMs: _stageOnly, ...sampling } = cfg.hyphaRegistration;
  return cfg.hyphaServers.map((server) => {
    const mappings = registrations.filter((c) => c.hypha === server.name).map((c) => c.mapping);
    return {
      key: `hypha/${server.name}`,
      kind: 'hypha',
      fingerprint: fingerprint({ server, sampling }),
      create: () => new HyphaSource({ server, registration: cfg.hyphaRegistration }, store, log.child({ source: 'hypha', target: server.name })),
      configure: (source: HyphaSource) => source.setListing((ws) => mappedWorkspaces(mappings, ws)),
    };
  });
};
