import type { ExporterOptions } from './exporter';
import { ServicesMetrics } from '../metrics/services';
import { planWatchedServices } from '../sources/services/planner';
import { HyphaMetrics } from '../metrics/hypha';
import { planHyphaRegistration } from '../sources/hypha/planner';

/** Sources and metric sections beyond Ray Serve (Hypha registration, watched services). */
export function extensions(): Pick<ExporterOptions, 'planners' | 'sections'> {
  return { planners: [planWatchedServices, planHyphaRegistration], sections: [(r) => new ServicesMetrics(r), (r) => new HyphaMetrics(r)] };
}
