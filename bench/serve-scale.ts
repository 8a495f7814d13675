import { fakeRay, rayConfig } from './fake-ray';
import { servePayload } from './serve-payload';
import { timeIt } from './stats';
import { floorRegistry } from './metrics-scale';
import { exporterWithConfig } from '../test/helpers/exporter';

export interface ServeScaleResult {
  apps: number;
  payloadBytes: number;
  sample: { p50: number; p99: number };
  renderSteady: { p50: number; p99: number };
  renderAfterSample: { p50: number; p99: number };
  floor: { p50: number; p99: number };
  bytes: number;
  series: number;
  rssMb: number;
  requestsPerCycle: number;
}

export async function serveScale(apps: number, rounds = 20): Promise<ServeScaleResult> {
  const bodies = [JSON.stringify(servePayload(apps, 3, 2, 0)), JSON.stringify(servePayload(apps, 3, 2, 0)).replace(/"HEALTHY"/, '"UPSCALING"')];
  let which = 0;
  const up = await fakeRay(() => bodies[which]);
  const h = exporterWithConfig(rayConfig(up.url, { timeout: '30s' }), { logLevel: 'silent' });
  const { exporter } = h;
  exporter.start();
  await exporter.settled();
  const requests0 = up.requests();
  const sample = await timeIt(rounds, async () => {
    which = 1 - which; // a changed payload each cycle, like a live cluster
    await exporter.sampleAll();
  });
  const requestsPerCycle = (up.requests() - requests0) / rounds;
  const renderAfterSample = await timeIt(Math.max(5, Math.floor(rounds / 2)), async () => {
    which = 1 - which;
    await exporter.sampleAll();
    const t0 = performance.now();
    await h.scrape();
    return performance.now() - t0;
  });
  // timeIt above measured sample+render; measure the render part alone on fresh snapshots:
  const rebuildTimes: number[] = [];
  for (let i = 0; i < Math.max(5, Math.floor(rounds / 2)); i++) {
    which = 1 - which;
    await exporter.sampleAll();
    const t0 = performance.now();
    await h.scrape();
    rebuildTimes.push(performance.now() - t0);
  }
  rebuildTimes.sort((a, b) => a - b);
  void renderAfterSample;
  const renderSteady = await timeIt(rounds, () => h.scrape());
  const text = await h.scrape();
  const floor = floorRegistry(text);
  const floorT = await timeIt(rounds, () => floor.metrics());
  const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
  const result: ServeScaleResult = {
    apps,
    payloadBytes: bodies[0].length,
    sample: { p50: sample.p50, p99: sample.p99 },
    renderSteady: { p50: renderSteady.p50, p99: renderSteady.p99 },
    renderAfterSample: { p50: rebuildTimes[Math.floor(rebuildTimes.length / 2)], p99: rebuildTimes[rebuildTimes.length - 1] },
    floor: { p50: floorT.p50, p99: floorT.p99 },
    bytes: Buffer.byteLength(text),
    series,
    rssMb: process.memoryUsage().rss / 1024 / 1024,
    requestsPerCycle,
  };
  await h.close();
  await up.close();
  return result;
}
