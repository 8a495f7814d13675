import { clusterRegistrations } from '../config/cluster-mappings';
import type { Config } from '../config/load';
import type { StageConfig } from './stage';

/** The registration stage's part of the config; undefined when no Hypha server is configured. */
export function registrationStageConfig(cfg: Config): StageConfig | undefined {
  if (cfg.hyphaServers.length === 0) return undefined;
  return { reconnectSettleMs: cfg.hyphaRegistration.reconnectSettleMs, pageWaits: cfg.hyphaRegistration.pageWaits, clusters: clusterRegistrations(cfg) };
}
