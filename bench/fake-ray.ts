// The benchmarks' one fake Ray: the Serve API on loopback through the tests' fake upstream
// (test/helpers/http-upstream.ts), answering with a synthetic Ray 2.60 payload (bench/serve-payload.ts),
// and the exporter config that points at it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startUpstream } from '../test/helpers/http-upstream';
import { servePayload } from './serve-payload';

type Payload = { applications: Record<string, { last_deployed_time_s: number; deployments: Record<string, { status: string }> }> };

/** The base payload, and one where `fraction` of the apps changed (deploy time and every deployment's status). */
export function payloads(apps: number, fraction: number): [string, string] {
  const base = servePayload(apps, 3, 2, 0) as Payload;
  const changed = JSON.parse(JSON.stringify(base)) as Payload;
  const names = Object.keys(changed.applications);
  const n = Math.max(1, Math.round(names.length * fraction));
  for (const name of names.slice(0, n)) {
    const a = changed.applications[name];
    a.last_deployed_time_s += 1;
    for (const d of Object.values(a.deployments)) d.status = 'UPSCALING';
  }
  return [JSON.stringify(base), JSON.stringify(changed)];
}

export interface FakeRay {
  /** http://127.0.0.1:port, the cluster's dashboard_url. */
  url: string;
  /** Serve API requests answered (or left hanging) so far. */
  requests(): number;
  close(): Promise<void>;
}

/**
 * Answers every request with `body()` (JSON); undefined: accepts the request and never answers (a hung
 * upstream; close() ends those connections).
 */
export async function fakeRay(body: () => string | undefined): Promise<FakeRay> {
  let count = 0;
  const up = await startUpstream((_req, res) => {
    count++;
    // The helper keeps a line per request; the churn bench makes tens of thousands in the heap it measures.
    up.requests.length = 0;
    const text = body();
    if (text === undefined) return;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(text);
  });
  return { url: up.url, requests: () => count, close: () => up.close() };
}

/**
 * The exporter config of the benchmarks: one cluster `bench` on `url`, proxy probes off, room for any number
 * of apps and any body size; `extra` is more YAML under the cluster (four-space indent).
 */
export function rayConfig(url: string, o: { interval?: string; timeout?: string; extra?: string } = {}): string {
  return `ray_clusters:\n  - name: bench\n    dashboard_url: ${url}\n    interval: ${o.interval ?? '1h'}\n    timeout: ${o.timeout ?? '60s'}\n`
    + `    max_apps: 100000\n    max_response_bytes: 1000000000\n    proxy_probe: {enabled: false}\n${o.extra ?? ''}`;
}

/** rayConfig(url) in a temp file, for an exporter that reads a path (a child process). */
export function configFor(url: string): { file: string; cleanup(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-metrics-'));
  const file = path.join(dir, 'c.yml');
  fs.writeFileSync(file, rayConfig(url));
  return { file, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}
