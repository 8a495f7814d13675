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
}
