import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import pino from 'pino';
import fs from 'node:fs';
import path from 'node:path';
import { Exporter } from '../src/exporter/exporter';
import { servePayload } from './serve-payload';
import { timeIt } from './stats';
import { floorRegistry } from './metrics-scale';
import { scrapeText } from '../test/helpers/exporter';

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
  let requests = 0;
  const srv = http.createServer((_req, res) => {
    requests++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(bodies[which]);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as AddressInfo).port;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  const cfg = path.join(dir, 'c.yml');
  fs.writeFileSync(cfg, `ray_clusters:\n  - name: bench\n    dashboard_url: http://127.0.0.1:${port}\n    interval: 1h\n    timeout: 30s\n    max_apps: 100000\n    proxy_probe: {enabled: false}\n`);
  const exporter = new Exporter({ configFile: cfg, log: pino({ level: 'silent' }) });
  exporter.start();
  await exporter.settled();
  requests = 0;
  const sample = await timeIt(rounds, async () => {
    which = 1 - which; // a changed payload each cycle, like a live cluster
    await exporter.sampleAll();
  });
  const requestsPerCycle = requests / rounds;
  const renderAfterSample = await timeIt(Math.max(5, Math.floor(rounds / 2)), async () => {
    which = 1 - which;
    await exporter.sampleAll();
    const t0 = performance.now();
    await scrapeText(exporter.metrics);
    return performance.now() - t0;
  });
  // timeIt above measured sample+render; measure the render part alone on fresh snapshots:
  const rebuildTimes: number[] = [];
  for (let i = 0; i < Math.max(5, Math.floor(rounds / 2)); i++) {
    which = 1 - which;
    await exporter.sampleAll();
    const t0 = performance.now();
    await scrapeText(exporter.metrics);
    rebuildTimes.push(performance.now() - t0);
  }
  rebuildTimes.sort((a, b) => a - b);
  void renderAfterSample;
  const renderSteady = await timeIt(rounds, () => scrapeText(exporter.metrics));
  const text = await scrapeText(exporter.metrics);
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
  await exporter.stop();
  await new Promise<void>((r) => srv.close(() => r()));
  fs.rmSync(dir, { recursive: true, force: true });
  return result;
}
