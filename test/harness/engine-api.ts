/**
 * The Prometheus-compatible HTTP API that every rule engine here answers (Thanos query and rule,
 * VictoriaMetrics single node, vmalert): instant queries, rule health and active alerts, with the
 * same JSON envelope as Prometheus. What differs per engine is said where it is used.
 */
import { ActiveAlert, PrometheusQueryError, QueryData, RuleGroupHealth, Sample } from './prometheus';

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

/** Rules whose last evaluation failed, as "name: error". */
export async function failingRules(base: string): Promise<string[]> {
  return (await ruleGroups(base)).flatMap((g) => g.rules).filter((r) => r.health === 'err').map((r) => `${r.name}: ${r.lastError ?? ''}`);
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
