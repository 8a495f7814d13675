/**
 * A real single-node Ray cluster with Serve, for integration tests and fixture recording.
 *
 * `ray start --head --block` stays the parent of GCS, raylet, dashboard and agents, so its
 * process group holds them. Ray workers (replicas, Serve controller/proxy) get their own
 * process groups, so stop() also finds every process that still has a file open under the
 * cluster's private temp dir and kills it by PID, then checks that none is left.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { freePorts } from './ports';
import { Proc, startProc, waitFor } from './proc';
import { acquireStartLock } from './start-lock';
import { repoRoot } from '../../src/util/repo-root';

const execFileP = promisify(execFile);

export const RAY_APPS_DIR = path.join(repoRoot(), 'test', 'ray-apps');
export const DEFAULT_RAY_BIN = path.join(repoRoot(), '.venv', 'ray', 'bin', 'ray');

/** One application entry of a Serve declarative config (ServeApplicationSchema); open for Ray's many keys. */
export interface ServeAppConfig {
  name: string;
  import_path: string;
  route_prefix?: string | null;
  deployments?: Array<{ name: string; [k: string]: unknown }>;
  [k: string]: unknown;
}

/** The part of a ServeDeploySchema tests provide; the harness adds proxy_location and http_options. */
export interface ServeDeployConfig {
  applications: ServeAppConfig[];
  [k: string]: unknown;
}

export interface ReplicaJson {
  replica_id: string;
  state: string;
  pid?: number | null;
  [k: string]: unknown;
}

export interface DeploymentJson {
  name: string;
  status: string;
  status_trigger?: string;
  message: string;
  target_num_replicas?: number;
  replicas: ReplicaJson[];
  deployment_config: Record<string, unknown>;
  [k: string]: unknown;
}

export interface AppJson {
  name: string;
  status: string;
  message: string;
  route_prefix: string | null;
  deployments: Record<string, DeploymentJson>;
  [k: string]: unknown;
}

/** GET /api/serve/applications/ body (ServeInstanceDetails), typed only as far as tests read it. */
export interface ServeDetailsJson {
  applications: Record<string, AppJson>;
  proxies?: Record<string, { status: string; [k: string]: unknown }> | null;
  controller_info?: Record<string, unknown>;
  [k: string]: unknown;
}

export interface HttpReply {
  status: number;
  body: string;
  contentType: string | null;
}

export interface RayStartOptions {
  /** --num-cpus; default 2. Test replicas ask for 0.1 CPU each. */
  numCpus?: number;
  /** The `ray` CLI to run; default $RAY_BIN, else the repo's .venv/ray. */
  rayBin?: string;
  /** Default 100 MB; Ray's minimum is ~75 MB. */
  objectStoreMemoryBytes?: number;
  /** Until the Serve REST endpoint answers; default 90 s. */
  startTimeoutMs?: number;
  /** Extra environment for Ray (e.g. Serve tuning knobs). */
  env?: Record<string, string>;
  /** Deploy `config` and wait until `app` is RUNNING before the cluster counts as started. */
  serving?: { config: ServeDeployConfig; app: string; timeoutMs: number };
}

export interface RayCluster {
  /** e.g. http://127.0.0.1:41234 (no trailing slash). The Serve REST API lives here. */
  dashboardUrl: string;
  /** Port of the head-node Serve HTTP proxy (fixed when Serve first starts, i.e. on first deploy). */
  serveHttpPort: number;
  /** Port of the head node's Ray metrics agent (Prometheus text, Ray's own Serve metrics), if set. */
  metricsExportPort?: number;
  /** http://127.0.0.1:<serveHttpPort> */
  serveUrl: string;
  headNodeIp: string;
  /** e.g. "2.60.0", from GET /api/ray/version. */
  rayVersion: string;
  /** The private --temp-dir (removed by stop()). */
  tempDir: string;
  /** Wall time from spawning `ray start` until the Serve REST API answered 200. */
  startMs: number;
  /** The `ray start` process (its log file holds the CLI output). */
  proc: Proc;

