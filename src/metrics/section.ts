import { Counter, Gauge, Metric, Registry } from 'prom-client';
import type { Snapshot } from '../snapshot/types';
import { collect, familiesOf, Group, ProcessView } from './families';

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

/**
 * The families of one group of the declared table. The exporter's renderer recognises it and
 * renders the group from pre-rendered, cached text; given a prom-client registry (unit tests
 * of a section on its own), it also registers read-only views of its families there.
 */
export class TableSection implements MetricsSection {
  #snapshot: Snapshot = { version: -1, ray: new Map() };

  constructor(readonly group: Group, registry?: Registry) {
    if (!registry) return;
    for (const f of familiesOf(group)) {
      const view = {
        name: f.name,
        help: f.help,
        type: f.type,
        aggregator: 'sum',
        get: async () => ({
          name: f.name, help: f.help, type: f.type, aggregator: 'sum',
          values: collect(f, this.#snapshot, Date.now() / 1000, this.processView()),
        }),
        reset: () => undefined,
      };
      registry.registerMetric(view as unknown as Metric);
    }
  }

  rebuild(s: Snapshot): void {
    this.#snapshot = s;
  }

  /** Facts about the exporter process itself (only the exporter group has any). */
  processView(): ProcessView {
    return {};
  }
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
