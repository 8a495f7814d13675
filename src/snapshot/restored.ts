import type { ServerIdFacts } from './hypha';
import type { RegistrationHistory } from './registration';
import type { CanaryRecord } from './services';

// The part of the snapshot a restart continues from (--storage.path; see persisted.ts).

/** What a restart continues from (absent parts: nothing to continue). */
export interface Restored {
  savedSeconds: number;
  /** Stale canaries by watched service id. */
  witnesses: ReadonlyMap<string, CanaryRecord>;
  /** Registration history by `${cluster}\u0000${app}`. */
  registration: ReadonlyMap<string, RegistrationHistory>;
  /** What each connection saw of its Hypha server's id, by serverIdKey(). */
  serverIds: ReadonlyMap<string, ServerIdFacts>;
}

/**
 * Key of one connection's server-id facts: the registry connection of a Hypha server, or a watched
 * service's own connection (each has its ServerIdWatch).
 */
export function serverIdKey(kind: 'hypha' | 'service', name: string): string {
  return `${kind}\u0000${name}`;
}