  /**
   * PUT the declarative config (YAML text or object) to /api/serve/applications/. Replaces all apps.
   * Adds proxy_location HeadOnly and http_options {127.0.0.1, serveHttpPort}; see adaptConfigToRay().
   */
  deploy(config: string | ServeDeployConfig): Promise<void>;
  /** Parsed GET /api/serve/applications/ (throws unless 200). */
  getApplications(): Promise<ServeDetailsJson>;
  /** Raw GET /api/serve/applications/ reply, whatever the status. */
  getApplicationsRaw(): Promise<HttpReply>;
  /** Poll until app `name` exists and `predicate` holds; returns that app's JSON. */
  waitApp(name: string, predicate: (app: AppJson) => boolean, timeoutMs: number): Promise<AppJson>;
  /** Poll until app `name` is no longer listed. */
  waitAppGone(name: string, timeoutMs: number): Promise<void>;
  /** Redeploy the last deployed config without app `name` (the REST API has no per-app delete). */
  deleteApp(name: string): Promise<void>;
  /** Deploy an empty application list: every app is deleted, Serve (controller, proxy) keeps running. */
  deleteAllApps(): Promise<void>;
  /** DELETE /api/serve/applications/: serve.shutdown(), controller and proxy go away. */
  shutdownServe(): Promise<void>;
  /** GET on the Serve HTTP proxy, e.g. request('/two-step?text=hi') or request('/-/healthz'). */
  request(route: string, timeoutMs?: number): Promise<HttpReply>;
  /** GET any dashboard path, e.g. '/api/ray/version' (default timeout 10 s). */
  dashboardGet(route: string, timeoutMs?: number): Promise<HttpReply>;
  /** Kill only the dashboard (and its module subprocesses): the REST API goes down, Ray and Serve keep running. */
  stopDashboard(): Promise<void>;
  /** After stopDashboard(): start the dashboard again with the same command line and port; resolves once the Serve REST API answers. */
  restartDashboard(timeoutMs?: number): Promise<void>;
  /** PIDs of live processes that belong to this cluster (hold files under tempDir or descend from `ray start`). */
  sessionPids(): number[];
  /** Tear everything down, verify nothing of this cluster survives (throws otherwise), remove tempDir. */
  stop(): Promise<void>;
}

/** Load one or more YAML configs from test/ray-apps and concatenate their applications. */
export function rayAppConfig(...files: string[]): ServeDeployConfig {
  const applications: ServeAppConfig[] = [];
  for (const f of files) {
    const parsed = YAML.parse(fs.readFileSync(path.join(RAY_APPS_DIR, f), 'utf8')) as ServeDeployConfig;
    applications.push(...parsed.applications);
  }
  return { applications };
}

// ---------------------------------------------------------------------------------------------
// /proc scanning: which processes belong to a cluster

interface ProcInfo {
  pid: number;
  ppid: number;
  startTime: string;
}

function readProcInfo(pid: number): ProcInfo | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm (field 2) may contain spaces and parens; fields after the last ')' are fixed.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = rest[0];
    if (state === 'Z' || state === 'X') return null;
    return { pid, ppid: Number(rest[1]), startTime: rest[19] };
  } catch {
    return null;
  }
}

function allPids(): number[] {
  return fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);
}

/** A process's command line, NUL-separated; '' once it is gone. */
function cmdline(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

function touchesDir(pid: number, dir: string): boolean {
  const cmd = cmdline(pid);
  if (cmd === '') return false;
  if (cmd.includes(dir)) return true;
  try {
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(dir)) return true;
      } catch {
        /* fd closed meanwhile */
      }
    }
  } catch {
    /* process gone or not ours */
  }
  return false;
}

