import crypto from 'node:crypto';
import { hyphaWebsocketClient } from 'hypha-rpc';
import WebSocket from 'ws';

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
