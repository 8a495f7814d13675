import { hyphaWebsocketClient } from 'hypha-rpc';
import WebSocket from 'ws';
import { SourceError, withTimeout } from '../../util/errors';
import type { ListServicesQuery } from './types';

// The only file that touches npm hypha-rpc@0.21.40 and its websocket. The
// library is untyped where we need it (its index.d.ts lacks the logger option,
// subscribe and getServiceInfo) and reaches into private RPC internals for
// calls at an explicit provider, so every such cast lives here. Results stay
// `unknown`: parsing them is the caller's job.

export type RawHandler = (msg: unknown) => void;
export type RawMethod = (...args: unknown[]) => Promise<unknown>;

interface RawRpc {
  _generate_remote_method(encoded: {
    _rserver?: string;
    _rtarget: string;
    _rmethod: string;
    _rpromise: boolean;
    _rdoc?: string | null;
  }): RawMethod;
  _server_base_url?: string;
}

interface RawServer {
  config: unknown;
  rpc: RawRpc;
  listServices(query?: unknown): Promise<unknown>;
  getServiceInfo(id: string, config?: unknown): Promise<unknown>;
  subscribe(events: string[]): Promise<unknown>;
  on(event: string, handler: RawHandler): void;
  off(event: string, handler?: RawHandler): void;
  disconnect(): Promise<void>;
}

type RawLogFn = (...a: unknown[]) => void;

interface RawConnectConfig {
  server_url: string;
  client_id: string;
  workspace?: string;
  token?: string;
  method_timeout: number;
  WebSocketClass: new (url: string) => WebSocket;
  logger: { debug: RawLogFn; info: RawLogFn; warn: RawLogFn; error: RawLogFn; log: RawLogFn };
}

const rawConnect = hyphaWebsocketClient.connectToServer as unknown as (cfg: RawConnectConfig) => Promise<RawServer>;

/** hypha-rpc reads the global WebSocket's constants in its timers, and Node 20 has no global one. */
export function ensureWebSocketGlobal(): void {
  const g = globalThis as { WebSocket?: unknown };
  if (g.WebSocket === undefined) g.WebSocket = WebSocket;
}

function normalizeServerUrl(url: string): string {
  const u = new URL(url);
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  if (!u.pathname.endsWith('/ws')) u.pathname = `${u.pathname.replace(/\/+$/, '')}/ws`;
  return u.toString();
}

function toRawQuery(q: ListServicesQuery | string | undefined): unknown {
  if (q === undefined || typeof q === 'string') return q;
  const out: Record<string, string> = {};
  if (q.workspace !== undefined) out.workspace = q.workspace;
  if (q.clientId !== undefined) out.client_id = q.clientId;
  if (q.serviceId !== undefined) out.service_id = q.serviceId;
  if (q.type !== undefined) out.type = q.type;
  if (q.visibility !== undefined) out.visibility = q.visibility;
  return out;
}

export interface RawOpenOptions {
  /** http(s):// or ws(s):// URL of the server. */
  serverUrl: string;
  clientId: string;
  workspace?: string;
  token?: string;
  /** Deadline of the handshake and manager lookup. */
  timeoutMs: number;
  /** hypha-rpc's own log lines, each flattened to one text. */
  log(level: string, text: string): void;
}

/** Filled in once the caller listens; the socket class calls it. */
interface CloseHook {
  fn?: (ws: WebSocket, code: number, reason: Buffer) => void;
}

/**
 * One hypha-rpc connection and the websocket under it. Everything returns what
 * the library returns; no deadlines other than the handshake's.
 */
export class RawSession {
  /** @internal use openSession() */
  constructor(
    private readonly server: RawServer,
    private readonly socket: WebSocket,
    private readonly sockets: readonly WebSocket[],
    private readonly closeHook: CloseHook,
  ) {}

  /** The workspace manager's connection info, unparsed. */
  get config(): unknown {
    return this.server.config;
  }

  get socketClosed(): boolean {
    return this.socket.readyState === WebSocket.CLOSED;
  }

  listServices(query?: ListServicesQuery | string): Promise<unknown> {
    return this.server.listServices(toRawQuery(query));
  }

  getServiceInfo(id: string, mode?: string): Promise<unknown> {
    return this.server.getServiceInfo(id, mode ? { mode } : undefined);
  }

