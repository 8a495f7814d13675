import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hyphaWebsocketClient } from 'hypha-rpc';
import WebSocket from 'ws';
import { Proc, startProc, waitFor } from './proc';
import { repoRoot } from '../../src/util/repo-root';

/**
 * A test client that registers services in Hypha the way a BioEngine
 * ProxyDeployment does: client id `{prefix}-{sha1(app)[:8]}`, service id = app,
 * type `bioengine-app`, visibility public. It uses the real hypha-rpc client
 * directly (not the exporter's wrapper) so the exporter is tested against an
 * independent registrant.
 */

export function bioengineClientId(prefix: string, app: string): string {
  return `${prefix}-${crypto.createHash('sha1').update(app, 'utf8').digest('hex').slice(0, 8)}`;
}

interface RawServer {
  config: { workspace?: string };
  registerService(svc: Record<string, unknown>, config?: Record<string, unknown>): Promise<{ id: string }>;
  unregisterService(id: string): Promise<void>;
  generateToken(cfg: Record<string, unknown>): Promise<string>;
  disconnect(): Promise<void>;
}
type RawConnect = (cfg: Record<string, unknown>) => Promise<RawServer>;
const rawConnect = hyphaWebsocketClient.connectToServer as unknown as RawConnect;

function ensureWs(): void {
  const g = globalThis as { WebSocket?: unknown };
  if (g.WebSocket === undefined) g.WebSocket = WebSocket;
}

const quiet = { debug() {}, info() {}, warn() {}, error() {}, log() {} };

export interface RegistrantOptions {
  serverUrl: string;
  token?: string;
  workspace?: string;
  /** Worker client id (the prefix of the proxy's client id). */
  prefix: string;
  app: string;
  /** Default bioengine-app. */
  type?: string;
  /** Override the derived client id (to simulate a mismatch). */
  clientId?: string;
}

export interface Registrant {
  clientId: string;
  workspace: string;
  /** Full id "ws/client:app" of the service once registered. */
  serviceId: string;
  registered: boolean;
  /** Registers (again); resolves with the full id Hypha returned. */
  register(): Promise<string>;
  unregister(): Promise<void>;
  /** Closes the websocket: Hypha drops the client's services (only client_disconnected is broadcast). */
  disconnect(): Promise<void>;
}

export async function startRegistrant(opts: RegistrantOptions): Promise<Registrant> {
  ensureWs();
  const clientId = opts.clientId ?? bioengineClientId(opts.prefix, opts.app);
  const cfg: Record<string, unknown> = { server_url: opts.serverUrl, client_id: clientId, logger: quiet, method_timeout: 10 };
  if (opts.token) cfg.token = opts.token;
  if (opts.workspace) cfg.workspace = opts.workspace;
  const server = await rawConnect(cfg);
  const workspace = server.config.workspace ?? opts.workspace ?? '';
  const r: Registrant = {
    clientId,
    workspace,
    serviceId: `${workspace}/${clientId}:${opts.app}`,
    registered: false,
    async register() {
      const info = await server.registerService({
        id: opts.app,
        name: opts.app,
        type: opts.type ?? 'bioengine-app',
        config: { visibility: 'public', require_context: true },
        get_load: () => 0,
        ping: () => 'pong',
      }, { overwrite: true });
      r.registered = true;
      r.serviceId = info.id;
      return info.id;
    },
    async unregister() {
      await server.unregisterService(opts.app);
      r.registered = false;
    },
    async disconnect() {
      await server.disconnect();
      r.registered = false;
    },
  };
  return r;
}

/** A token for `workspace` (created if needed) minted with the root token. */
export async function workspaceToken(serverUrl: string, rootToken: string, workspace: string, permission: 'read' | 'read_write' | 'admin'): Promise<string> {
  ensureWs();
  const server = await rawConnect({ server_url: serverUrl, token: rootToken, logger: quiet, method_timeout: 10 });
  try {
    const s = server as unknown as { createWorkspace(c: Record<string, unknown>): Promise<unknown> };
    try {
      await s.createWorkspace({ id: workspace, persistent: true, description: 'test workspace' });
    } catch (e) {
      if (!String(e).includes('already exists')) throw e;
    }
    return await server.generateToken({ workspace, permission, expires_in: 3600 });
  } finally {
    await server.disconnect();
  }
}

