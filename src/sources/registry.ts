import type { Config } from '../config/load';
import type { Logger } from '../util/log';
import type { Restored, SavedState } from '../snapshot/restored';
import type { SnapshotStore } from '../snapshot/store';
import type { SourceKind } from '../snapshot/health';
import type { Source } from './poller';

/**
 * A source the current config asks for; the fingerprint decides whether a reload restarts it. H is
 * the source's hand-over (Source.handoff): a running source with the same key was planned by the
 * same planner (keys are unique across planners), so what it hands over is an H.
 */
export interface DesiredSource<H = unknown> {
  key: string;
  kind: SourceKind;
  fingerprint: string;
  /** `previous`: what the source this one replaces (same key, restarted by a reload) handed over; absent for a new key. */
  create(previous?: H): Source<H>;
  /** Applies the parts of the config a running source takes in place (new or kept by a reload). */
  configure?(source: Source<H>): void;
  /** Adds what of the hand-over must survive an exporter restart (--storage.path) to `into`. */
  save?(handoff: H, into: SavedState): void;
}

/**
 * `restored`: what was saved before an exporter restart (--storage.path), given at the first load
 * only: a source it creates then continues its part; sources added by a later reload start fresh.
 */
export type SourcePlanner = (cfg: Config, store: SnapshotStore, log: Logger, restored?: Restored) => DesiredSource[];
