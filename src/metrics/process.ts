import { collectDefaultMetrics, Registry } from 'prom-client';

// prom-client's `*_total` twins of these three gauges fail promtool's lint ("non-counter metrics
// should not have _total suffix"); the unsuffixed gauges carry the same counts.
const LINT_FAILING = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

let defaultCollectors: Registry | undefined;

/**
 * The standard process and Node.js families (`process_resident_memory_bytes`,
 * `process_cpu_seconds_total`, `process_start_time_seconds`, `nodejs_*`) from prom-client's
 * default collectors. One prom-client Registry per process: the collectors observe the process (GC, event
 * loop), not an exporter instance, and registering them twice would duplicate the observers.
 */
export function processMetrics(): Registry {
  if (!defaultCollectors) {
    defaultCollectors = new Registry();
    collectDefaultMetrics({ register: defaultCollectors });
    for (const name of LINT_FAILING) defaultCollectors.removeSingleMetric(name);
  }
  return defaultCollectors;
}
