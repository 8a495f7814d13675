import type { Snapshot } from '../snapshot/types';
import type { HyphaSample } from './types';

/** The snapshot with the Hypha registry part replaced (or removed when the source stops). */
export function withHypha(s: Snapshot, sample: HyphaSample | undefined): Snapshot {
  const next: Snapshot = { ...s, hypha: sample };
  if (sample === undefined) delete next.hypha;
  return next;
}
