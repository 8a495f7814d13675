import { exporterWithConfig, type InProcessExporter } from '../test/helpers/exporter';
import { seriesValue } from '../test/helpers/exposition';
import { fakeRay, rayConfig } from './fake-ray';
import { servePayload } from './serve-payload';
import { quantile } from './stats';

/** The in-process exporter (test/helpers/exporter.ts) on the shared fake Ray answering `body()`; closed after `fn`. */
async function withExporter<T>(body: () => string | undefined, o: { timeout?: string }, fn: (h: InProcessExporter) => Promise<T>): Promise<T> {
  const up = await fakeRay(body);
  const h = exporterWithConfig(rayConfig(up.url, o), { logLevel: 'silent' });
  try {
    return await fn(h);
  } finally {
    await h.close().catch(() => undefined);
    await up.close();
  }
}

/** N cycles, each with 10 fresh app names (the previous ones deleted): series must not accumulate. */
export async function churn(cycles: number): Promise<{ cycles: number; rssBeforeMb: number; rssAfterMb: number; heapBeforeMb: number; heapAfterMb: number; seriesFirst: number; seriesLast: number; ms: number }> {
  let seed = 0;
  return withExporter(() => JSON.stringify(servePayload(10, 3, 1, seed)), {}, async (h) => {
    const { exporter } = h;
    exporter.start();
    await exporter.settled();
    const count = (t: string) => t.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    const seriesFirst = count(await h.scrape());
    const warm = Math.min(500, cycles / 10);
    for (let i = 0; i < warm; i++) { seed++; await exporter.sampleAll(); await h.scrape(); }
    global.gc?.();
    const before = process.memoryUsage();
    const t0 = performance.now();
    for (let i = 0; i < cycles; i++) {
      seed++;
      await exporter.sampleAll();
      await h.scrape();
    }
    const ms = performance.now() - t0;
    global.gc?.();
    const after = process.memoryUsage();
    const seriesLast = count(await h.scrape());
    return { cycles, rssBeforeMb: before.rss / 1048576, rssAfterMb: after.rss / 1048576, heapBeforeMb: before.heapUsed / 1048576, heapAfterMb: after.heapUsed / 1048576, seriesFirst, seriesLast, ms };
  });
}

/** /metrics latency while the Serve API accepts connections and never answers. */
export async function scrapeDuringHang(scrapes: number): Promise<{ p50: number; p99: number; max: number; sourceUp: string }> {
  let hang = false;
  const body = JSON.stringify(servePayload(100, 3, 2, 0));
  // Once `hang` is set: accept, never answer.
  return withExporter(() => (hang ? undefined : body), { timeout: '30s' }, async (h) => {
    const { exporter } = h;
    exporter.start();
    await exporter.settled();
    hang = true;
    const inFlight = exporter.sampleAll(); // a sample stuck on the hung upstream for 30 s
    const xs: number[] = [];
    for (let i = 0; i < scrapes; i++) {
      const t0 = performance.now();
      await h.scrape();
      xs.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 5));
    }
    xs.sort((a, b) => a - b);
    const text = await h.scrape();
    const up = String(seriesValue(text, 'hypha_serve_source_up', { source: 'ray', ray_cluster: 'bench' }) ?? '?');
    void inFlight;
    return { p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), max: xs[xs.length - 1], sourceUp: up };
  });
}
