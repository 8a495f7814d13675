// Benchmarks against the real peers (`npm run bench:real`):
//  (a) /metrics of the exporter vs Ray's own metrics endpoint, scraped on the same real cluster;
//  (b) the Hypha registry source at 100 / 1,000 / 5,000 apps in one workspace: cycle time and
//      RPCs per cycle (one listServices per workspace, whatever the number of apps);
//  (c) with the argument `time-to-page` only: incidents 1a, 1b and 2 replayed at the shipped
//      defaults on Prometheus 2.42 and 3.x (bench/shipped-replay.ts; `npm run bench:time-to-page:real`).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Session } from 'node:inspector/promises';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HyphaConnection } from '../src/sources/hypha/client';
import { startHypha } from '../test/harness/hypha';
import { registerMany } from '../test/harness/hypha-registrant';
import { rayAppConfig, startRay } from '../test/harness/ray';
import { waitFor } from '../test/harness/proc';
import { servePayload } from './serve-payload';
import { ShippedResult, shippedTimeToPage } from './shipped-replay';
import { quantile, writeSection } from './stats';
import { exporterWithConfig } from '../test/helpers/exporter';
import { spawnExporter } from '../test/harness/exporter-process';
import { fakeRay } from './fake-ray';
import { onlyProcess, plainEnv, rssMb } from './bin-memory';

const f1 = (x: number) => x.toFixed(1);

async function timedGets(url: string, n: number): Promise<{ p50: number; p99: number; bytes: number; status: number }> {
  const xs: number[] = [];
  let bytes = 0;
  let status = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await fetch(url);
    const body = await r.text();
    xs.push(performance.now() - t0);
    bytes = body.length;
    status = r.status;
  }
  xs.sort((a, b) => a - b);
  return { p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), bytes, status };
}

async function rayVsExporter(): Promise<string> {
  const ray = await startRay();
  const h = exporterWithConfig(`ray_clusters:\n  - name: bench\n    dashboard_url: ${ray.dashboardUrl}\n    interval: 2s\n`, { logLevel: 'silent' });
  const srv = http.createServer((_req, res) => {
    h.scrape().then(
      (body) => res.end(body),
      () => res.writeHead(500).end(),
    );
  });
  try {
    await ray.deploy(rayAppConfig('two-step.yaml'));
    await ray.waitApp('two-step', (a) => a.status === 'RUNNING', 180_000);
    await ray.request('/two-step?text=bench', 60_000);
    h.exporter.start();
    await h.exporter.settled();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as AddressInfo).port;
    const rayUrl = `http://127.0.0.1:${ray.metricsExportPort}/metrics`;
    await waitFor('Ray metrics agent serving Serve metrics', async () => (await (await fetch(rayUrl)).text()).includes('ray_serve_'), 120_000, 2000);
    const rayM = await timedGets(rayUrl, 50);
    const ours = await timedGets(`http://127.0.0.1:${port}/metrics`, 50);
    return [
      'Same real single-node Ray 2.60 cluster, app `two-step` RUNNING; 50 sequential GETs each, loopback, ms.',
      '',
      '| endpoint | p50 | p99 | body bytes |',
      '|---|---|---|---|',
      `| Ray's own metrics agent (\`--metrics-export-port\`) | ${f1(rayM.p50)} | ${f1(rayM.p99)} | ${rayM.bytes} |`,
      `| hypha-serve-exporter \`/metrics\` | ${f1(ours.p50)} | ${f1(ours.p99)} | ${ours.bytes} |`,
    ].join('\n');
  } finally {
    srv.close();
    await h.close();
    await ray.stop();
  }
}

/**
 * One plain GET on a new connection, ms to the last byte. Not a kept-alive one: with seconds between scrapes,
 * the server's 5 s keep-alive timeout can close it just as it is reused (ECONNRESET on a loaded machine).
 */