/** Live processes that hold files under `dir` or descend from `rootPid`. */
function clusterProcesses(rootPid: number, dir: string): ProcInfo[] {
  const infos = new Map<number, ProcInfo>();
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    const info = readProcInfo(pid);
    if (info) infos.set(pid, info);
  }
  const mine = new Map(descendants([...infos.values()], rootPid).map((p) => [p.pid, p]));
  for (const info of infos.values()) {
    if (!mine.has(info.pid) && touchesDir(info.pid, dir)) mine.set(info.pid, info);
  }
  return [...mine.values()];
}

/** `rootPid` (if among `procs`) and every process below it, to a fixed point (`procs` is unordered). */
function descendants(procs: ProcInfo[], rootPid: number): ProcInfo[] {
  const root = procs.find((p) => p.pid === rootPid);
  if (!root) return [];
  const family = new Map([[rootPid, root]]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of procs) {
      if (!family.has(p.pid) && family.has(p.ppid)) {
        family.set(p.pid, p);
        grew = true;
      }
    }
  }
  return [...family.values()];
}

/** Ray's dashboard head among `procs`, first, and every process below it (its module processes). */
function dashboardFamily(procs: ProcInfo[]): ProcInfo[] {
  const head = procs.find((p) => cmdline(p.pid).includes('/ray/dashboard/dashboard.py'));
  return head ? descendants(procs, head.pid) : [];
}

/** Sets a priority only if the process is still the same one (PID not reused). */
function setPrioritySame(info: ProcInfo, priority: number): void {
  const now = readProcInfo(info.pid);
  if (!now || now.startTime !== info.startTime) return;
  try {
    os.setPriority(info.pid, priority);
  } catch {
    /* gone meanwhile */
  }
}

const CLUSTER_PRIORITY = -10;
const DEFERRED_PRIORITY = 10;
/**
 * The session's nice value once the cluster runs: a dozen busy processes (GCS, raylet, dashboard and its agent,
 * the Serve controller and proxy, replicas) share one session's share, where each other peer (a Prometheus, the
 * exporter, Hypha) has a session to itself. At 0, beside two other lanes (load 50-69), Ray's own metrics page and
 * an app's failed import went unseen for 180 s (CI, 2026-12-07); -5 weighs the session about three peers.
 */
const RUNNING_SESSION_NICE = -5;

/**
 * Puts the Ray CLI, and so the daemons it starts, at CLUSTER_PRIORITY; false when that is not allowed (not root).
 * With the kernel's autogroups on (Linux's default, and here) CPU time is first split between sessions, and
 * every peer the harness starts is a session of its own: a process's nice value then only orders it within its
 * session, and the whole Ray start shared one session's share among ~25 (measured: 20 busy sessions, the
 * agent's port file after 18.8 s with the session at nice -10, a dead raylet after 163 s at 0). So the
 * session's own nice value is set too: CLUSTER_PRIORITY for the start, RUNNING_SESSION_NICE after it.
 */
function raisePriority(cliPid: number): boolean {
  try {
    os.setPriority(cliPid, CLUSTER_PRIORITY);
  } catch {
    return false;
  }
  setAutogroupNice(cliPid, CLUSTER_PRIORITY);
  return true;
}

function setAutogroupNice(sessionPid: number, nice: number): void {
  try {
    fs.writeFileSync(`/proc/${sessionPid}/autogroup`, String(nice));
  } catch {
    /* a kernel without autogroups (the process's own priority is what counts), or the session is gone */
  }
}

/**
 * The raylet dies unless the dashboard agent writes its HTTP port file within a fixed 30 s (node_manager.cc,
 * Ray 2.60; `agent_register_timeout_ms` covers only the metrics agent's port), and the agent writes it only after
 * importing all its modules, while the dashboard head starts its dozen module processes in the same session. Until
 * the file is there the dashboard head and its children run behind the rest of the cluster; then they get the
 * cluster's priority back. Returns the function that ends this.
 */
