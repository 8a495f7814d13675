import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { waitFor } from '../harness/proc';
import { DEFAULT_RAY_BIN, RayCluster, rayAppConfig, ServeAppConfig } from '../harness/ray';
import { startWorkerStandIn, WorkerAppReport, WorkerStandIn } from '../harness/hypha-registrant';

export const BIOENGINE_PREFIX = 'e2e-worker';

/**
 * `upstream` (and its older names `buggy_deregister_at_zero`, `wait_for_running`) is BioEngine
 * 0.16.1's proxy; `fixed` is upstream's fixed proxy, BioEngine 0.16.15 (aicell-lab/bioengine
 * commit 1a189562604ecf6c7fd2fd9c3afe6dca0bb653fb): a sibling idle at zero replicas that Serve
 * calls HEALTHY/UPSCALING/DOWNSCALING is serviceable, and a background task registers within a
 * 5 s tick of the gate opening (see test/ray-apps/bioengine_like.py for the cited lines).
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

/**
 * The two BioEngine release lines that tests and the demo run side by side, each a worker stand-in
 * reporting its release (get_status().bioengine_version) whose apps' proxies run that line's gate:
 * `old` deregisters an app idle at zero and never registers one deployed at zero (0.16.1),
 * `fixed` keeps it registered (upstream's fixed proxy, a release after both fixes).
 */
export const RELEASE_LINES = {
  old: { worker: BIOENGINE_PREFIX, version: '0.16.1', behaviour: 'upstream' },
  fixed: { worker: 'e2e-worker-fixed', version: '0.16.43', behaviour: 'fixed' },
} as const satisfies Record<string, { worker: string; version: string; behaviour: ProxyBehaviour }>;
export type ReleaseLine = keyof typeof RELEASE_LINES;

/** A BioEngine-shaped app on a release line: that line's proxy, registering under that line's worker. */
export function lineApp(line: ReleaseLine, o: Omit<BioengineAppOptions, 'behaviour' | 'clientIdPrefix'>): ServeAppConfig {
  return bioengineApp({ ...o, behaviour: RELEASE_LINES[line].behaviour, clientIdPrefix: RELEASE_LINES[line].worker });
}

export interface ReleaseWorkers {
  workers: Record<ReleaseLine, WorkerStandIn>;
  /**
   * What each line's worker reports from now on: its apps, deployed by itself (the proxy's prefix), with the status
   * Serve last gave each (an app Serve does not list is left out), unless `status` says otherwise.
   */
  report(apps: readonly { app: string; line: ReleaseLine; status?: string; serviceRegistered?: boolean | null }[]): void;
  disconnect(): Promise<void>;
}

/** How often the release workers read Serve's applications (what they report is at most this old). */
const SERVE_POLL_MS = 2_000;

/**
 * Both lines' worker stand-ins in the token's workspace, reporting no app until `report`. A worker's get_app_status
 * reports each app's status as Serve gives it (bioengine.md §2.3), so it never says RUNNING for an app Serve is
 * still deploying or has marked UNHEALTHY. The stand-ins read `ray`'s Serve in the background, every
 * SERVE_POLL_MS, and answer from the latest read at once (WorkerApps says why not at the call).
 */
export async function startReleaseWorkers(serverUrl: string, token: string, ray: Pick<RayCluster, 'getApplications'>): Promise<ReleaseWorkers> {
  const workers = {} as Record<ReleaseLine, WorkerStandIn>;
  for (const line of Object.keys(RELEASE_LINES) as ReleaseLine[]) {
    const { worker, version } = RELEASE_LINES[line];
    workers[line] = await startWorkerStandIn({ serverUrl, token, clientId: worker, version, apps: {} });
  }
  let serve: Record<string, { status: string }> = {};
  let reading = false;
  const poll = setInterval(() => {
    if (reading) return;
    reading = true;
    ray.getApplications().then((d) => {
      serve = d.applications;
    }, () => undefined).finally(() => {
      reading = false;
    });
  }, SERVE_POLL_MS);
  poll.unref();
  return {
    workers,
    report(apps) {
      for (const line of Object.keys(RELEASE_LINES) as ReleaseLine[]) {
        const mine = apps.filter((x) => x.line === line);
        workers[line].setApps(() => {
          const out: Record<string, WorkerAppReport> = {};
          for (const a of mine) {
            const status = a.status ?? serve[a.app]?.status;
            if (status === undefined) continue;
            out[a.app] = { status, deployed_by_worker_client_id: RELEASE_LINES[line].worker, ...(a.serviceRegistered !== undefined ? { service_registered: a.serviceRegistered } : {}) };
          }
          return out;
        });
      }
    },
    async disconnect() {
      clearInterval(poll);
      for (const w of Object.values(workers)) await w.disconnect().catch(() => undefined);
    },
  };
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
