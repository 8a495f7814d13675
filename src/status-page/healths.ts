import { hyphaOf } from '../registration/snapshot';
import type { Snapshot, SourceHealth } from '../snapshot/types';
import { sourceHealths } from '../snapshot/types';

/**
 * Every upstream's health: the snapshot's list plus the Hypha connection's,
 * which the snapshot may not list yet (each once, by source and target).
 */
export function statusHealths(s: Snapshot): SourceHealth[] {
  const out = sourceHealths(s);
  const h = hyphaOf(s)?.health;
  if (h && !out.some((x) => x.source === h.source && x.target === h.target)) out.push(h);
  return out;
}
