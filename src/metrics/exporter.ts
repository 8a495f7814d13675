import type { Registry } from 'prom-client';
import type { ProcessView } from './families';
import { TableSection } from './section';

/** The exporter's own health: build, config reloads, process footprint and per-upstream source health. */
export class ExporterMetrics extends TableSection {
  readonly #proc: ProcessView = {};

  constructor(r?: Registry) {
    super('exporter', r);
  }

  override processView(): ProcessView {
    return this.#proc;
  }

  recordReload(ok: boolean, atSeconds: number): void {
    this.#proc.reloadOk = ok;
    if (ok) this.#proc.reloadSuccessSeconds = atSeconds;
  }
}
