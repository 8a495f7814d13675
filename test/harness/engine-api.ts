/**
 * What the rule engines other than Prometheus (thanos.ts, victoriametrics.ts) share: the options they
 * are started with, the way their processes are started and torn down, and the Prometheus-compatible
 * HTTP API that each answers (Thanos query and rule, VictoriaMetrics single node, vmalert): instant
 * queries, rule health and active alerts, with the same JSON envelope as Prometheus. What differs per
 * engine is said where it is used.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ActiveAlert, PrometheusQueryError, QueryData, RuleGroupHealth, Sample } from './prometheus';
import { Proc, waitFor } from './proc';

/** How a rule engine is started: what it scrapes, the rule files, its intervals and its Alertmanager. */
export interface RuleEngineOptions {
  /** host:port of the exporter(s), scraped with honor_labels. */
  exporterTargets: string[];
  job: string;
  ruleFiles: string[];
  scrapeInterval: string;
  /** The engine's evaluation interval (thanos rule --eval-interval, vmalert -evaluationInterval). */
  evaluationInterval: string;
  alertmanagerUrl: string;
}

/** Stops run in reverse order of registration, each at most once, errors ignored. */
export interface Teardown {
  add(stop: () => Promise<void>): void;
  run(): Promise<void>;
}

export function teardown(): Teardown {
  const stops: Array<() => Promise<void>> = [];
  return {
    add: (s) => void stops.push(s),
    run: async () => {
      for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
    },
  };
}

/** Runs `build` with a teardown; when it throws, what it started is stopped before the error propagates. */
export async function guarded<T>(build: (t: Teardown) => Promise<T>): Promise<T> {
  const t = teardown();
  try {
    return await build(t);
  } catch (e) {
    await t.run();
    throw e;
  }
}

/**
 * guarded() with a private temp dir (`<prefix>XXXXXX`) for the processes `build` starts, removed
 * after them.
 */
export async function withTeardown<T>(prefix: string, build: (dir: string, t: Teardown) => Promise<T>): Promise<T> {
  return guarded(async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    t.add(async () => fs.rmSync(dir, { recursive: true, force: true }));
    return build(dir, t);
  });
}

/** Waits until `url` answers 2xx; fails at once (with the process's output) when the process exits. */
export async function waitReady(name: string, proc: Proc, url: string): Promise<void> {
  await waitFor(`${name} ready`, async () => {
    if (proc.child.exitCode !== null) throw new Error(`${name} exited (${proc.child.exitCode}): ${proc.output().slice(-3000)}`);
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;
  }, 60_000, 250);
}

interface ApiEnvelope<T> {
  status: 'success' | 'error';
  data?: T;
  errorType?: string;
  error?: string;
}

async function call<T>(base: string, method: 'GET' | 'POST', route: string, form?: Record<string, string>): Promise<T> {
  const res = await fetch(`${base}${route}`, {
    method,
    ...(form ? { body: new URLSearchParams(form), headers: { 'content-type': 'application/x-www-form-urlencoded' } } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let env: ApiEnvelope<T>;
  try {
    env = JSON.parse(text) as ApiEnvelope<T>;
  } catch {
    throw new Error(`${method} ${base}${route} -> HTTP ${res.status}: ${text.slice(0, 500)}`);
  }
  if (env.status !== 'success' || env.data === undefined) throw new PrometheusQueryError(form?.query ?? route, env.errorType ?? 'unknown', env.error ?? `HTTP ${res.status}`);
  return env.data;
}

/** The instant vector of `expr` at the engine's "now" (POST /api/v1/query). */
export async function queryVector(base: string, expr: string): Promise<Sample[]> {
  const d = await call<QueryData>(base, 'POST', '/api/v1/query', { query: expr });
  if (d.resultType !== 'vector') throw new Error(`${expr}: result is a ${d.resultType}, not a vector`);
  return d.result;
}

/** Rule groups with their health (GET /api/v1/rules). */
export async function ruleGroups(base: string): Promise<RuleGroupHealth[]> {
  return (await call<{ groups: RuleGroupHealth[] }>(base, 'GET', '/api/v1/rules')).groups;
}

/**
 * Waits until every rule group has been evaluated at least once and no rule's last evaluation
 * failed (an engine's first evaluations can fail while its datasource has no data or no store).
 */
export async function waitRulesHealthy(name: string, base: string, timeoutMs = 60_000): Promise<void> {
  let failing: string[] = [];
  await waitFor(`${name} evaluating every rule without error`, async () => {
    const groups = await ruleGroups(base);
    failing = groups.flatMap((g) => g.rules).filter((r) => r.health === 'err').map((r) => `${r.name}: ${r.lastError ?? ''}`);
    return failing.length === 0 && groups.length > 0 && groups.every((g) => !g.lastEvaluation.startsWith('0001'));
  }, timeoutMs, 500).catch((e: Error) => {
    throw new Error(`${e.message}; failing: ${failing.join('; ')}`);
  });
}

/** A vmalert alert (GET /api/v1/alerts): the rule's name is `name`, beside the labels. */
interface VmalertAlert {
  name: string;
  state: string;
  labels: Record<string, string>;
}

/**
 * Names of the alerts the engine has firing. Prometheus and Thanos rule list `labels.alertname`;
 * vmalert lists `name` (and its labels carry alertname too).
 */
export async function firingAlertNames(base: string): Promise<string[]> {
  // Thanos rule answers `alerts: null` (not []) when none is active.
  const alerts = (await call<{ alerts: Array<ActiveAlert | VmalertAlert> | null }>(base, 'GET', '/api/v1/alerts')).alerts ?? [];
  return alerts.filter((a) => a.state === 'firing').map((a) => ('name' in a && a.name ? a.name : a.labels.alertname));
}
