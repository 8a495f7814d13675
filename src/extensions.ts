import type { ExporterOptions } from './exporter';
import { ServicesMetrics } from './metrics/services';
import { planWatchedServices } from './sources/services/planner';

/** Sources and metric sections beyond Ray Serve (Hypha registration, watched services). */
export function extensions(): Pick<ExporterOptions, 'planners' | 'sections'> {
  return { planners: [planWatchedServices], sections: [(r) => new ServicesMetrics(r)] };
}
