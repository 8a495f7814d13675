import { clusterRegistrations } from '../../config/cluster-mappings';
import { serverIdKey } from '../../snapshot/restored';
import { fingerprint } from '../fingerprint';
import type { DesiredSource, SourcePlanner } from '../registry';
import { HyphaHandoff, HyphaSource } from './source';
import { mappedWorkspaces } from './workspaces';

/**
 * One Hypha source per configured server. Its fingerprint leaves out the mappings and the Ray
 * clusters: they only change which workspaces it lists (set in place), so a reload that adds a
 * cluster or edits a mapping keeps the connection and its registry. One a reload restarts
 * continues its predecessor's hand-over; one the first load starts, the server-id facts saved
 * before an exporter restart.
 */
export const planHyphaRegistration: SourcePlanner = (cfg, store, log, restored) => {
  const registrations = clusterRegistrations(cfg);
  const { clusters: _mappings, reconnectSettleMs: _stageOnly, ...sampling } = cfg.hyphaRegistration;
  return cfg.hyphaServers.map((server): DesiredSource<HyphaHandoff> => {
    const mappings = registrations.filter((c) => c.hypha === server.name).map((c) => c.mapping);
    const idKey = serverIdKey('hypha', server.name);
    return {
      key: `hypha/${server.name}`,
      kind: 'hypha',
      fingerprint: fingerprint({ server, sampling }),
      create: (previous) => new HyphaSource({ server, registration: cfg.hyphaRegistration }, store, log.child({ source: 'hypha', target: server.name }),
        { previous, restoredServerIds: restored?.serverIds.get(idKey) }),
      configure: (source: HyphaSource) => source.setListing((ws) => mappedWorkspaces(mappings, ws)),
      save: (h, into) => {
        into.serverIds.set(idKey, h.serverIds);
      },
    };
  });
};
