import type { RegistrationHistory } from './registration';
import type { CanaryRecord, HeldId, RetainedWorker } from './services';

// The restart handover: what an exporter restart starts from (--storage.path; see persisted.ts). Never part of the
// snapshot: the exporter gathers it from the sources' handovers and the registration stage, and
// passes what it loaded back to them explicitly when it starts.

/** What a Hypha connection saw of the server's id across its rebuilds (src/sources/hypha/server-id.ts). */
export interface ServerIdFacts {
  /** The id the current (or last) connection reported. */
  current?: string;
  /** The id before the last comeback, when it differed. */
  previous?: string;
  /** The last comeback was under another id (true) or the same one (false); undefined until one was seen. */
  changed?: boolean;
  /** Ids earlier connections reported that the server has since replaced (newest last, bounded). */
  replaced: string[];
}

/** The restart handover: what a restart starts from (absent parts: nothing handed over). */
export interface RestartHandover {
  savedSeconds: number;
  /** Stale canaries by watched service id. */
  witnesses: ReadonlyMap<string, CanaryRecord>;
  /** Stale configured holders (their spells and pages) by watched service id. */
  holders: ReadonlyMap<string, readonly HeldId[]>;
  /** The BioEngine worker holders known while the witness was stale, by watched service id. */
  workers: ReadonlyMap<string, readonly RetainedWorker[]>;
  /** Registration history by registrationKey(). */
  registration: ReadonlyMap<string, RegistrationHistory>;
  /** What each connection saw of its Hypha server's id, by serverIdKey(). */
  serverIds: ReadonlyMap<string, ServerIdFacts>;
}

/** The running exporter's state to save, filled by each source from its handover and by the registration stage. */
export interface SavedState {
  /** Each watched service's canary, by service id (the file keeps the stale ones: the witnesses). */
  witnesses: Map<string, CanaryRecord>;
  /** Each watched service's configured holders that named an id, by service id (the file keeps the stale ones). */
  holders: Map<string, readonly HeldId[]>;
  /** Each watched service's known BioEngine worker holders, by service id (the file keeps those of stale witnesses). */
  workers: Map<string, readonly RetainedWorker[]>;
  /** What each connection saw of its Hypha server's id, by serverIdKey(). */
  serverIds: Map<string, ServerIdFacts>;
  /** The history of every app the registration stage judged. */
  registration: ReadonlyArray<{ cluster: string; app: string; history: RegistrationHistory }>;
}

/** Key of one app's registration history: in RestartHandover and in the registration tracker that takes it over. */
export function registrationKey(cluster: string, app: string): string {
  return `${cluster}\u0000${app}`;
}

/**
 * Key of one connection's server-id facts: the registry connection of a Hypha server, or a watched
 * service's own connection (each has its ServerIdWatch).
 */
export function serverIdKey(kind: 'hypha' | 'service', name: string): string {
  return `${kind}\u0000${name}`;
}
