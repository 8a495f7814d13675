import type { ExporterOptions } from './exporter';

/** Sources and metric sections beyond Ray Serve (Hypha registration, watched services). */
export function extensions(): Pick<ExporterOptions, 'planners' | 'sections'> {
  return { planners: [], sections: [] };
}
