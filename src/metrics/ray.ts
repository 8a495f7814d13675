import type { Registry } from 'prom-client';
import { TableSection } from './section';

/** Ray Serve application, deployment and proxy state: the `ray` group of the declared table (families.ts). */
export class RayMetrics extends TableSection {
  constructor(r?: Registry) {
    super('ray', r);
  }
}