function plainScrape(url: string): Promise<{ ms: number; text: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    http.get(url, { agent: false, headers: { 'accept-encoding': 'identity' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ ms: performance.now() - t0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** The exporter config of the registry bench: the fake Ray of `rayUrl` and the Hypha server, `{workspace}/*:{app}` templates. */
function hyphaScaleConfig(rayUrl: string, hyphaUrl: string, interval: string): string {
  return [
    `global: {interval: ${interval}, timeout: 30s}`,
    `ray_clusters:\n  - {name: bench, dashboard_url: "${rayUrl}", max_apps: 100000, max_response_bytes: 1000000000, proxy_probe: {enabled: false}}`,
    `hypha: {name: bench, server_url: "${hyphaUrl}", bearer_token_env: HYPHA_TOKEN}`,
    'watched_services: []',
    'hypha_registration:',
    '  workers: {discover: false}',
    '  clusters:',
    '    - cluster: bench',
    '      bioengine: {enabled: false}',
    '      templates: [{service: "{workspace}/*:{app}"}]',
    '',
  ].join('\n');
}

const registeredCount = (text: string) => (text.match(/^hypha_serve_app_registered\{.*\} 1$/gm) ?? []).length;

interface HyphaProcessFigures {
  rssMb: number;
  /** Per sample, ms: hypha_serve_source_sample_duration_seconds of the Ray and the Hypha source, and the first plain scrape after it (to the last byte). */
  raySampleMs: number[];
  hyphaSampleMs: number[];
  scrapeMs: number[];
}

/**
 * The plain bin (test/harness/exporter-process.ts, no NODE_OPTIONS) at `n` services: `cycles` samples 10 s
 * apart (at 5 s a loaded machine overlaps the 5,000-service samples), each followed by a plain scrape 6 s
 * after the Ray request; RSS of its one process after an idle pause.
 */
async function hyphaProcess(n: number, rayUrl: string, hyphaUrl: string, token: string, rayRequests: () => number, cycles: number): Promise<HyphaProcessFigures> {
  const ex = await spawnExporter({
    name: `bench-hypha-${n}`, config: hyphaScaleConfig(rayUrl, hyphaUrl, '10s'), baseEnv: plainEnv(), env: { HYPHA_TOKEN: token }, logLevel: 'warn',
  });
  try {
    const url = `${ex.url}/metrics`;
    await waitFor('registered series (process)', async () => registeredCount((await plainScrape(url)).text) === n, 180_000, 1000);
    const figures: HyphaProcessFigures = { rssMb: 0, raySampleMs: [], hyphaSampleMs: [], scrapeMs: [] };
    const seconds = (text: string, source: string) => Number(new RegExp(`^hypha_serve_source_sample_duration_seconds\\{source="${source}"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1]) * 1000;
    for (let i = 0, seen = rayRequests(); i < cycles; i++) {
      await waitFor('a sample (process)', async () => rayRequests() > seen, 60_000, 100);
      seen = rayRequests();
      // The Ray and Hypha samples of the cycle land in the snapshot, then one scrape as a browser would (plain).
      await new Promise((r) => setTimeout(r, 6000));
      const { ms, text } = await plainScrape(url);
      figures.scrapeMs.push(ms);
      figures.raySampleMs.push(seconds(text, 'ray'));
      figures.hyphaSampleMs.push(seconds(text, 'hypha'));
    }
    await new Promise((r) => setTimeout(r, 2000));
    onlyProcess(ex.proc.pid);
    figures.rssMb = rssMb(ex.proc.pid);
    return figures;
  } finally {
    await ex.stop();
  }
}

/** BENCH_CPU_PROFILE=dir: a V8 CPU profile of the measured in-process cycles, for finding where their time goes. */
async function startProfile(): Promise<{ stop(name: string): Promise<void> } | undefined> {
  const dir = process.env.BENCH_CPU_PROFILE;
  if (!dir) return undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop(name: string) {
      const { profile } = await session.post('Profiler.stop');
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    },
  };
}

async function hyphaScale(sizes: number[]): Promise<string> {
  const hypha = await startHypha({});
  const calls: Record<string, number> = {};
  /** Wall time of each listServices: the Hypha server composing the answer, its transfer and its decoding here. */
  const listMs: number[] = [];
  // Count every RPC the exporter's Hypha connection makes, by method (the in-process exporter's).
  for (const m of ['listServices', 'getServiceInfo', 'callDirect', 'subscribe'] as const) {
    const orig = HyphaConnection.prototype[m] as (...a: unknown[]) => Promise<unknown>;
    (HyphaConnection.prototype as unknown as Record<string, unknown>)[m] = function (this: HyphaConnection, ...a: unknown[]) {
      calls[m] = (calls[m] ?? 0) + 1;
      const t0 = performance.now();
      const r = orig.apply(this, a);
      if (m === 'listServices') void r.then(() => listMs.push(performance.now() - t0), () => undefined);
      return r;
    };
  }
  const cycles = 10;
  const rows: string[] = [];
  const processRows: string[] = [];
  const p50 = (xs: number[]) => quantile([...xs].sort((a, b) => a - b), 0.5);
  const max = (xs: number[]) => Math.max(...xs);
  try {
    for (const n of sizes) {
      const payload = servePayload(n, 3, 1, 0) as { applications: Record<string, unknown> };
      const apps = Object.keys(payload.applications);
      // Hypha caps a client at 1,000 services: register in batches from several clients.
      const clients = [];
      for (let i = 0; i < apps.length; i += 1000) {
        clients.push(await registerMany({ serverUrl: hypha.url, token: hypha.rootToken, clientId: `bench-${n}-${i}`, serviceIds: apps.slice(i, i + 1000) }));
      }
      const body = JSON.stringify(payload);
      const ray = await fakeRay(() => body);
      try {
        // The process first (its figures are not disturbed by the in-process run's heap in this process).
        const proc = await hyphaProcess(n, ray.url, hypha.url, hypha.rootToken, () => ray.requests(), Number(process.env.BENCH_HYPHA_PROCESS_CYCLES ?? 5));
        const sums = proc.raySampleMs.map((r, i) => Math.max(r, proc.hyphaSampleMs[i]) + proc.scrapeMs[i]);
        processRows.push(`| ${n} | one process, ${proc.rssMb.toFixed(0)} MB | ${f1(p50(proc.raySampleMs))} / ${f1(max(proc.raySampleMs))} | `
          + `${f1(p50(proc.hyphaSampleMs))} / ${f1(max(proc.hyphaSampleMs))} | ${f1(p50(proc.scrapeMs))} / ${f1(max(proc.scrapeMs))} | ${f1(p50(sums))} / ${f1(max(sums))} |`);
        process.stdout.write(`hypha scale ${n}: process ${processRows[processRows.length - 1]}\n`);

        const h = exporterWithConfig(hyphaScaleConfig(ray.url, hypha.url, '1h'), { env: { HYPHA_TOKEN: hypha.rootToken }, logLevel: 'silent' });
        try {
          h.exporter.start();
          await h.exporter.settled();
          await waitFor('registered series', async () => registeredCount(await h.scrape()) === n, 120_000, 500);
          for (const k of Object.keys(calls)) delete calls[k];
          listMs.length = 0;
          const cpuMs: number[] = [];
          const times: number[] = [];
          const renders: number[] = [];
          let text = '';
          const profile = await startProfile();
          for (let i = 0; i < cycles; i++) {
            const cpu0 = process.cpuUsage();
            let t0 = performance.now();
            await h.exporter.sampleAll();
            times.push(performance.now() - t0);
            // The render is the body as the HTTP handler writes it (buffers); decoding it back into one
            // string, only to count series here, is not part of it.
            t0 = performance.now();
            const body = await h.exporter.metrics.scrape('prometheus', 'identity');
            renders.push(performance.now() - t0);
            const cpu = process.cpuUsage(cpu0);
            cpuMs.push((cpu.user + cpu.system) / 1000);
            if (i === cycles - 1) text = Buffer.concat(body.chunks).toString('utf8');
          }
          await profile?.stop(`hypha-scale-${n}`);
          const both = times.map((t, i) => t + renders[i]);
          const perCycle = Object.entries(calls).map(([k, v]) => `${k} ${v / cycles}`).join(', ') || 'none';
          rows.push(`| ${n} | ${registeredCount(text)} | ${f1(p50(times))} / ${f1(max(times))} | ${perCycle} | ${f1(p50(listMs))} / ${f1(max(listMs))} | ${f1(p50(renders))} / ${f1(max(renders))} | `
            + `${f1(p50(both))} / ${f1(max(both))} | ${f1(p50(cpuMs))} / ${f1(max(cpuMs))} | ${(text.length / 1e6).toFixed(2)} MB |`);
          process.stdout.write(`hypha scale ${n}: in-process ${rows[rows.length - 1]}\n`);
        } finally {
          await h.close();
        }
      } finally {
        await ray.close();
        for (const c of clients) await c.disconnect();
      }
    }
  } finally {
    await hypha.stop();
  }
  return [
    `Command: \`npm run build && BENCH_ONLY=hypha-scale BENCH_HYPHA_APPS=${sizes.join(',')} node dist/bench/real-stack.js\` (part of \`npm run bench:real\`), `
      + `${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores shared with other jobs (figures under load), Node ${process.version}.`,
    'Real Hypha 0.21.137; N services registered in one workspace (several clients, 1,000 each); a Serve payload of N apps × 3 deployments from the benchmarks\' fake Ray (bench/fake-ray.ts); `templates` mapping `{workspace}/*:{app}`.',
    '',
    'The plain bin (`spawnExporter`, no NODE_OPTIONS; sampling every 10 s), one scrape 6 s after each of 5 samples began, RSS of its process 2 s after the last (`ps`: one process, no child). '
      + 'Sample times as the exporter reports them (`hypha_serve_source_sample_duration_seconds`; the two sources sample concurrently), scrape = plain GET to the last byte, ms, p50 / max:',
    '',
    '| services | RSS | Ray sample | Hypha registry sample | first scrape after the sample | cycle + scrape (slower sample + scrape) |',
    '|---|---|---|---|---|---|',
    ...processRows,
    '',
    `The in-process exporter (\`exporterWithConfig\`), ${cycles} cycles: \`sampleAll()\` (Ray + Hypha registry) then the first render after it (\`MetricsRenderer.scrape\`, plain: the body's buffers as the HTTP handler writes them), ms, p50 / max. `
      + 'listServices is that RPC\'s wall time (the Hypha server composing the answer, the transfer, its decoding here); CPU is this process\'s user + system time over the cycle and render (what the exporter itself spends; the rest of the wall time it waits for Hypha):',
    '',
    '| services | registered series = 1 | cycle (Ray + Hypha) | Hypha RPCs per cycle | listServices | render after the cycle | cycle + render | CPU of cycle + render | /metrics bytes |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** Before issue 19 (the rules at 1220f8e, one `for:` per alert), as measured and computed then. */
const BEFORE: Record<string, string> = {
  'incident 1a': '332 s measured (5 min `for:`; computed ≤ 6.5 min)',
  'incident 1b': 'not measured; computed ≤ 6.5 min (5 min `for:`)',
  'incident 2': '173 s measured from the restart (2 min `for:`; computed ≤ 3.5 min + interval)',
};
const TARGET: Record<string, string> = {
  'incident 1a': '≤ 120 s', 'incident 1b': '≤ 120 s', 'incident 2': '≤ 90 s', 'incident 2 (from the restart)': '–', 'server without a stable id': '– (ticket)',
  'incident 1 fixed': 'every engine within one evaluation interval (15 s) of Prometheus 2.42',
};
const COMPUTED: Record<string, string> = {
  'incident 1a': '≤ 75 s (15 s sample + 15 s scrape + one 15 s evaluation of the alert over the exporter\'s decision + 0 s wait + 30 s `group_wait`)',
  'incident 1b': '≤ 75 s (the same)',
  'incident 2': '≤ 65 s (≤ 5 s reconnect backoff, the comeback sampled at once + 15 s scrape + one 15 s evaluation + 0 s wait + 30 s `group_wait`)',
  'incident 1 fixed': '≤ 45 s (15 s sample + 15 s scrape + one 15 s evaluation), in the engine (no notification delay)',
  'incident 2 (from the restart)': 'the above + Hypha\'s own restart',
  'server without a stable id': '≤ 2 min (1 min `for:` + 30 s `group_wait` of the chat route + sampling)',
};

/** A path's label is a Prometheus version ("2.42") or an engine's name and version ("Thanos 0.42.4"). */
const engineColumn = (label: string): string => (/^\d/.test(label) ? `Prometheus ${label}` : label);

function shippedTable(rs: ShippedResult[]): string {
  const versions = [...new Set(rs.map((r) => r.prometheus))];
  const scenarios = [...new Set(rs.map((r) => r.scenario))];
  const rows = scenarios.map((s) => {
    const cells = versions.map((v) => {
      const r = rs.find((x) => x.scenario === s && x.prometheus === v);
      // Every other engine also against Prometheus 2.42, the reference (issue 37: within one evaluation interval).
      const ref = rs.find((x) => x.scenario === s && x.prometheus === versions[0]);
      const delta = r && ref && r !== ref ? `, ${r.ms >= ref.ms ? '+' : '−'}${(Math.abs(r.ms - ref.ms) / 1000).toFixed(1)} s` : '';
      return r ? `${(r.ms / 1000).toFixed(1)} s${r.cause || delta ? ` (${[r.cause, delta.slice(2)].filter(Boolean).join('; ')})` : ''}` : '–';
    });
    const alert = rs.find((x) => x.scenario === s)?.alert ?? '';
    return `| ${s} | \`${alert}\` | ${BEFORE[s] ?? '–'} | ${cells.join(' | ')} | ${COMPUTED[s] ?? '–'} | ${TARGET[s] ?? '–'} |`;
  });
  return [
    `Command: \`npm run bench:time-to-page:real\` (${new Date().toISOString().slice(0, 10)}, 2 shared cores). Real Hypha (artifact manager on moto S3), Ray Serve with BioEngine-shaped apps ` +
      '(test/ray-apps/bioengine_like.py, the 0.16.1 proxy gate), the exporter, the shipped rules unchanged, exporter sampling, scrape and evaluation every 15 s, ' +
      'Alertmanager 0.25 with examples/alertmanager.yml (group_wait 30 s), one Alertmanager and webhook per rule engine: Prometheus 2.42 and 3.x, and when built ' +
      '(scripts/setup-engines.sh) Thanos Ruler and vmalert on VictoriaMetrics, the latter at VictoriaMetrics\' production flags (-search.latencyOffset and -rule.evalDelay 30 s) ' +
      'with the pack\'s vmalert files (rules/vmalert/: each group\'s eval_delay and latency_offset 5 s, eval_alignment false; docs/engines.md), ' +
      'and once more with vmalert -evaluationInterval=5s. Fault times are observed on the upstream: ' +
      '1a when Hypha stops listing the app\'s service (polled every 250 ms), 1b when Ray reports the cold-deployed app RUNNING, 2 when the restarted Hypha answers readiness under its new server id. ' +
      '"incident 1 fixed": a call through a DeploymentHandle wakes both apps, and the time runs from Hypha listing both again to the page no longer firing in each engine. ' +
      'In brackets: the cause the page named, and each engine\'s difference to Prometheus 2.42 (the first column).',
    '',
    `| fault | alert | before (1220f8e) | after, ${versions.map(engineColumn).join(' | after, ')} | after, computed worst case | target |`,
    `|---|---|---|${versions.map(() => '---|').join('')}---|---|`,
    ...rows,
  ].join('\n');
}

async function main(): Promise<void> {
  const file = path.resolve(__dirname, '..', '..', 'BENCHMARKS.md');
  if (process.argv.includes('time-to-page')) {
    const rs = await shippedTimeToPage();
    const t = shippedTable(rs);
    process.stdout.write(`\n${t}\n`);
    writeSection(file, 'time-to-page-shipped', `## Time to page at the shipped defaults (issue 19, real stack)\n\n${t}`);
    return;
  }
  const sizes = (process.env.BENCH_HYPHA_APPS ?? '100,1000,5000').split(',').map(Number);
  const h = await hyphaScale(sizes);
  process.stdout.write(`\n${h}\n`);
  writeSection(file, 'hypha-scale', `## Hypha registry source at scale\n\n${h}`);
  if (process.env.BENCH_ONLY === 'hypha-scale') return;
  const r = await rayVsExporter();
  process.stdout.write(`\n${r}\n`);
  writeSection(file, 'ray-vs-exporter', `## Scrape latency: the exporter vs Ray's own metrics endpoint\n\nCommand: \`npm run bench:real\`.\n\n${r}`);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
