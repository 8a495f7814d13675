import type { Snapshot } from '../snapshot/types';
import type { HyphaSample } from './types';

// Snapshot.hypha accessors. Written against the field the core's Snapshot
// declares (`hypha?: HyphaSample`); the intersection keeps this compiling
// whether or not that declaration is in place.

type WithHypha = Snapshot & { hypha?: HyphaSample };

export function hyphaOf(s: Snapshot): HyphaSample | undefined {
  return (s as WithHypha).hypha;
}

export function withHypha(s: Snapshot, sample: HyphaSample | undefined): Snapshot {
  const next: WithHypha = { ...s, hypha: sample };
  if (sample === undefined) delete next.hypha;
  return next;
}
