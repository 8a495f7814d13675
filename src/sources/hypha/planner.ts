import { clusterRegistrations } from '../../config/cluster-mappings';
import { serverIdKey } from '../../snapshot/handover';
import { fingerprint } from '../fingerprint';
import type { DesiredSource, SourcePlanner } from '../plan';
import { HyphaHandover, HyphaSource } from './source';
import { mappedWorkspaces } from './workspaces';

/**
 * One Hypha source per configured server. Its fingerprint leaves out the mappings and the Ray
 * clusters: they only change which workspaces it lists (set in place), so a reload that adds a
 * cluster or edits a mapping keeps the connection and its registry. One a reload restarts
 * takes its predecessor's handover; one the first load starts, the server-id facts saved
 * before an exporter restart.
 */
export const planHyphaRegistration: SourcePlanner = (cfg, store, log, restart) => {
  const registrations = clusterRegistrations(cfg);
  const { clusters: _mappings, reconnectSettleMs: _stageOnly, ...sampling } = cfg.hyphaRegistration;
  return cfg.hyphaServers.map((server): DesiredSource<HyphaHandover> => {
    const mappings = registrations.filter((c) => c.hypha === server.name).map((c) => c.mapping);
    const idKey = serverIdKey('hypha', server.name);
    return {
      key: `hypha/${server.name}`,
      kind: 'hypha',
      fingerprint: fingerprint({ server, sampling }),
      create: (handover) => new HyphaSource({ server, registration: cfg.hyphaRegistration }, store, log.child({ source: 'hypha', target: server.name }),
        { handover, restart: { serverIds: restart?.serverIds.get(idKey) } }),
      configure: (source: HyphaSource) => source.setListing((ws) => mappedWorkspaces(mappings, ws)),
      save: (h, into) => {
        into.serverIds.set(idKey, h.serverIds);
      },
    };
  });
};
