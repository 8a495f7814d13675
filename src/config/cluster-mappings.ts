import type { Config } from './load';
import type { ClusterMapping } from './hypha-schema';
import { defaultClusterMapping } from './hypha-schema';

/** One Ray cluster's mapping and the Hypha server its apps register on. */
export interface ClusterRegistration {
  cluster: string;
  hypha: string;
  mapping: ClusterMapping;
}

/**
 * Each Ray cluster's mapping and the Hypha server it names (clusters without a mapping get the
 * BioEngine default on the first server); empty when no Hypha server is configured. Read by both
 * the registration stage (what to expect) and the Hypha planner (which workspaces to list), so
 * the defaulting lives here, below both.
 */
export function clusterRegistrations(cfg: Config): ClusterRegistration[] {
  const first = cfg.hyphaServers[0];
  if (!first) return [];
  const reg = cfg.hyphaRegistration;
  return cfg.rayClusters.map((c) => {
    const mapping = reg.clusters.find((m) => m.cluster === c.name) ?? defaultClusterMapping(c.name);
    return { cluster: c.name, hypha: mapping.hypha ?? first.name, mapping };
  });
}
