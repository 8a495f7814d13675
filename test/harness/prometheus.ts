/**
 * A real Prometheus for integration and e2e tests: Debian's /usr/bin/prometheus (2.42) by default,
 * or any other build, e.g. Prometheus 3 from scripts/setup-prometheus3.sh (see
 * prometheus-versions.ts). It scrapes the given targets, evaluates the given rule files, optionally
 * sends alerts to an Alertmanager, listens on a free loopback port, keeps its TSDB in a private
 * temp dir, and is ended by PID (stop() also removes the temp dir).
 *
 * What differs between 2.42 and 3.x and matters here: 3.x refuses a scrape whose Content-Type it
 * does not know unless the scrape config names a fallback_scrape_protocol (a key 2.42's strict
 * config loader rejects, so it is written only for 3.x); 3.x has no embedded web UI in a
 * module-proxy build but the same HTTP API, /-/ready and /-/reload (--web.enable-lifecycle still
 * exists); 3.x validates names as UTF-8 by default (the exporter's names are legacy-valid either way);
 * Alertmanager API v1 is gone in 3.x (we always use v2).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { freePort } from './ports';
import { Proc, startProc, waitFor } from './proc';

export const DEFAULT_PROMETHEUS_BIN = '/usr/bin/prometheus';

export interface ScrapeTarget {
  /** job_name; also the `job` label of the scraped series. */
  job: string;
  /** host:port addresses. */
  targets: string[];
  metricsPath?: string;
  /** URL query parameters, e.g. { module: ['x'] } for multi-target exporters. */
  params?: Record<string, string[]>;
  /** Extra target labels. */
  labels?: Record<string, string>;
  honorLabels?: boolean;
  /** Default: the global scrape interval. */
  scrapeInterval?: string;
  /** Default: the scrape interval, capped at 10s by Prometheus' own rule (timeout ≤ interval). */
  scrapeTimeout?: string;
  /**
   * Prometheus 3 only: the format assumed when the target's Content-Type is missing or unknown
   * (3.x otherwise fails the scrape; 2.x always falls back to the text format, so this is not
   * written for 2.x).
   */
  fallbackScrapeProtocol?: 'PrometheusText0.0.4' | 'PrometheusText1.0.0' | 'OpenMetricsText0.0.1' | 'OpenMetricsText1.0.0' | 'PrometheusProto';
  /** Default http; https with tlsConfig (Prometheus' tls_config, e.g. { ca_file }) for an exporter serving TLS. */
  scheme?: 'http' | 'https';
  tlsConfig?: Record<string, string | boolean>;
}

/** A Prometheus build's version, from `prometheus --version`. */
export interface PrometheusBuildVersion {
  major: number;
  minor: number;
  patch: number;
  /** e.g. "2.42.0+ds" or "3.16.0". */
  raw: string;
}

export interface PrometheusOptions {
  scrapeTargets: ScrapeTarget[];
  /** Absolute paths of rule files to load. */
  ruleFiles?: string[];
  /** Default 1s. */
  scrapeInterval?: string;
  /** Default 1s. */
  evaluationInterval?: string;
  /** e.g. http://127.0.0.1:9093: alerts are sent there (API v2). */
  alertmanagerUrl?: string;
  externalLabels?: Record<string, string>;
  /** Default $PROMETHEUS_BIN, else /usr/bin/prometheus. */
  binary?: string;
  /** Until /-/ready answers; default 30 s. */
  startTimeoutMs?: number;
  extraArgs?: string[];
}

export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RangeSeries {
  metric: Record<string, string>;
  values: Array<[number, string]>;
}

export type QueryData =
  | { resultType: 'vector'; result: Sample[] }
  | { resultType: 'matrix'; result: RangeSeries[] }
  | { resultType: 'scalar'; result: [number, string] }
  | { resultType: 'string'; result: [number, string] };

export interface QueryResult {
  data: QueryData;
  warnings: string[];
}

/** A query Prometheus rejected (bad_data: a parse error; execution, timeout, …). */
export class PrometheusQueryError extends Error {
  constructor(
    readonly expr: string,
    readonly errorType: string,
    readonly detail: string,
  ) {
    super(`${errorType}: ${detail} (query: ${expr})`);
  }
}

export interface TargetHealth {
  labels: Record<string, string>;
  scrapeUrl: string;
  health: 'up' | 'down' | 'unknown';
  lastError: string;
  lastScrape: string;
}

export interface RuleHealth {
  name: string;
  type: 'recording' | 'alerting';
  health: 'ok' | 'err' | 'unknown';
  lastError?: string;
  state?: 'inactive' | 'pending' | 'firing';
  query: string;
}

export interface RuleGroupHealth {
  name: string;
  file: string;
  rules: RuleHealth[];
  lastEvaluation: string;
}

export interface ActiveAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

