import type { Config } from '../config/load';
import type { Logger } from '../util/log';
import type { RestartHandover, SavedState } from '../snapshot/handover';
import type { SnapshotStore } from '../snapshot/store';
import type { SourceKind } from '../snapshot/health';
import type { Source } from './poller';

/**
 * A source the current config asks for; the fingerprint decides whether a reload restarts it. H is
 * the source's handover (Source.handover): a running source with the same key was planned by the
 * same planner (keys are unique across planners), so what it hands over is an H.
 */
export interface DesiredSource<H = unknown> {
  key: string;
  kind: SourceKind;
  fingerprint: string;
  /** `handover`: what the source this one replaces (same key, restarted by a reload) handed over; absent for a new key. */
  create(handover?: H): Source<H>;
  /** Applies the parts of the config a running source takes in place (new or kept by a reload). */
  configure?(source: Source<H>): void;
  /** Adds what of the handover must survive an exporter restart (--storage.path) to `into`. */
  save?(handover: H, into: SavedState): void;
}

/**
 * `restart`: the restart handover, what was saved before an exporter restart (--storage.path), given at
 * the first load only: a source it creates then takes its part; sources added by a later reload start fresh.
 */
export type SourcePlanner = (cfg: Config, store: SnapshotStore, log: Logger, restart?: RestartHandover) => DesiredSource[];
