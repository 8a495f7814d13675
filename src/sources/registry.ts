import type { Config } from '../config/load';
import type { Logger } from '../util/log';
import type { SnapshotStore } from '../snapshot/store';
import type { SourceKind } from '../snapshot/health';
import type { Source } from './poller';

/** A source the current config asks for; the fingerprint decides whether a reload restarts it. */
export interface DesiredSource {
  key: string;
  kind: SourceKind;
  fingerprint: string;
  create(): Source;
  /** Applies the parts of the config a running source takes in place (new or kept by a reload). */
  configure?(source: Source): void;
}

export type SourcePlanner = (cfg: Config, store: SnapshotStore, log: Logger) => DesiredSource[];