export interface PrometheusServer {
  /** e.g. http://127.0.0.1:41234 */
  url: string;
  port: number;
  configFile: string;
  dataDir: string;
  proc: Proc;
  /** The binary that runs and its version. */
  binary: string;
  version: PrometheusBuildVersion;
  /** Instant query (POST /api/v1/query) at `time` (Unix seconds; default now). Throws PrometheusQueryError when rejected. */
  query(expr: string, time?: number): Promise<QueryResult>;
  /** Range query (POST /api/v1/query_range); times in Unix seconds, step in seconds. */
  queryRange(expr: string, start: number, end: number, step: number): Promise<QueryResult>;
  /** The instant vector of `expr` (throws if the result is not a vector). */
  vector(expr: string, time?: number): Promise<Sample[]>;
  /** Active scrape targets. */
  targets(): Promise<TargetHealth[]>;
  /** Until every active target of `job` (default: all jobs) is up; returns them. */
  waitForTargetsUp(timeoutMs?: number, job?: string): Promise<TargetHealth[]>;
  /** Rule groups with their health (GET /api/v1/rules). */
  rules(): Promise<RuleGroupHealth[]>;
  /** Pending and firing alerts (GET /api/v1/alerts). */
  alerts(): Promise<ActiveAlert[]>;
  /** Rewrites the configuration with changed options and reloads it (POST /-/reload). */
  reload(changes: Partial<Omit<PrometheusOptions, 'binary' | 'startTimeoutMs' | 'extraArgs'>>): Promise<void>;
  /** Ends the process group and removes the temp dir. */
  stop(): Promise<void>;
}

const versionCache = new Map<string, PrometheusBuildVersion>();

/** The version a Prometheus binary reports (cached per path). Throws if it reports none. */
export function prometheusBuildVersion(binary: string): PrometheusBuildVersion {
  const hit = versionCache.get(binary);
  if (hit) return hit;
  const out = execFileSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });
  // "prometheus, version 2.42.0+ds (branch: ..." — an unstamped `go install` build prints "version  (".
  const m = /version (\d+)\.(\d+)\.(\d+)(\S*)/.exec(out);
  if (!m) throw new Error(`${binary} --version reports no version (a build without -ldflags -X ...version.Version?): ${out.split('\n')[0]}`);
  const v = { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), raw: `${m[1]}.${m[2]}.${m[3]}${m[4]}` };
  versionCache.set(binary, v);
  return v;
}

function renderConfig(opts: PrometheusOptions, version: PrometheusBuildVersion): string {
  const scrapeInterval = opts.scrapeInterval ?? '1s';
  const config: Record<string, unknown> = {
    global: {
      scrape_interval: scrapeInterval,
      // Prometheus refuses a scrape_timeout above the scrape_interval; its default is 10s.
      scrape_timeout: durationSeconds(scrapeInterval) < 10 ? scrapeInterval : '10s',
      evaluation_interval: opts.evaluationInterval ?? '1s',
      ...(opts.externalLabels ? { external_labels: opts.externalLabels } : {}),
    },
    rule_files: opts.ruleFiles ?? [],
    scrape_configs: opts.scrapeTargets.map((t) => ({
      job_name: t.job,
      ...(t.scrapeInterval ? { scrape_interval: t.scrapeInterval } : {}),
      ...(t.scrapeTimeout
        ? { scrape_timeout: t.scrapeTimeout }
        : t.scrapeInterval && durationSeconds(t.scrapeInterval) < Math.min(durationSeconds(scrapeInterval), 10)
          ? { scrape_timeout: t.scrapeInterval }
          : {}),
      ...(t.metricsPath ? { metrics_path: t.metricsPath } : {}),
      ...(t.params ? { params: t.params } : {}),
      ...(t.scheme ? { scheme: t.scheme } : {}),
      ...(t.tlsConfig ? { tls_config: t.tlsConfig } : {}),
      ...(t.honorLabels !== undefined ? { honor_labels: t.honorLabels } : {}),
      ...(t.fallbackScrapeProtocol && version.major >= 3 ? { fallback_scrape_protocol: t.fallbackScrapeProtocol } : {}),
      static_configs: [{ targets: t.targets, ...(t.labels ? { labels: t.labels } : {}) }],
    })),
  };
  if (opts.alertmanagerUrl) {
    const u = new URL(opts.alertmanagerUrl);
    config.alerting = {
      alertmanagers: [
        {
          api_version: 'v2',
          scheme: u.protocol.replace(':', ''),
          ...(u.pathname !== '/' ? { path_prefix: u.pathname } : {}),
          static_configs: [{ targets: [u.host] }],
        },
      ],
    };
  }
  for (const f of opts.ruleFiles ?? []) {
    if (!path.isAbsolute(f)) throw new Error(`rule file path must be absolute: ${f}`);
  }
  return stringify(config);
}

/** Seconds in a Prometheus duration like 1s, 500ms, 1m30s. */
function durationSeconds(d: string): number {
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
  let total = 0;
  const re = /(\d+)(ms|s|m|h|d|w|y)/g;
  let m: RegExpExecArray | null;
  let consumed = 0;
  while ((m = re.exec(d)) !== null) {
    total += Number(m[1]) * units[m[2]];
    consumed += m[0].length;
  }
  if (consumed !== d.length || d.length === 0) throw new Error(`not a Prometheus duration: ${d}`);
  return total;
}

