import { Registry } from 'prom-client';
import { SnapshotStore } from '../snapshot/store';
import { ExporterMetrics } from './exporter';
import { MetricsSection } from './section';
import { RayMetrics } from './ray';

/** Renders /metrics from the latest snapshot; never touches an upstream. */
export class MetricsRenderer {
  readonly registry = new Registry();
  readonly exporter: ExporterMetrics;
  readonly #sections: MetricsSection[];
  #renderedVersion = -1;

  constructor(private readonly store: SnapshotStore, extra: ((r: Registry) => MetricsSection)[] = []) {
    this.exporter = new ExporterMetrics(this.registry);
    this.#sections = [this.exporter, new RayMetrics(this.registry), ...extra.map((f) => f(this.registry))];
  }

  /** Brings the registry up to date with the snapshot (cheap when nothing changed). */
  sync(): void {
    const s = this.store.get();
    if (s.version !== this.#renderedVersion) {
      for (const sec of this.#sections) sec.rebuild(s);
      this.#renderedVersion = s.version;
    }
    const now = Date.now() / 1000;
    for (const sec of this.#sections) sec.refresh?.(s, now);
  }

  async render(): Promise<string> {
    this.sync();
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
