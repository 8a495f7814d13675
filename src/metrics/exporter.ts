import { Registry } from 'prom-client';
import { SAMPLE_ERROR_REASONS, Snapshot, sourceHealths } from '../snapshot/types';
import { REVISION, VERSION } from '../version';
import { counter, gauge, MetricsSection, setCounter } from './section';

const SRC = ['source', 'target'] as const;

/** The exporter's own health: build, config reloads, and per-upstream source health. */
export class ExporterMetrics implements MetricsSection {
  readonly #reloadOk;
  readonly #reloadTs;
  readonly #up;
  readonly #lastSuccess;
  readonly #age;
  readonly #duration;
  readonly #errors;
  readonly #interval;
  readonly #rss;
  readonly #heap;
  readonly #cpu;

  constructor(r: Registry) {
    gauge(r, 'hypha_serve_exporter_build_info', 'Build of the exporter; always 1.', ['version', 'revision', 'nodejs'])
      .set({ version: VERSION, revision: REVISION, nodejs: process.version }, 1);
    this.#reloadOk = gauge(r, 'hypha_serve_exporter_config_last_reload_successful', '1 when the last configuration (re)load succeeded.', []);
    this.#reloadTs = gauge(r, 'hypha_serve_exporter_config_last_reload_success_timestamp_seconds', 'When the configuration was last loaded successfully (Unix seconds).', []);
    this.#up = gauge(r, 'hypha_serve_source_up', '1 when the last sample of the upstream succeeded.', SRC);
    this.#lastSuccess = gauge(r, 'hypha_serve_source_last_success_timestamp_seconds', 'When the upstream was last sampled successfully (Unix seconds).', SRC);
    this.#age = gauge(r, 'hypha_serve_source_sample_age_seconds', 'Age of the data served for the upstream: now minus the last successful sample.', SRC);
    this.#duration = gauge(r, 'hypha_serve_source_sample_duration_seconds', 'Duration of the last sample attempt of the upstream.', SRC);
    this.#interval = gauge(r, 'hypha_serve_source_interval_seconds', 'Configured sampling interval of the upstream; a sample age far past it while source_up stays 1 is a stuck sampler.', SRC);
    this.#errors = counter(r, 'hypha_serve_source_errors_total', 'Failed samples of the upstream by reason.', [...SRC, 'reason']);
    // The process's own footprint, in the exporter's namespace (prom-client's default set fails promtool's lint).
    gauge(r, 'hypha_serve_exporter_start_time_seconds', 'When the exporter process started (Unix seconds).', []).set(Math.round(Date.now() / 1000 - process.uptime()));
    this.#rss = gauge(r, 'hypha_serve_exporter_resident_memory_bytes', 'Resident memory of the exporter process.', []);
    this.#heap = gauge(r, 'hypha_serve_exporter_heap_used_bytes', 'V8 heap in use by the exporter process.', []);
    this.#cpu = counter(r, 'hypha_serve_exporter_cpu_seconds_total', 'CPU time (user + system) used by the exporter process.', []);
  }

  recordReload(ok: boolean, atSeconds: number): void {
    this.#reloadOk.set(ok ? 1 : 0);
    if (ok) this.#reloadTs.set(atSeconds);
  }

  rebuild(s: Snapshot): void {
    for (const m of [this.#up, this.#lastSuccess, this.#duration, this.#age, this.#interval]) m.reset();
    this.#errors.reset();
    for (const h of sourceHealths(s)) {
      const l = { source: h.source, target: h.target };
      this.#up.set(l, h.up ? 1 : 0);
      if (h.lastSuccessSeconds !== undefined) this.#lastSuccess.set(l, h.lastSuccessSeconds);
      if (h.lastDurationSeconds !== undefined) this.#duration.set(l, h.lastDurationSeconds);
      if (h.intervalSeconds !== undefined) this.#interval.set(l, h.intervalSeconds);
      for (const reason of SAMPLE_ERROR_REASONS) setCounter(this.#errors, { ...l, reason }, h.errors[reason]);
    }
  }

  refresh(s: Snapshot, now: number): void {
    const mem = process.memoryUsage();
    this.#rss.set(mem.rss);
    this.#heap.set(mem.heapUsed);
    const cpu = process.cpuUsage();
    this.#cpu.reset();
    this.#cpu.inc((cpu.user + cpu.system) / 1e6);
    for (const h of sourceHealths(s)) {
      if (h.lastSuccessSeconds !== undefined) this.#age.set({ source: h.source, target: h.target }, Math.max(0, now - h.lastSuccessSeconds));
    }
  }
}