export interface PythonRegistrant {
  proc: Proc;
  clientId: string;
  /** Full id of the last registration. */
  serviceId: string;
  unregister(): Promise<void>;
  register(): Promise<string>;
  /** Clean disconnect (SIGTERM). */
  stop(): Promise<void>;
}

/**
 * The Python twin of startRegistrant (test/harness/bioengine_proxy.py, hypha-rpc
 * 0.21.47 from .venv/hypha): the client BioEngine itself uses. Controlled by
 * signals; the token goes through a 0600 file, never argv.
 */
export async function startPythonRegistrant(opts: RegistrantOptions): Promise<PythonRegistrant> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'be-proxy-'));
  const args = [path.join(repoRoot(), 'test', 'harness', 'bioengine_proxy.py'), '--server-url', opts.serverUrl, '--prefix', opts.prefix, '--app', opts.app];
  if (opts.token) {
    const f = path.join(dir, 'token');
    fs.writeFileSync(f, opts.token, { mode: 0o600 });
    args.push('--token-file', f);
  }
  if (opts.workspace) args.push('--workspace', opts.workspace);
  if (opts.type) args.push('--type', opts.type);
  const proc = startProc('bioengine-proxy', path.join(repoRoot(), '.venv', 'hypha', 'bin', 'python'), args);
  const count = (re: RegExp) => (proc.output().match(re) ?? []).length;
  const lastId = () => [...proc.output().matchAll(/^REGISTERED (\S+)$/gm)].pop()?.[1] ?? '';
  await waitFor('python registrant registered', async () => {
    if (proc.child.exitCode !== null) throw new Error(`bioengine_proxy.py exited: ${proc.output().slice(-2000)}`);
    return count(/^REGISTERED /gm) > 0;
  }, 30_000, 50);
  const r: PythonRegistrant = {
    proc,
    clientId: bioengineClientId(opts.prefix, opts.app),
    serviceId: lastId(),
    async unregister() {
      const n = count(/^UNREGISTERED$/gm);
      process.kill(proc.pid, 'SIGUSR1');
      await waitFor('python unregister', async () => count(/^UNREGISTERED$/gm) > n, 10_000, 20);
    },
    async register() {
      const n = count(/^REGISTERED /gm);
      process.kill(proc.pid, 'SIGUSR2');
      await waitFor('python register', async () => count(/^REGISTERED /gm) > n, 10_000, 20);
      r.serviceId = lastId();
      return r.serviceId;
    },
    async stop() {
      await proc.stop('SIGTERM', 5000);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return r;
}

export interface WorkerAppReport {
  status: string;
  service_registered?: boolean | null;
  deployed_by_worker_client_id?: string;
}

/**
 * What get_app_status answers: fixed, or computed at each call. Computed synchronously: an answer that waits (on
 * Ray, say) can meet a Hypha that went down meanwhile, and hypha-rpc then rejects its send where nobody catches it.
 */
export type WorkerApps = Record<string, WorkerAppReport> | (() => Record<string, WorkerAppReport>);

export interface WorkerStandIn {
  clientId: string;
  serviceId: string;
  /** What get_app_status answers from now on. */
  setApps(apps: WorkerApps): void;
  disconnect(): Promise<void>;
}

/**
 * A `bioengine-worker` service registered in the real Hypha server by a real
 * client, answering get_status/get_app_status with the fields BioEngine
 * workers report (bioengine.md §2.2-2.3). There is no BioEngine worker in the
 * test environment; this stands in for what one says, not for Hypha.
 */
export async function startWorkerStandIn(opts: {
  serverUrl: string;
  token: string;
  clientId: string;
  workspace?: string;
  apps: WorkerApps;
  /** What get_status reports as `bioengine_version` (default '0.16.1'). */
  version?: string;
}): Promise<WorkerStandIn> {
  ensureWs();
  const cfg: Record<string, unknown> = { server_url: opts.serverUrl, client_id: opts.clientId, token: opts.token, logger: quiet, method_timeout: 10 };
  if (opts.workspace) cfg.workspace = opts.workspace;
  const server = await rawConnect(cfg);
  const workspace = server.config.workspace ?? '';
  let apps = opts.apps;
  const info = await server.registerService({
    id: 'bioengine-worker',
    name: 'BioEngine Worker (test stand-in)',
    type: 'bioengine-worker',
    config: { visibility: 'public', require_context: true },
    get_status: () => ({ client_id: opts.clientId, workspace, is_ready: true, bioengine_version: opts.version ?? '0.16.1' }),
    get_app_status: () => (typeof apps === 'function' ? apps() : apps),
  });
  return {
    clientId: opts.clientId,
    serviceId: info.id,
    setApps(next) {
      apps = next;
    },
    async disconnect() {
      await server.disconnect();
    },
  };
}

/** One client registering many services (e.g. for a registry-scale benchmark); disconnect removes them all. */
export async function registerMany(opts: { serverUrl: string; token: string; clientId: string; serviceIds: string[]; type?: string }): Promise<{ disconnect(): Promise<void> }> {
  ensureWs();
  const server = await rawConnect({ server_url: opts.serverUrl, client_id: opts.clientId, token: opts.token, logger: quiet, method_timeout: 30 });
  for (const id of opts.serviceIds) {
    await server.registerService({ id, type: opts.type ?? 'bioengine-app', config: { visibility: 'public' }, ping: () => 'pong' });
  }
  return { disconnect: () => server.disconnect() };
}

/** Deletes a workspace with the root token (its clients are dropped by the server). */
export async function deleteWorkspace(serverUrl: string, rootToken: string, workspace: string): Promise<void> {
  ensureWs();
  const server = await rawConnect({ server_url: serverUrl, token: rootToken, logger: quiet, method_timeout: 10 });
  try {
    await (server as unknown as { deleteWorkspace(id: string): Promise<unknown> }).deleteWorkspace(workspace);
  } finally {
    await server.disconnect();
  }
}

export interface WorkerProcess {
  proc: Proc;
  serviceId: string;
  stop(): Promise<void>;
}

/** A worker stand-in in its own process (test/harness/worker-process.ts), to be frozen with SIGSTOP. */
export async function startWorkerProcess(opts: { serverUrl: string; token: string; clientId: string; version?: string }): Promise<WorkerProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'worker-'));
  const tokenFile = path.join(dir, 'token');
  fs.writeFileSync(tokenFile, opts.token, { mode: 0o600 });
  const proc = startProc('worker-process', process.execPath, [path.join(repoRoot(), 'dist', 'test', 'harness', 'worker-process.js')], {
    env: { ...process.env, HYPHA_URL: opts.serverUrl, HYPHA_TOKEN_FILE: tokenFile, WORKER_CLIENT_ID: opts.clientId, ...(opts.version ? { WORKER_VERSION: opts.version } : {}) },
  });
  const serviceId = await waitFor('worker process ready', async () => {
    if (proc.child.exitCode !== null) throw new Error(`worker-process exited: ${proc.output().slice(-2000)}`);
    return /^READY (\S+)$/m.exec(proc.output())?.[1];
  }, 30_000, 50);
  return {
    proc,
    serviceId,
    async stop() {
      try { process.kill(-proc.pid, 'SIGCONT'); } catch { /* gone */ }
      await proc.stop('SIGTERM', 5000);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface StandinProvider {
  disconnect(): Promise<void>;
}

/**
 * A client providing services shaped like the artifact manager's read(artifact_id, silent): a
 * watched service with as many providers (client ids) as a test starts.
 */
export async function startStandinProvider(opts: { serverUrl: string; token: string; clientId: string; serviceIds: readonly string[] }): Promise<StandinProvider> {
  ensureWs();
  const server = await rawConnect({ server_url: opts.serverUrl, token: opts.token, client_id: opts.clientId, logger: quiet, method_timeout: 10 });
  for (const id of opts.serviceIds) {
    await server.registerService({
      id,
      config: { visibility: 'protected' },
      read: (artifactId: string, silent?: boolean) => ({ id: artifactId, silent: silent ?? false, servedBy: opts.clientId }),
    });
  }
  return { disconnect: () => server.disconnect() };
}
