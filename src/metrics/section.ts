import { Counter, Gauge, Registry } from 'prom-client';
import type { Snapshot } from '../snapshot/types';

/**
 * A group of metric families rendered from the snapshot. rebuild() runs only
 * when the snapshot changed: it resets every family it owns and sets each
 * series anew, so series of vanished apps disappear in the same cycle.
 * Sections on prom-client instruments (watched services) still work this way;
 * the families of the declared table (families.ts) are TableSections instead.
 */
export interface MetricsSection {
  rebuild(s: Snapshot): void;
  /** Values that depend on the clock (ages), refreshed on every scrape. */
  refresh?(s: Snapshot, nowSeconds: number): void;
}

export function gauge<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Gauge<L> {
  return new Gauge<L>({ name, help, labelNames: [...labelNames], registers: [registry] });
}

export function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return new Counter<L>({ name, help, labelNames: [...labelNames], registers: [registry] });
}

/** Sets a cumulative count kept by a source; counters cannot be set, only incremented from a reset. */
export function setCounter<L extends string>(c: Counter<L>, labels: Partial<Record<L, string>>, value: number): void {
  c.inc(labels, value);
}
