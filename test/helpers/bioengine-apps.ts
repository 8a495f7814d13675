import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { waitFor } from '../harness/proc';
import { DEFAULT_RAY_BIN, rayAppConfig, ServeAppConfig } from '../harness/ray';

export const BIOENGINE_PREFIX = 'e2e-worker';

/**
 * `upstream` (and its older names `buggy_deregister_at_zero`, `wait_for_running`) is BioEngine
 * 0.16.1's proxy; `fixed` is a hypothetical proxy that no BioEngine release has (see
 * test/ray-apps/bioengine_like.py).
 */
export type ProxyBehaviour = 'upstream' | 'buggy_deregister_at_zero' | 'wait_for_running' | 'fixed';

export interface BioengineAppOptions {
  name: string;
  behaviour: ProxyBehaviour;
  hyphaUrl: string;
  tokenFile: string;
  /** Model's initial_replicas; null: deployed at min_replicas (0 unless minReplicas is set). */
  initialReplicas: number | null;
  /** Model's min_replicas; default 0. `>= 1` is the only mitigation upstream has for scale-to-zero deregistration. */
  minReplicas?: number;
  /**
   * Model's downscale delay; default 30 s: longer than the proxy's 10 s health-check period, so the
   * 0.16.1 gate registers an app started at one replica before its Model idles to zero (a shorter
   * delay can leave it never registered, as it would upstream).
   */
  downscaleDelayS?: number;
  /** Register `{app}-rtc` as a proxy with aiortc does (default true, as in production). */
  rtc?: boolean;
  /** The worker's client id the proxy derives its own from; default BIOENGINE_PREFIX. */
  clientIdPrefix?: string;
  /** Override the proxy's health-check period (upstream: 10 s); the gate runs on it. */
  healthCheckPeriodS?: number;
}

/**
 * A BioEngine-shaped Serve app (test/ray-apps/bioengine_like.py): a ProxyDeployment that
 * registers `{ws}/{prefix}-{sha1(app)[:8]}:{app}` (+ `-rtc`) in Hypha from its health check, and
 * a Model deployment autoscaling with min_replicas 0 unless told otherwise.
 */
export function bioengineApp(o: BioengineAppOptions): ServeAppConfig {
  const base = rayAppConfig('bioengine-like.yaml').applications[0];
  const deployments = (base.deployments ?? []).map((d) => {
    if (d.name === 'ProxyDeployment') {
      const userConfig = { behaviour: o.behaviour, rtc: o.rtc ?? true, server_url: o.hyphaUrl, token_file: o.tokenFile, client_id_prefix: o.clientIdPrefix ?? BIOENGINE_PREFIX };
      return { ...d, user_config: userConfig, ...(o.healthCheckPeriodS !== undefined ? { health_check_period_s: o.healthCheckPeriodS } : {}) };
    }
    const delay = o.downscaleDelayS ?? 30;
    const ac: Record<string, unknown> = { ...(d.autoscaling_config as Record<string, unknown>), downscale_delay_s: delay, downscale_to_zero_delay_s: delay };
    if (o.minReplicas !== undefined) ac.min_replicas = o.minReplicas;
    if (o.initialReplicas === null) delete ac.initial_replicas;
    else ac.initial_replicas = o.initialReplicas;
    return { ...d, autoscaling_config: ac };
  });
  return { ...base, name: o.name, route_prefix: `/${o.name}`, deployments };
}

/** The ids BioEngine's proxy registers for `app` (bioengine/apps/proxy_deployment.py L261-262, L1041-1043, L1091-1093). */
export function bioengineServiceIds(workspace: string, workerClientId: string, app: string): { clientId: string; ws: string; rtc: string } {
  const clientId = `${workerClientId}-${crypto.createHash('sha1').update(app, 'utf8').digest('hex').slice(0, 8)}`;
  return { clientId, ws: `${workspace}/${clientId}:${app}`, rtc: `${workspace}/${clientId}:${app}-rtc` };
}

/**
 * Call `deployment.method(arg)` of Serve app `app` through a DeploymentHandle, from a Ray job
 * submitted to the cluster's dashboard (the only way to reach a BioEngine app whose Hypha service
 * is gone: its ProxyDeployment has no `__call__`, so Serve's HTTP route answers 500).
 * Resolves with the job's output; throws with it when the job fails.
 */
export async function callViaDeploymentHandle(dashboardUrl: string, app: string, deployment = 'Model', method = 'predict', arg = 'wake', timeoutMs = 180_000): Promise<string> {
  const python = path.join(path.dirname(process.env.RAY_BIN ?? DEFAULT_RAY_BIN), 'python');
  const code = [
    'import sys, ray',
    'from ray import serve',
    'ray.init(logging_level="ERROR")',
    `h = serve.get_deployment_handle(${JSON.stringify(deployment)}, app_name=${JSON.stringify(app)})`,
    `print("HANDLE_RESULT", getattr(h, ${JSON.stringify(method)}).remote(${JSON.stringify(arg)}).result(timeout_s=${Math.floor(timeoutMs / 1000)}), flush=True)`,
  ].join('\n');
  const b64 = Buffer.from(code, 'utf8').toString('base64');
  const entrypoint = `${python} -c "import base64; exec(base64.b64decode('${b64}'))"`;
  const sub = await jsonRequest('POST', `${dashboardUrl}/api/jobs/`, { entrypoint });
  if (sub.status !== 200) throw new Error(`POST /api/jobs/ -> ${sub.status}: ${JSON.stringify(sub.body)}`);
  const id = (sub.body as { submission_id: string }).submission_id;
  const status = await waitFor(`job ${id}`, async () => {
    const s = ((await jsonRequest('GET', `${dashboardUrl}/api/jobs/${id}`)).body as { status: string }).status;
    return ['SUCCEEDED', 'FAILED', 'STOPPED'].includes(s) ? s : undefined;
  }, timeoutMs + 30_000, 500);
  const logs = ((await jsonRequest('GET', `${dashboardUrl}/api/jobs/${id}/logs`)).body as { logs: string }).logs;
  if (status !== 'SUCCEEDED') throw new Error(`handle call job ${status}: ${logs.slice(-3000)}`);
  return logs;
}

/**
 * node:http rather than fetch: Ray's dashboard refuses POSTs that look like browser traffic, and
 * undici's fetch sends the Sec-Fetch-* headers browsers send.
 */
function jsonRequest(method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(url, { method, timeout: 30_000, headers: { 'user-agent': 'hypha-serve-exporter-test-harness', ...(data ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown });
        } catch {
          resolve({ status: res.statusCode ?? 0, body: text });
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: timeout`)));
    req.on('error', reject);
    req.end(data);
  });
}