function deferDashboardHead(cliPid: number, tempDir: string): () => void {
  const deferred = new Map<number, ProcInfo>();
  // Descendants only: clusterProcesses also reads every process's open files, too much for every 250 ms.
  const clusterNow = (): ProcInfo[] => descendants(allPids().map(readProcInfo).filter((i): i is ProcInfo => i !== null), cliPid);
  const portWritten = (): boolean => {
    try {
      return fs.readdirSync(path.join(tempDir, 'session_latest')).some((f) => f.startsWith('dashboard_agent_listen_port_'));
    } catch {
      return false;
    }
  };
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    clearInterval(timer);
    for (const p of [...deferred.values(), ...dashboardFamily(clusterNow())]) setPrioritySame(p, CLUSTER_PRIORITY);
  };
  const timer = setInterval(() => {
    if (portWritten()) return end();
    for (const p of dashboardFamily(clusterNow())) {
      if (deferred.has(p.pid)) continue;
      deferred.set(p.pid, p);
      setPrioritySame(p, DEFERRED_PRIORITY);
    }
  }, 250);
  timer.unref();
  return end;
}

/** SIGKILL a process only if it is still the same process (PID not reused). */
function killSame(info: ProcInfo): void {
  const now = readProcInfo(info.pid);
  if (!now || now.startTime !== info.startTime) return;
  try {
    process.kill(info.pid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * node:http rather than fetch: undici always sends `Sec-Fetch-Mode`, and Ray's dashboard treats
 * that as browser traffic and answers 405 to PUT/DELETE. A User-Agent is required: Ray 2.40's
 * dashboard reads it unconditionally and answers 500 (KeyError) without one.
 */
function httpRequest(method: string, url: string, body?: string, timeoutMs = 10_000): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        timeout: timeoutMs,
        headers: {
          'user-agent': 'hypha-serve-exporter-test-harness',
          ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            contentType: res.headers['content-type'] ?? null,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

const httpGet = (url: string, timeoutMs?: number) => httpRequest('GET', url, undefined, timeoutMs);

const startFlagsCache = new Map<string, Set<string>>();

/** The option names `ray start` accepts; they differ between releases (e.g. --dashboard-grpc-port). */
async function rayStartFlags(rayBin: string): Promise<Set<string>> {
  const cached = startFlagsCache.get(rayBin);
  if (cached) return cached;
  const { stdout } = await execFileP(rayBin, ['start', '--help'], {
    env: { ...process.env, RAY_USAGE_STATS_ENABLED: '0' },
    maxBuffer: 4 * 1024 * 1024,
  });
  const flags = new Set(stdout.match(/--[a-z0-9-]+/g) ?? []);
  startFlagsCache.set(rayBin, flags);
  return flags;
}

function stripAnsi(s: string): string {
  // eslint-disable-next-line no-control-regex -- ANSI colour codes start with ESC
  return s.replace(/\x1b\[[0-9;]*m/g, '');
}

/**
 * Drop config keys an older Ray rejects (its schemas forbid unknown keys). downscale_to_zero_delay_s
 * came with ray-project/ray PR #56573 (merged 2025-09, so 2.50); before it downscale_delay_s also
 * governs the last step to zero.
 */
export function adaptConfigToRay(cfg: ServeDeployConfig, rayVersion: string): ServeDeployConfig {
  const [maj, min] = rayVersion.split('.').map(Number);
  if (maj > 2 || (maj === 2 && min >= 50)) return cfg;
  const copy = JSON.parse(JSON.stringify(cfg)) as ServeDeployConfig;
  for (const a of copy.applications) {
    for (const d of a.deployments ?? []) {
      const ac = d.autoscaling_config as Record<string, unknown> | undefined;
      if (ac) delete ac.downscale_to_zero_delay_s;
    }
  }
  return copy;
}

function toConfig(config: string | ServeDeployConfig): ServeDeployConfig {
  const parsed = typeof config === 'string' ? (YAML.parse(config) as ServeDeployConfig) : config;
  if (!parsed || !Array.isArray(parsed.applications)) throw new Error('Serve config needs an applications list');
  return parsed;
}

const START_ATTEMPTS = 3;

/**
 * Starts a Ray head (and, with `serving`, deploys and waits for an app). On 2 loaded cores a raylet can
 * register late, or a fresh cluster's dashboard can go silent while a replica starts; that says nothing
 * about the exporter, and one lost start would fail a whole test file. A failed start is replaced by a new
 * cluster, up to START_ATTEMPTS in all, each failure written to stderr.
 */
export async function startRay(opts: RayStartOptions = {}): Promise<RayCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServing(opts);
    } catch (e) {
      if (attempt >= START_ATTEMPTS) throw e;
      process.stderr.write(`[ray] start ${attempt} of ${START_ATTEMPTS} failed, starting a new cluster: ${(e as Error).message}\n`);
    }
  }
}
async function startServing(opts: RayStartOptions): Promise<RayCluster> {
  const ray = await startRayOnce(opts);
  if (!opts.serving) return ray;
  const { config, app, timeoutMs } = opts.serving;
  try {
    await ray.deploy(config);
    await ray.waitApp(app, (a) => a.status === 'RUNNING', timeoutMs);
    return ray;
  } catch (e) {
    await ray.stop().catch(() => undefined);
    throw e;
  }
}

async function startRayOnce(opts: RayStartOptions): Promise<RayCluster> {
  const rayBin = opts.rayBin ?? process.env.RAY_BIN ?? DEFAULT_RAY_BIN;
  if (!fs.existsSync(rayBin)) throw new Error(`ray CLI not found at ${rayBin} (run scripts/setup.sh)`);
  const flags = await rayStartFlags(rayBin);

  // Ray puts unix sockets under --temp-dir and their paths must stay under ~107 bytes.
  const tempDir = fs.mkdtempSync('/tmp/ray');
  const releaseStart = await acquireStartLock('ray-start');
  // Picked after the lock, not before a wait of up to minutes (249 s seen) in which another lane's processes may
  // bind them. The node manager and the object manager are left at 0: the raylet binds kernel-chosen ports
  // itself, so nothing can take them.
  const named = [
    '--port',
    '--dashboard-port',
    '--dashboard-agent-listen-port',
    '--dashboard-agent-grpc-port',
    '--ray-client-server-port',
    '--runtime-env-agent-port',
    '--metrics-export-port',
    '--dashboard-grpc-port', // ≤ ~2.4x only
  ].filter((f) => flags.has(f));
  // + dashboard and autoscaler Prometheus ports (env only) + Serve HTTP proxy port.
  const ports = await freePorts(named.length + 3).catch((e: unknown) => {
    releaseStart();
    throw e;
  });
  const portOf = new Map(named.map((f, i) => [f, ports[i]]));
  const [dashboardMetricPort, autoscalerMetricPort, serveHttpPort] = ports.slice(named.length);

  const args = [
    'start', '--head', '--block',
    '--node-ip-address', '127.0.0.1',
    '--dashboard-host', '127.0.0.1',
    '--temp-dir', tempDir,
    '--num-cpus', String(opts.numCpus ?? 2),
    '--object-store-memory', String(opts.objectStoreMemoryBytes ?? 100_000_000),
    '--disable-usage-stats',
    // 0/0: each worker binds a kernel-chosen port when it starts. A pre-picked list would be
    // bound minutes later, long after another process may have been handed the same port.
    '--min-worker-port', '0',
    '--max-worker-port', '0',
  ];
  for (const [flag, port] of portOf) args.push(flag, String(port));

  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('RAY_')) delete env[k];
  Object.assign(env, {
    RAY_USAGE_STATS_ENABLED: '0',
    // With the multi-node switch off Ray keeps the node IP at 127.0.0.1 instead of replacing a
    // loopback --node-ip-address with the machine's routable address.
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER: '0',
    // Otherwise fixed ports 44227/44217, which collide between parallel clusters.
    DASHBOARD_METRIC_PORT: String(dashboardMetricPort),
    AUTOSCALER_METRIC_PORT: String(autoscalerMetricPort),
    // SIGTERM would otherwise first ask the GCS to drain the node, for up to 30 s (2.5x+).
    RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S: '0',
    // A loaded CI machine can register the raylet late; startRay retries a start that still fails.
    RAY_raylet_start_wait_time_s: '120',
    // How long the raylet waits for the metrics agent's port file (node_manager.cc, Ray 2.60; 30 s by default):
    // `RAY_agent_register_timeout_ms=1` kills a raylet there. The agent's HTTP port has a fixed 30 s, which
    // deferDashboardHead is for.
    RAY_agent_register_timeout_ms: '120000',
    RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S: '1',
    RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S: '1',
    PYTHONPATH: [RAY_APPS_DIR, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
    // As on a Ray image, `python` on the node is the interpreter Ray runs with, so a job entrypoint
    // `python -c 'import ray ...'` (the runbooks' wake-up) finds Ray.
    PATH: [path.dirname(rayBin), process.env.PATH].filter(Boolean).join(path.delimiter),
    PYTHONDONTWRITEBYTECODE: '1',
    // Python's own temp files (e.g. the dashboard's multiprocessing forkserver dir) then go away with tempDir.
    TMPDIR: tempDir,
    ...opts.env,
  });

  const t0 = Date.now();
  const proc = startProc('ray', rayBin, args, { env, cwd: RAY_APPS_DIR });
  // Beside two other lanes' stacks (load 30-50 on 2 cores) Ray's daemons started too slowly for Ray's own fixed
  // 30 s waits: the raylet died waiting for the dashboard agent's port file ("Timed out waiting for file
  // .../dashboard_agent_listen_port_…", node_manager.cc, Ray 2.60). The cluster runs ahead of the other peers
  // (the dashboard head behind the rest of it until that file exists); workers still get Ray's worker niceness
  // on top. Only root may raise a priority.
  const endDeferral = raisePriority(proc.pid) ? deferDashboardHead(proc.pid, tempDir) : () => undefined;
  const dashboardUrl = `http://127.0.0.1:${portOf.get('--dashboard-port')}`;
  const serveUrl = `http://127.0.0.1:${serveHttpPort}`;
  let lastConfig: ServeDeployConfig = { applications: [] };
  let dashboardLaunch: { argv: string[]; env: Record<string, string>; cwd: string } | undefined;
  const restartedDashboards: Proc[] = [];

  const sessionPids = () => clusterProcesses(proc.pid, tempDir).map((p) => p.pid);

  const stop = async (): Promise<void> => {
    // Only the CLI gets SIGTERM: it then stops its children in order; a group-wide signal
    // kills the GCS first and leaves the others retrying against it.
    try {
      process.kill(proc.pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([proc.exited, new Promise((r) => { timer = setTimeout(r, 20_000); })]);
    clearTimeout(timer);
    const before = clusterProcesses(proc.pid, tempDir);
    await proc.stop('SIGKILL', 1_000);
    for (const d of restartedDashboards) await d.stop('SIGKILL', 1_000);
    for (const p of before) killSame(p);
    await waitFor(
      `no process of the Ray cluster in ${tempDir} left`,
      async () => {
        const left = clusterProcesses(proc.pid, tempDir);
        for (const p of left) killSame(p);
        return left.length === 0;
      },
      15_000,
      250,
    );
    fs.rmSync(tempDir, { recursive: true, force: true });
  };

  let startMs: number;
  let rayVersion: string;
  try {
    await waitFor(
      'Ray dashboard Serve REST API',
      async () => {
        if (proc.child.exitCode !== null) {
          throw new Error(`ray start exited (${proc.child.exitCode}): ${stripAnsi(proc.output()).slice(-3000)}`);
        }
        // The dashboard's first Serve request runs ray.init() inside its event loop; on a loaded 2-core machine
        // that took longer than a 3 s request timeout, and retries every 250 ms only queued more work behind it
        // (sharding, CI 2026-12-07: 180 s of 3 s timeouts). Give one request 20 s and poll once a second.
        return (await httpGet(`${dashboardUrl}/api/serve/applications/`, 20_000)).status === 200;
      },
      // 90 s was too short beside two other lanes' stacks at load ~22 (dashboards-live, a full run 2026-12-07).
      opts.startTimeoutMs ?? 180_000,
      1_000,
    );
    startMs = Date.now() - t0;
    const version = JSON.parse((await httpGet(`${dashboardUrl}/api/ray/version`)).body) as { ray_version: string };
    rayVersion = version.ray_version;
  } catch (e) {
    const logs = tailSessionLogs(tempDir);
    await stop().catch(() => undefined);
    throw new Error(`${(e as Error).message}\n--- session logs ---\n${logs}`);
  } finally {
    endDeferral();
    setAutogroupNice(proc.pid, RUNNING_SESSION_NICE);
    releaseStart();
  }
  const ipMatch = /Local node IP:\s*(\S+)/.exec(stripAnsi(proc.output()));
  const headNodeIp = ipMatch ? ipMatch[1] : '127.0.0.1';

  const getApplicationsRaw = () => httpGet(`${dashboardUrl}/api/serve/applications/`);
  const getApplications = async (): Promise<ServeDetailsJson> => {
    const r = await getApplicationsRaw();
    if (r.status !== 200) throw new Error(`GET /api/serve/applications/ -> ${r.status}: ${r.body.slice(0, 500)}`);
    return JSON.parse(r.body) as ServeDetailsJson;
  };

  const deploy = async (config: string | ServeDeployConfig): Promise<void> => {
    const cfg = adaptConfigToRay(toConfig(config), rayVersion);
    const body = {
      ...cfg,
      proxy_location: 'HeadOnly',
      http_options: { ...(cfg.http_options as object | undefined), host: '127.0.0.1', port: serveHttpPort },
    };
    const res = await httpRequest('PUT', `${dashboardUrl}/api/serve/applications/`, JSON.stringify(body), 120_000);
    if (res.status !== 200) throw new Error(`PUT /api/serve/applications/ -> ${res.status}: ${res.body.slice(0, 2000)}`);
    lastConfig = cfg;
  };

  const cluster: RayCluster = {
    dashboardUrl,
    serveHttpPort,
    metricsExportPort: portOf.get('--metrics-export-port'),
    serveUrl,
    headNodeIp,
    rayVersion,
    tempDir,
    startMs,
    proc,
    deploy,
    getApplications,
    getApplicationsRaw,
    async waitApp(name, predicate, timeoutMs) {
      let last: AppJson | undefined;
      try {
        return await waitFor(
          `Serve app ${name}`,
          async () => {
            last = (await getApplications()).applications[name];
            return last && predicate(last) ? last : undefined;
          },
          timeoutMs,
          500,
        );
      } catch (e) {
        const cli = proc.child.exitCode === null && proc.child.signalCode === null ? 'ray start alive' : `ray start exited (${proc.child.exitCode ?? proc.child.signalCode})`;
        throw new Error(`${(e as Error).message}; last seen: ${JSON.stringify(summarizeApp(last))}; ${cli}\n${tailSessionLogs(tempDir)}`);
      }
    },
    async waitAppGone(name, timeoutMs) {
      await waitFor(`Serve app ${name} gone`, async () => !(name in (await getApplications()).applications), timeoutMs, 500);
    },
    async deleteApp(name) {
      await deploy({ ...lastConfig, applications: lastConfig.applications.filter((a) => a.name !== name) });
    },
    async deleteAllApps() {
      await deploy({ ...lastConfig, applications: [] });
    },
    async shutdownServe() {
      const res = await httpRequest('DELETE', `${dashboardUrl}/api/serve/applications/`, undefined, 120_000);
      if (res.status !== 200) throw new Error(`DELETE /api/serve/applications/ -> ${res.status}: ${res.body.slice(0, 2000)}`);
      lastConfig = { applications: [] };
    },
    request: (route, timeoutMs = 60_000) => httpGet(`${serveUrl}${route}`, timeoutMs),
    dashboardGet: (route, timeoutMs) => httpGet(`${dashboardUrl}${route}`, timeoutMs),
    async stopDashboard() {
      const family = dashboardFamily(clusterProcesses(proc.pid, tempDir));
      const dash = family[0];
      if (!dash) throw new Error('Ray dashboard process not found');
      dashboardLaunch = {
        argv: fs.readFileSync(`/proc/${dash.pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== ''),
        env: Object.fromEntries(
          fs
            .readFileSync(`/proc/${dash.pid}/environ`, 'utf8')
            .split('\0')
            .filter((kv) => kv.includes('='))
            .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
        ),
        cwd: fs.readlinkSync(`/proc/${dash.pid}/cwd`),
      };
      // SIGTERM is an "expected" exit for `ray start --block`, which keeps the rest of the cluster
      // running; any other exit code makes it tear everything down.
      try {
        process.kill(dash.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
      await waitFor('dashboard to exit', async () => readProcInfo(dash.pid) === null, 15_000, 100);
      for (const p of family) killSame(p);
      await waitFor(
        'dashboard port closed',
        async () => {
          try {
            await httpGet(`${dashboardUrl}/api/ray/version`, 1_000);
            return false;
          } catch {
            return true;
          }
        },
        10_000,
      );
    },
    async restartDashboard(timeoutMs = 60_000) {
      if (!dashboardLaunch) throw new Error('restartDashboard() needs a previous stopDashboard()');
      const [cmd, ...rest] = dashboardLaunch.argv;
      // Outside the CLI's process group; stop() still finds it through its log files under tempDir.
      const p = startProc('ray-dashboard', cmd, rest, { env: dashboardLaunch.env, cwd: dashboardLaunch.cwd });
      restartedDashboards.push(p);
      await waitFor(
        'restarted Ray dashboard Serve REST API',
        async () => {
          if (p.child.exitCode !== null) throw new Error(`dashboard exited (${p.child.exitCode}): ${p.output().slice(-2000)}`);
          return (await getApplicationsRaw()).status === 200;
        },
        timeoutMs,
        250,
      );
    },
    sessionPids,
    stop,
  };
  return cluster;
}

/** What a failed start or a stuck deploy needs to be understood: the last lines of the dashboard, raylet, GCS and Serve controller logs. */
function tailSessionLogs(tempDir: string): string {
  const dir = path.join(tempDir, 'session_latest', 'logs');
  let controller: string[] = [];
  try {
    controller = fs.readdirSync(path.join(dir, 'serve')).filter((f) => f.startsWith('controller_')).map((f) => path.join('serve', f));
  } catch {
    /* no Serve logs yet */
  }
  return ['dashboard.err', 'dashboard.log', 'raylet.err', 'raylet.out', 'gcs_server.err', ...controller]
    .map((f) => {
      try {
        const lines = fs.readFileSync(path.join(dir, f), 'utf8').split('\n');
        // A raylet that dies prints its reason above a long stack trace: keep the reason.
        const reasons = lines.slice(0, -20).filter((l) => /Check failed|Failed to start|Address already in use|\*\*\* /.test(l)).slice(0, 5);
        return `${f}:\n${[...reasons, ...lines.slice(-20)].join('\n')}`;
      } catch {
        return `${f}: (missing)`;
      }
    })
    .join('\n');
}

/** Compact status view for error messages and logs. */
export function summarizeApp(app: AppJson | undefined): unknown {
  if (!app) return null;
  return {
    status: app.status,
    message: app.message?.slice(0, 300),
    deployments: Object.fromEntries(
      Object.values(app.deployments ?? {}).map((d) => [
        d.name,
        {
          status: d.status,
          trigger: d.status_trigger,
          target: d.target_num_replicas,
          replicas: (d.replicas ?? []).map((r) => r.state),
        },
      ]),
    ),
  };
}