interface ApiEnvelope<T> {
  status: 'success' | 'error';
  data?: T;
  errorType?: string;
  error?: string;
  warnings?: string[];
}

export async function startPrometheus(opts: PrometheusOptions): Promise<PrometheusServer> {
  const binary = opts.binary ?? process.env.PROMETHEUS_BIN ?? DEFAULT_PROMETHEUS_BIN;
  if (!fs.existsSync(binary)) throw new Error(`prometheus not found at ${binary} (run scripts/setup.sh)`);
  const version = prometheusBuildVersion(binary);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prometheus-'));
  const dataDir = path.join(dir, 'data');
  fs.mkdirSync(dataDir);
  const configFile = path.join(dir, 'prometheus.yml');
  let current: PrometheusOptions = opts;
  fs.writeFileSync(configFile, renderConfig(current, version));

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = startProc(
    'prometheus',
    binary,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${dataDir}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--web.enable-lifecycle',
      '--storage.tsdb.retention.time=1d',
      ...(opts.extraArgs ?? []),
    ],
    { cwd: dir },
  );

  const stop = async (): Promise<void> => {
    await proc.stop('SIGTERM', 10_000);
    fs.rmSync(dir, { recursive: true, force: true });
  };

  async function api<T>(method: 'GET' | 'POST', route: string, form?: Record<string, string>): Promise<ApiEnvelope<T>> {
    const res = await fetch(`${url}${route}`, {
      method,
      ...(form ? { body: new URLSearchParams(form), headers: { 'content-type': 'application/x-www-form-urlencoded' } } : {}),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    try {
      return JSON.parse(text) as ApiEnvelope<T>;
    } catch {
      throw new Error(`${method} ${route} -> HTTP ${res.status}: ${text.slice(0, 500)}`);
    }
  }

  async function data<T>(method: 'GET' | 'POST', route: string, form?: Record<string, string>, expr = ''): Promise<{ data: T; warnings: string[] }> {
    const env = await api<T>(method, route, form);
    if (env.status !== 'success' || env.data === undefined) throw new PrometheusQueryError(expr || route, env.errorType ?? 'unknown', env.error ?? 'no data');
    return { data: env.data, warnings: env.warnings ?? [] };
  }

  try {
    await waitFor(
      'Prometheus /-/ready',
      async () => {
        if (proc.child.exitCode !== null) throw new Error(`prometheus exited (${proc.child.exitCode}): ${proc.output().slice(-3000)}`);
        const r = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2_000) });
        return r.status === 200;
      },
      opts.startTimeoutMs ?? 30_000,
      200,
    );
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }

  const server: PrometheusServer = {
    url,
    port,
    configFile,
    dataDir,
    proc,
    binary,
    version,
    async query(expr, time) {
      const form: Record<string, string> = { query: expr };
      if (time !== undefined) form.time = String(time);
      return data<QueryData>('POST', '/api/v1/query', form, expr);
    },
    async queryRange(expr, start, end, step) {
      return data<QueryData>('POST', '/api/v1/query_range', { query: expr, start: String(start), end: String(end), step: String(step) }, expr);
    },
    async vector(expr, time) {
      const r = await server.query(expr, time);
      if (r.data.resultType !== 'vector') throw new Error(`${expr}: result is a ${r.data.resultType}, not a vector`);
      return r.data.result;
    },
    async targets() {
      return (await data<{ activeTargets: TargetHealth[] }>('GET', '/api/v1/targets?state=active')).data.activeTargets;
    },
    async waitForTargetsUp(timeoutMs = 30_000, job) {
      let last: TargetHealth[] = [];
      try {
        return await waitFor(
          `Prometheus targets${job ? ` of job ${job}` : ''} up`,
          async () => {
            last = (await server.targets()).filter((t) => job === undefined || t.labels.job === job);
            return last.length > 0 && last.every((t) => t.health === 'up') ? last : undefined;
          },
          timeoutMs,
          250,
        );
      } catch (e) {
        const seen = last.map((t) => `${t.scrapeUrl} ${t.health} ${t.lastError}`).join('; ');
        throw new Error(`${(e as Error).message}; targets: ${seen || 'none'}`);
      }
    },
    async rules() {
      return (await data<{ groups: RuleGroupHealth[] }>('GET', '/api/v1/rules')).data.groups;
    },
    async alerts() {
      return (await data<{ alerts: ActiveAlert[] }>('GET', '/api/v1/alerts')).data.alerts;
    },
    async reload(changes) {
      current = { ...current, ...changes };
      fs.writeFileSync(configFile, renderConfig(current, version));
      const r = await fetch(`${url}/-/reload`, { method: 'POST', signal: AbortSignal.timeout(30_000) });
      if (r.status !== 200) throw new Error(`Prometheus reload failed: HTTP ${r.status}: ${(await r.text()).slice(0, 1000)}`);
    },
    stop,
  };
  return server;
}