  /**
   * A method at an explicit provider, built the way a proxy's methods are,
   * without asking the server to resolve the service first.
   */
  remoteMethod(workspace: string, clientId: string, serviceId: string, method: string): RawMethod {
    return this.server.rpc._generate_remote_method({
      _rserver: this.server.rpc._server_base_url,
      _rtarget: `${workspace}/${clientId}`,
      _rmethod: `services.${serviceId}.${method}`,
      _rpromise: true,
      _rdoc: null,
    });
  }

  subscribe(events: readonly string[]): Promise<unknown> {
    return this.server.subscribe([...events]);
  }

  on(event: string, handler: RawHandler): void {
    this.server.on(event, handler);
  }

  off(event: string, handler: RawHandler): void {
    this.server.off(event, handler);
  }

  /** Closes the RPC; marks it closed synchronously, which keeps hypha-rpc's own reconnect from starting. */
  disconnect(): Promise<void> {
    return this.server.disconnect();
  }

  /** Drops every socket at once, for when a polite disconnect hangs or is pointless. */
  terminate(): void {
    for (const s of this.sockets) s.terminate();
  }

  ping(): void {
    try { this.socket.ping(); } catch { /* the close handler will run */ }
  }

  onPong(fn: () => void): void {
    this.socket.on('pong', fn);
  }

  /**
   * Runs once when the websocket closes, before hypha-rpc sees the close; also
   * when it closed before this was called (a close right after the handshake).
   */
  onSocketClose(fn: (code: number, reason: Buffer) => void): void {
    this.closeHook.fn = (ws, code, reason) => {
      if (ws === this.socket) fn(code, reason);
    };
    if (this.socket.readyState !== WebSocket.OPEN) queueMicrotask(() => fn(1006, Buffer.alloc(0)));
  }
}

/** Connects; rejects with hypha-rpc's error, or with a SourceError (a timeout after opts.timeoutMs, a socket closed at once). */
export async function openSession(opts: RawOpenOptions): Promise<RawSession> {
  ensureWebSocketGlobal();
  const sockets: WebSocket[] = [];
  const closeHook: CloseHook = {};
  // hypha-rpc 0.21.40 fires no event when its socket closes, so the socket
  // class it constructs is ours, and reports the close itself.
  class TrackedWebSocket extends WebSocket {
    constructor(...args: ConstructorParameters<typeof WebSocket>) {
      super(...args);
      // An 'error' with no listener would throw from the emitter (e.g. when we
      // terminate a socket still connecting); hypha-rpc handles errors itself.
      this.on('error', () => undefined);
      // Registered before hypha-rpc's own onclose, so the caller can close the
      // RPC (and thereby switch off its reconnect loop) before that loop starts.
      this.on('close', (code: number, reason: Buffer) => closeHook.fn?.(this, code, reason));
      sockets.push(this);
    }
  }
  const flatten = (level: string) => (...args: unknown[]) =>
    opts.log(level, args.map((a) => (typeof a === 'string' ? a : a instanceof Error ? a.message : `[${typeof a}]`)).join(' '));
  const cfg: RawConnectConfig = {
    server_url: normalizeServerUrl(opts.serverUrl),
    client_id: opts.clientId,
    // Used by hypha-rpc for the handshake wait and the manager lookup; our own
    // deadline below is the one that counts.
    method_timeout: Math.max(1, Math.ceil(opts.timeoutMs / 1000)),
    WebSocketClass: TrackedWebSocket,
    logger: { debug: flatten('debug'), info: flatten('info'), warn: flatten('warn'), error: flatten('error'), log: flatten('log') },
  };
  if (opts.workspace !== undefined) cfg.workspace = opts.workspace;
  if (opts.token !== undefined) cfg.token = opts.token;
  const pending = rawConnect(cfg);
  let server: RawServer;
  try {
    server = await withTimeout(pending, opts.timeoutMs, 'connect');
  } catch (e) {
    // A handshake that completes after our deadline must not leak a connection.
    pending.then((s) => s.disconnect()).catch(() => undefined);
    for (const s of sockets) s.terminate();
    throw e;
  }
  const socket = sockets.filter((s) => s.readyState === WebSocket.OPEN).pop();
  if (!socket) {
    await server.disconnect().catch(() => undefined);
    for (const s of sockets) s.terminate();
    throw new SourceError('connect', 'websocket closed right after the handshake');
  }
  return new RawSession(server, socket, sockets, closeHook);
}
