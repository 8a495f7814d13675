// Child process of bench/metrics-scale.ts: the exporter alone (its upstream is the parent), so
// that the resident memory measured is the exporter's; built by the in-process test helper, as
// src/main.ts builds it. argv: config file, cycles, heap snapshot (0/1).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { exporterWithConfig } from '../test/helpers/exporter';

interface HeapSnapshotFile {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

/** Self size by node kind and constructor name: where the heap goes. */
function topRetainers(file: string, n = 12): { what: string; mb: number }[] {
  const snap = JSON.parse(fs.readFileSync(file, 'utf8')) as HeapSnapshotFile;
  const f = snap.snapshot.meta.node_fields;
  const [typeI, nameI, sizeI] = ['type', 'name', 'self_size'].map((x) => f.indexOf(x));
  const types = snap.snapshot.meta.node_types[0];
  const by = new Map<string, number>();
  for (let i = 0; i < snap.nodes.length; i += f.length) {
    const type = types[snap.nodes[i + typeI]];
    const what = type === 'object' || type === 'closure' ? `${type} ${snap.strings[snap.nodes[i + nameI]]}` : type;
    by.set(what, (by.get(what) ?? 0) + snap.nodes[i + sizeI]);
  }
  return [...by.entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([what, bytes]) => ({ what, mb: bytes / 1048576 }));
}

async function main(): Promise<void> {
  const [file, cyclesArg, heapArg] = process.argv.slice(2);
  const cycles = Number(cyclesArg);
  const h = exporterWithConfig({ file }, { logLevel: 'silent' });
  const { exporter } = h;
  exporter.start();
  await exporter.settled();
  const sample: number[] = [];
  const render: number[] = [];
  for (let i = 0; i < cycles; i++) {
    let t0 = performance.now();
    await exporter.sampleAll();
    sample.push(performance.now() - t0);
    if (process.env.BENCH_SAMPLE_ONLY === '1') continue;
    t0 = performance.now();
    await exporter.metrics.scrape('prometheus', 'identity');
    render.push(performance.now() - t0);
    await exporter.metrics.scrape('prometheus', 'gzip');
  }
  global.gc?.();
  // Idle as between two scrapes, long enough for V8's memory reducer to give pages back.
  await new Promise((r) => setTimeout(r, Number(process.env.BENCH_IDLE_MS ?? 200)));
  global.gc?.();
  const mem = process.memoryUsage();
  if (process.env.BENCH_DEBUG === '1') process.stderr.write(`${JSON.stringify(mem)} ${fs.readFileSync('/proc/self/status', 'utf8').split('\n').filter((l) => /^Rss/.test(l)).join(' ')}\n`);
  sample.sort((a, b) => a - b);
  render.sort((a, b) => b - a).reverse();
  let top: { what: string; mb: number }[] | undefined;
  if (heapArg === '1') {
    const snapFile = v8.writeHeapSnapshot(path.join(os.tmpdir(), `hse-bench-${process.pid}.heapsnapshot`));
    top = topRetainers(snapFile);
    fs.rmSync(snapFile, { force: true });
  }
  process.send?.({
    rssMb: mem.rss / 1048576, heapUsedMb: mem.heapUsed / 1048576, externalMb: mem.external / 1048576,
    sampleP50: sample[Math.floor(sample.length / 2)], sampleMax: sample[sample.length - 1],
    renderP50: render[Math.floor(render.length / 2)], renderMax: render[render.length - 1], top,
  });
  await h.close();
  setTimeout(() => process.exit(0), 100);
}

main().catch((e: unknown) => {
  process.stderr.write(`${String(e)}\n`);
  process.exit(1);
});
