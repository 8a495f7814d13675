import crypto from 'node:crypto';
import type { Config } from '../../config/load';
import { HyphaRegistrationConfig, resolveHyphaRegistration } from '../../config/hypha-schema';
import { fingerprint, SourcePlanner } from '../registry';
import { HyphaSource } from './source';

/** The resolved `hypha_registration:` (defaults when the key is absent). */
export function registrationConfigOf(cfg: Config): HyphaRegistrationConfig {
  const wired = (cfg as Config & { hyphaRegistration?: HyphaRegistrationConfig }).hyphaRegistration;
  return wired ?? resolveHyphaRegistration(undefined, cfg.raw.global);
}

/** One Hypha registration source when a Hypha server is configured. */
export const planHyphaRegistration: SourcePlanner = (cfg, store, log) => {
  const server = cfg.hypha;
  if (!server) return [];
  const registration = registrationConfigOf(cfg);
  const rayClusters = cfg.rayClusters.map((c) => c.name);
  return [
    {
      key: `hypha/${server.name}`,
      // RegExps serialise as {} and Secrets as "<secret>": fold both in explicitly.
      fingerprint: fingerprint({
        server,
        token: server.token ? crypto.createHash('sha256').update(server.token.reveal()).digest('hex') : null,
        registration: JSON.stringify(registration, (_k, v: unknown) => (v instanceof RegExp ? `re:${v.source}` : v)),
        rayClusters,
      }),
      create: () => new HyphaSource({ server, registration, rayClusters }, store, log.child({ source: 'hypha', target: server.name })),
    },
  ];
};
