import type { Config } from '../../config/load';
import { defaultClusterMapping } from '../../config/hypha-schema';
import type { StageConfig } from '../../registration/stage';
import { mappedWorkspaces } from '../../registration/expected';
import { fingerprint } from '../fingerprint';
import type { SourcePlanner } from '../registry';
import { HyphaSource } from './source';

/**
 * Each Ray cluster's mapping and the Hypha server it names (clusters without a mapping get the
 * BioEngine default on the first server); undefined when no Hypha server is configured.
 */
export function registrationStageConfig(cfg: Config): StageConfig | undefined {
  const first = cfg.hyphaServers[0];
  if (!first) return undefined;
  const reg = cfg.hyphaRegistration;
  return {
    reconnectSettleMs: reg.reconnectSettleMs,
    clusters: cfg.rayClusters.map((c) => {
      const mapping = reg.clusters.find((m) => m.cluster === c.name) ?? defaultClusterMapping(c.name);
      return { cluster: c.name, hypha: mapping.hypha ?? first.name, mapping };
    }),
  };
}

/**
 * One Hypha source per configured server. Its fingerprint leaves out the mappings and the Ray
 * clusters: they only change which workspaces it lists (set in place), so a reload that adds a
 * cluster or edits a mapping keeps the connection and its registry.
 */
export const planHyphaRegistration: SourcePlanner = (cfg, store, log) => {
  const stage = registrationStageConfig(cfg);
  const { clusters: _mappings, reconnectSettleMs: _stageOnly, ...sampling } = cfg.hyphaRegistration;
  return cfg.hyphaServers.map((server) => {
    const mappings = (stage?.clusters ?? []).filter((c) => c.hypha === server.name).map((c) => c.mapping);
    return {
      key: `hypha/${server.name}`,
      kind: 'hypha',
      fingerprint: fingerprint({ server, sampling }),
      create: () => new HyphaSource({ server, registration: cfg.hyphaRegistration }, store, log.child({ source: 'hypha', target: server.name })),
      configure: (source: HyphaSource) => source.setListing((ws) => mappedWorkspaces(mappings, ws)),
    };
  });
};
