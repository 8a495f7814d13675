import type { Registry } from 'prom-client';
import { TableSection } from './section';

/**
 * Hypha connection, per-app registration and the BioEngine workers' own view: the `hypha` group
 * of the declared table (families.ts). Registration gauges exist only while both the app's Ray
 * source and the Hypha source are up (and the app is not in the post-reconnect settle window):
 * an unknown is absent, never a 0.
 */
export class HyphaMetrics extends TableSection {
  constructor(r?: Registry) {
    super('hypha', r);
  }
}
