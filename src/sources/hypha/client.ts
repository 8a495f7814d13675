import crypto from 'node:crypto';
import { hyphaWebsocketClient } from 'hypha-rpc';
import WebSocket from 'ws';
import { withTimeout } from '../../util/errors';
import { Secret } from '../../util/secret';
import { classify, conciseMessage, HyphaError, HyphaErrorKind, toHyphaError } from './errors';
import {
  ConnectionInfo,
  HyphaEvent,
  HyphaEventType,
  ListServicesQuery,
  parseConnectionInfo,
  parseEvent,
  parseServiceId,
  parseServiceInfo,
  parseServiceList,
  ServiceInfo,
} from './types';

// A typed wrapper over npm hypha-rpc@0.21.40 on Node 20. Two layers:
//  - HyphaConnection: one websocket connection ("generation"); every call has
//    our own hard deadline, and a closed socket is noticed at once (0.21.40
//    fires no disconnect event, so the WebSocket class is wrapped).
//  - HyphaClient: keeps one live connection, rebuilding it from scratch after a
//    close, a timeout or a stale-manager error. hypha-rpc's own reconnect is
//    never used, because after a server-id change it keeps calling the old
//    manager (hypha.md §7.8) and drops our event subscriptions (§5).

/** Pino-compatible subset. */
export interface HyphaLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

const silentLogger: HyphaLogger = { debug() {}, info() {}, warn() {}, error() {} };

export interface HyphaConnectOptions {
  /** http(s):// (converted to ws(s)://…/ws) or ws(s):// URL of the Hypha server. */
  serverUrl: string;
  /** Must match the token's workspace; omitted = the token's (or a new anonymous) workspace. */
  workspace?: string;
  token?: Secret;
  /** Client id of this connection; default "hypha-serve-exporter-<random>". */
  clientId?: string;
  /** Deadline of every RPC call unless a call passes its own (default 5000). */
  callTimeoutMs?: number;
  /** Deadline of the websocket handshake + manager lookup (default 10000). */
  connectTimeoutMs?: number;
  /** Websocket ping interval for half-open detection; 0 disables (default 10000). */
  heartbeatIntervalMs?: number;
  logger?: HyphaLogger;
}

export interface CallOptions {
  timeoutMs?: number;
}

export interface ServiceCallOptions extends CallOptions {
  /** Keyword arguments (sent with hypha-rpc's `_rkwargs` marker after the positional ones). */
  kwargs?: Record<string, unknown>;
}

/** A service proxy resolved on one connection generation. */
export interface RemoteService extends Pick<ServiceInfo, 'id' | 'workspace' | 'clientId' | 'serviceId' | 'name' | 'type'> {
  /** Callable method names (top level). */
  methods: readonly string[];
  /** Generation of the connection it was resolved on; it stops working when that connection is gone. */
  generation: number;
  call(method: string, args?: readonly unknown[], opts?: ServiceCallOptions): Promise<unknown>;
}

export interface GetServiceOptions extends CallOptions {
  /** Hypha's selection mode when several providers match ("random", "first", "last", "exact", ...). */
  mode?: string;
}

// ------------------------------------------------------------ raw hypha-rpc

type RawHandler = (msg: unknown) => void;
type RawMethod = (...args: unknown[]) => Promise<unknown>;

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

/** The workspace-manager object connectToServer returns, as far as we use it. */
interface RawServer {
  config: unknown;
  rpc: RawRpc;
  listServices(query?: unknown): Promise<unknown>;
  getServiceInfo(id: string, config?: unknown): Promise<unknown>;
  getService(id: string, config?: unknown): Promise<unknown>;
  subscribe(events: string[]): Promise<unknown>;
  echo(msg: unknown): Promise<unknown>;
  on(event: string, handler: RawHandler): void;
  off(event: string, handler?: RawHandler): void;
  disconnect(): Promise<void>;
}

interface RawRpcLogger {
  debug(...a: unknown[]): void;
  info(...a: unknown[]): void;
  warn(...a: unknown[]): void;
  error(...a: unknown[]): void;
  log(...a: unknown[]): void;
}

interface RawConnectConfig {
  server_url: string;
  client_id: string;
  workspace?: string;
  token?: string;
  method_timeout: number;
  WebSocketClass: new (url: string) => WebSocket;
  logger: RawRpcLogger;
}

// index.d.ts types the config without logger/ping options and the result without
// subscribe/getServiceInfo (hypha.md §7.2); this is the single place the
// untyped library is given a shape.
const rawConnect = hyphaWebsocketClient.connectToServer as unknown as (cfg: RawConnectConfig) => Promise<RawServer>;

/** hypha-rpc reads the global WebSocket's constants in timers; Node 20 has no global one (§7.3). */
export function ensureWebSocketGlobal(): void {
  const g = globalThis as { WebSocket?: unknown };
  if (g.WebSocket === undefined) g.WebSocket = WebSocket;
}

export function normalizeServerUrl(url: string): string {
  const u = new URL(url);
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  if (!u.pathname.endsWith('/ws')) u.pathname = `${u.pathname.replace(/\/+$/, '')}/ws`;
  return u.toString();
}

function rpcLogger(log: HyphaLogger, secrets: readonly (Secret | undefined)[], clientId: string): RawRpcLogger {
  // hypha-rpc logs reconnect chatter and whole event objects; we keep it at
  // debug, as one scrubbed line, because our own layer reports what matters.
  const forward = (level: string) => (...args: unknown[]) => {
    const text = args
      .map((a) => (typeof a === 'string' ? a : a instanceof Error ? a.message : `[${typeof a}]`))
      .join(' ');
    log.debug({ hypha_rpc: level, client_id: clientId }, conciseMessage(text, secrets));
  };
  return { debug: forward('debug'), info: forward('info'), warn: forward('warn'), error: forward('error'), log: forward('log') };
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

export type TroubleListener = (kind: HyphaErrorKind, op: string, message: string) => void;

// ------------------------------------------------------------ one connection

/**
 * One websocket connection to Hypha. It never reconnects by itself: when its
 * socket closes, onClose listeners run once and every further call fails fast
 * with a `never_sent` error. Create a new one (HyphaClient does) instead.
 */
export class HyphaConnection {
  readonly info: ConnectionInfo;
  #open = true;
  #closeReason = '';
  readonly #closeListeners = new Set<(reason: string) => void>();
  readonly #troubleListeners = new Set<TroubleListener>();
  #heartbeat: NodeJS.Timeout | undefined;
  #awaitingPong = false;
  readonly #subscribedHandlers: { event: string; handler: RawHandler }[] = [];
  /** Entries of list results that did not parse (counted, not fatal). */
  malformedTotal = 0;

  /** @internal use connect() */
  constructor(
    readonly generation: number,
    private readonly server: RawServer,
    private readonly socket: WebSocket,
    info: ConnectionInfo,
    private readonly secrets: readonly (Secret | undefined)[],
    private readonly callTimeoutMs: number,
    heartbeatIntervalMs: number,
    private readonly log: HyphaLogger,
  ) {
    this.info = info;
    if (socket.readyState !== WebSocket.OPEN) queueMicrotask(() => this.socketClosed(1006, Buffer.alloc(0)));
    socket.on('pong', () => {
      this.#awaitingPong = false;
    });
    // hypha-rpc's own reconnect announces itself with "connected"; we never let it
    // run (the socket close tears this connection down first), so seeing it means
    // this object is no longer trustworthy.
    server.on('connected', () => this.#trouble('never_sent', 'reconnect', 'hypha-rpc reconnected underneath; rebuilding'));
    if (heartbeatIntervalMs > 0) {
      this.#heartbeat = setInterval(() => this.#beat(), heartbeatIntervalMs);
      this.#heartbeat.unref();
    }
  }

  get open(): boolean {
    return this.#open;
  }

  /** @internal the socket's close event (wired by connect()). */
  socketClosed(code: number, reason: Buffer): void {
    this.#markClosed(`websocket closed (code ${code}${reason.length ? `: ${reason.toString('utf8').slice(0, 200)}` : ''})`);
  }

  get workspace(): string {
    return this.info.workspace;
  }

  get clientId(): string {
    return this.info.clientId;
  }

  get closeReason(): string {
    return this.#closeReason;
  }

  /** Runs once when the socket closes or disconnect() is called. Returns an unsubscribe function. */
  onClose(listener: (reason: string) => void): () => void {
    if (!this.#open) {
      listener(this.#closeReason);
      return () => {};
    }
    this.#closeListeners.add(listener);
    return () => this.#closeListeners.delete(listener);
  }

  /** Called on call failures that suggest the connection is unusable (timeouts, failed sends, stale manager). */
  onTrouble(listener: TroubleListener): () => void {
    this.#troubleListeners.add(listener);
    return () => this.#troubleListeners.delete(listener);
  }

  /** All services matching the query that this identity may see (one RPC). */
  async listServices(query?: ListServicesQuery | string, opts?: CallOptions): Promise<ServiceInfo[]> {
    const raw = await this.#call('listServices', () => this.server.listServices(toRawQuery(query)), opts);
    const parsed = parseServiceList(raw);
    if (!parsed) throw new HyphaError('schema', 'listServices', 'listServices: result is not a list');
    this.malformedTotal += parsed.malformed;
    return parsed.services;
  }

  /** Registry entry of one service; rejects with kind `not_found` when absent. */
  async getServiceInfo(id: string, opts?: GetServiceOptions): Promise<ServiceInfo> {
    const cfg = opts?.mode ? { mode: opts.mode } : undefined;
    const raw = await this.#call('getServiceInfo', () => this.server.getServiceInfo(id, cfg), opts);
    const info = parseServiceInfo(raw);
    if (!info) throw new HyphaError('schema', 'getServiceInfo', 'getServiceInfo: result has no valid id');
    return info;
  }

  /** Resolves a service (any id form Hypha accepts) into a callable proxy bound to this connection. */
  async getService(id: string, opts?: GetServiceOptions): Promise<RemoteService> {
    const timeoutMs = opts?.timeoutMs ?? this.callTimeoutMs;
    // The server-side lookup has its own 10 s default; keep it inside our deadline.
    const cfg: Record<string, unknown> = { timeout: Math.max(1, Math.ceil(timeoutMs / 1000)) };
    if (opts?.mode) cfg.mode = opts.mode;
    const raw = await this.#call('getService', () => this.server.getService(id, cfg), { timeoutMs });
    if (raw === null || typeof raw !== 'object') throw new HyphaError('schema', 'getService', 'getService: result is not an object');
    const obj = raw as Record<string, unknown>;
    const fullId = typeof obj.id === 'string' ? obj.id : '';
    const ids = parseServiceId(fullId);
    if (!ids) throw new HyphaError('schema', 'getService', 'getService: result has no valid id');
    const methods = new Map<string, RawMethod>();
    for (const [k, v] of Object.entries(obj)) if (typeof v === 'function') methods.set(k, v as RawMethod);
    const call = (method: string, args: readonly unknown[] = [], o?: ServiceCallOptions): Promise<unknown> => {
      const fn = methods.get(method);
      if (!fn) return Promise.reject(new HyphaError('not_found', `${ids.serviceId}.${method}`, `method ${method} not found on ${fullId}`));
      const all = o?.kwargs ? [...args, { ...o.kwargs, _rkwargs: true }] : [...args];
      return this.#call(`${ids.serviceId}.${method}`, () => fn(...all), o, false);
    };
    return {
      id: `${ids.workspace}/${ids.clientId}:${ids.serviceId}`,
      ...ids,
      name: typeof obj.name === 'string' ? obj.name : undefined,
      type: typeof obj.type === 'string' ? obj.type : undefined,
      methods: [...methods.keys()],
      generation: this.generation,
      call,
    };
  }

  /**
   * Calls a method at an explicit provider ("ws/client:svc") without resolving
   * it first: what a proxy cached earlier does. Messages to a provider that no
   * longer exists are dropped by the server, so this times out rather than
   * failing (unless the provider left within the server's 120 s memory).
   */
  async callDirect(fullServiceId: string, method: string, args: readonly unknown[] = [], opts?: ServiceCallOptions): Promise<unknown> {
    const ids = parseServiceId(fullServiceId);
    if (!ids) throw new HyphaError('schema', 'callDirect', `not a full service id: ${fullServiceId}`);
    const fn = this.server.rpc._generate_remote_method({
      _rserver: this.server.rpc._server_base_url,
      _rtarget: `${ids.workspace}/${ids.clientId}`,
      _rmethod: `services.${ids.serviceId}.${method}`,
      _rpromise: true,
      _rdoc: null,
    });
    const all = opts?.kwargs ? [...args, { ...opts.kwargs, _rkwargs: true }] : [...args];
    return this.#call(`${ids.serviceId}.${method}`, () => fn(...all), opts, false);
  }

  /**
   * Subscribes this connection to workspace events (only the connection's own
   * workspace has any). Handlers are attached before the subscription so no
   * event in between is lost.
   */
  async subscribe(events: readonly HyphaEventType[], handler: (e: HyphaEvent) => void, opts?: CallOptions): Promise<void> {
    for (const event of events) {
      const h: RawHandler = (msg) => {
        const e = parseEvent(msg, Date.now(), this.generation);
        if (e) handler(e);
        else this.log.debug({ event }, 'unparseable hypha event ignored');
      };
      this.server.on(event, h);
      this.#subscribedHandlers.push({ event, handler: h });
    }
    await this.#call('subscribe', () => this.server.subscribe([...events]), opts);
  }

  /** Round trip to the workspace manager, milliseconds. */
  async ping(opts?: CallOptions): Promise<number> {
    const t0 = Date.now();
    await this.#call('echo', () => this.server.echo('ping'), opts);
    return Date.now() - t0;
  }

  /** Closes the websocket (idempotent; never throws, never waits long). */
  async disconnect(reason = 'disconnect requested'): Promise<void> {
    const wasOpen = this.#open;
    this.#markClosed(reason);
    if (!wasOpen && this.socket.readyState === WebSocket.CLOSED) return;
    for (const { event, handler } of this.#subscribedHandlers.splice(0)) {
      try { this.server.off(event, handler); } catch { /* already cleared */ }
    }
    try {
      await withTimeout(this.server.disconnect(), 2000, 'disconnect');
    } catch {
      this.socket.terminate();
    }
  }

  #markClosed(reason: string): void {
    if (!this.#open) return;
    this.#open = false;
    this.#closeReason = reason;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    // Stop hypha-rpc's internal reconnect loop before it starts: rpc.disconnect()
    // marks the connection closed synchronously.
    void this.server.disconnect().catch(() => undefined);
    for (const l of [...this.#closeListeners]) {
      try { l(reason); } catch (e) { this.log.warn({ error: conciseMessage(e) }, 'hypha close listener failed'); }
    }
    this.#closeListeners.clear();
  }

  #beat(): void {
    if (!this.#open) return;
    if (this.#awaitingPong) {
      this.log.warn({ generation: this.generation }, 'hypha websocket missed a heartbeat; dropping the connection');
      this.socket.terminate();
      return;
    }
    this.#awaitingPong = true;
    try { this.socket.ping(); } catch { /* the close handler will run */ }
  }

  #trouble(kind: HyphaErrorKind, op: string, message: string): void {
    for (const l of [...this.#troubleListeners]) l(kind, op, message);
  }

  async #call<T>(op: string, fn: () => Promise<T>, opts?: CallOptions, managerCall = true): Promise<T> {
    if (!this.#open) throw new HyphaError('never_sent', op, `${op}: connection is closed (${this.#closeReason})`);
    const ms = opts?.timeoutMs ?? this.callTimeoutMs;
    try {
      return await withTimeout(fn(), ms, op);
    } catch (e) {
      const err = toHyphaError(e, op, this.secrets);
      // Timeouts and failed sends make the connection suspect; so does a
      // not-found aimed at the manager (it means the server id changed).
      const stale = err.kind === 'not_found' && /\*\/manager-/.test(err.message);
      if (err.kind === 'timeout' && managerCall) this.#trouble(err.kind, op, err.message);
      else if (err.kind === 'never_sent' || err.kind === 'connection_lost' || stale) this.#trouble(err.kind, op, err.message);
      throw err;
    }
  }
}

let generationSeq = 0;

/** Opens one connection. Rejects with a HyphaError of kind connect, auth or timeout. */
export async function connect(opts: HyphaConnectOptions & { generation?: number }): Promise<HyphaConnection> {
  ensureWebSocketGlobal();
  const log = opts.logger ?? silentLogger;
  const secrets = [opts.token];
  const clientId = opts.clientId ?? `hypha-serve-exporter-${crypto.randomBytes(4).toString('hex')}`;
  const connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
  const sockets: WebSocket[] = [];
  const closeHook: { fn?: (ws: WebSocket, code: number, reason: Buffer) => void } = {};
  class TrackedWebSocket extends WebSocket {
    constructor(...args: ConstructorParameters<typeof WebSocket>) {
      super(...args);
      // An 'error' with no listener would throw from the emitter (e.g. when we
      // terminate a socket still connecting); hypha-rpc handles errors itself.
      this.on('error', () => undefined);
      // Registered before hypha-rpc's own onclose, so we close the RPC (and
      // thereby switch off its reconnect loop) before that loop can start.
      this.on('close', (code: number, reason: Buffer) => closeHook.fn?.(this, code, reason));
      sockets.push(this);
    }
  }
  const cfg: RawConnectConfig = {
    server_url: normalizeServerUrl(opts.serverUrl),
    client_id: clientId,
    // hypha-rpc uses it for the handshake wait and the manager lookup; our own
    // deadline below is the one that counts.
    method_timeout: Math.max(1, Math.ceil(connectTimeoutMs / 1000)),
    WebSocketClass: TrackedWebSocket,
    logger: rpcLogger(log, secrets, clientId),
  };
  if (opts.workspace !== undefined) cfg.workspace = opts.workspace;
  if (opts.token !== undefined) cfg.token = opts.token.reveal();
  const pending = rawConnect(cfg);
  let server: RawServer;
  try {
    server = await withTimeout(pending, connectTimeoutMs, 'connect');
  } catch (e) {
    // A handshake that completes after our deadline must not leak a connection.
    pending.then((s) => s.disconnect()).catch(() => undefined);
    for (const s of sockets) s.terminate();
    const kind = classify(e);
    throw new HyphaError(kind === 'auth' || kind === 'timeout' ? kind : 'connect', 'connect', `connect: ${conciseMessage(e, secrets)}`);
  }
  const socket = sockets.filter((s) => s.readyState === WebSocket.OPEN).pop();
  const info = parseConnectionInfo(server.config);
  if (!socket || !info) {
    await server.disconnect().catch(() => undefined);
    for (const s of sockets) s.terminate();
    throw new HyphaError('connect', 'connect', socket ? 'connect: unexpected connection info' : 'connect: websocket closed right after the handshake');
  }
  const conn = new HyphaConnection(
    opts.generation ?? ++generationSeq,
    server,
    socket,
    info,
    secrets,
    opts.callTimeoutMs ?? 5000,
    opts.heartbeatIntervalMs ?? 10_000,
    log,
  );
  closeHook.fn = (ws, code, reason) => {
    if (ws === socket) conn.socketClosed(code, reason);
  };
  return conn;
}

// ------------------------------------------------------------ lifecycle

export type HyphaClientState = 'idle' | 'connecting' | 'up' | 'down' | 'stopped';

export interface HyphaClientOptions extends HyphaConnectOptions {
  /** Workspace events subscribed on every generation (empty: none). */
  events?: readonly HyphaEventType[];
  /** Reconnect backoff: first wait, doubled per failure, capped (defaults 500 / 5000 ms). */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
}

export interface HyphaClientListener {
  /** A new generation is up (subscriptions in place). */
  connected?(conn: HyphaConnection): void;
  /** The current generation went away (it will be rebuilt unless stopped). */
  disconnected?(reason: string, generation: number): void;
  /** A connect attempt failed (state stays or becomes down). */
  connectFailed?(error: HyphaError, attempt: number): void;
  event?(e: HyphaEvent): void;
  state?(state: HyphaClientState): void;
}

/**
 * Keeps one usable connection to a Hypha server and rebuilds it (disconnect,
 * connect anew, re-subscribe) whenever it becomes suspect. Never throws from
 * its background work; callers see the state, the last error and events.
 */
export class HyphaClient {
  #state: HyphaClientState = 'idle';
  #conn: HyphaConnection | undefined;
  #generation = 0;
  #connects = 0;
  #lastError: HyphaError | undefined;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  readonly #listeners = new Set<HyphaClientListener>();
  readonly #log: HyphaLogger;

  constructor(private readonly opts: HyphaClientOptions) {
    this.#log = opts.logger ?? silentLogger;
  }

  get state(): HyphaClientState {
    return this.#state;
  }

  /** The live connection, or undefined when not up. */
  get connection(): HyphaConnection | undefined {
    return this.#state === 'up' ? this.#conn : undefined;
  }

  /** Number of successful connections so far (the current generation's number). */
  get generation(): number {
    return this.#generation;
  }

  /** Successful connections after the first one. */
  get reconnects(): number {
    return Math.max(0, this.#connects - 1);
  }

  get lastError(): HyphaError | undefined {
    return this.#lastError;
  }

  on(listener: HyphaClientListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Starts connecting in the background (idempotent). */
  start(): void {
    if (this.#state !== 'idle' && this.#state !== 'stopped') return;
    this.#setState('connecting');
    this.#ensureLoop();
  }

  /** Resolves with the live connection once up; rejects with the last error after timeoutMs. */
  async waitUntilUp(timeoutMs: number): Promise<HyphaConnection> {
    const c = this.connection;
    if (c) return c;
    return new Promise<HyphaConnection>((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(this.#lastError ?? new HyphaError('timeout', 'connect', `not connected after ${timeoutMs} ms`));
      }, timeoutMs);
      const off = this.on({
        connected: (conn) => {
          clearTimeout(timer);
          off();
          resolve(conn);
        },
      });
    });
  }

  /** Drops the current connection (if any) and connects anew; resolves when up or after the first failed attempt. */
  async rebuild(reason: string): Promise<void> {
    if (this.#state === 'stopped' || this.#state === 'idle') return;
    const old = this.#conn;
    if (old && old.open) {
      this.#log.info({ generation: old.generation, reason }, 'rebuilding hypha connection');
      await old.disconnect(`rebuild: ${reason}`);
    }
    this.#ensureLoop();
    this.#wake?.();
    await this.#loop;
  }

  async stop(): Promise<void> {
    this.#setState('stopped');
    this.#wake?.();
    const c = this.#conn;
    this.#conn = undefined;
    if (c) await c.disconnect('client stopped');
    await this.#loop;
  }

  // Convenience calls on the live connection; when down they fail fast.
  async listServices(query?: ListServicesQuery | string, opts?: CallOptions): Promise<ServiceInfo[]> {
    return this.#live('listServices').listServices(query, opts);
  }

  async getServiceInfo(id: string, opts?: GetServiceOptions): Promise<ServiceInfo> {
    return this.#live('getServiceInfo').getServiceInfo(id, opts);
  }

  async getService(id: string, opts?: GetServiceOptions): Promise<RemoteService> {
    return this.#live('getService').getService(id, opts);
  }

  async callDirect(fullServiceId: string, method: string, args?: readonly unknown[], opts?: ServiceCallOptions): Promise<unknown> {
    return this.#live('callDirect').callDirect(fullServiceId, method, args, opts);
  }

  #live(op: string): HyphaConnection {
    const c = this.connection;
    if (!c) throw new HyphaError('never_sent', op, `${op}: not connected to Hypha${this.#lastError ? ` (${this.#lastError.message})` : ''}`);
    return c;
  }

  // A method, so TypeScript does not narrow the state across awaits.
  #isStopped(): boolean {
    return this.#state === 'stopped';
  }

  #setState(s: HyphaClientState): void {
    if (this.#state === s) return;
    this.#state = s;
    this.#emit((l) => l.state?.(s));
  }

  #emit(fn: (l: HyphaClientListener) => void): void {
    for (const l of [...this.#listeners]) {
      try { fn(l); } catch (e) { this.#log.warn({ error: conciseMessage(e) }, 'hypha client listener failed'); }
    }
  }

  #ensureLoop(): void {
    if (this.#loop) return;
    this.#loop = this.#connectLoop().finally(() => {
      this.#loop = undefined;
    });
  }

  async #connectLoop(): Promise<void> {
    const min = this.opts.reconnectMinMs ?? 500;
    const max = this.opts.reconnectMaxMs ?? 5000;
    let attempt = 0;
    let lastLogged = '';
    while (this.#state !== 'stopped') {
      if (this.#conn?.open) return;
      if (this.#state !== 'connecting') this.#setState(this.#connects === 0 ? 'connecting' : 'down');
      attempt++;
      try {
        const conn = await connect({ ...this.opts, generation: this.#generation + 1 });
        if (this.#isStopped()) {
          await conn.disconnect('client stopped');
          return;
        }
        if (this.opts.events && this.opts.events.length > 0) {
          try {
            await conn.subscribe(this.opts.events, (e) => this.#emit((l) => l.event?.(e)));
          } catch (e) {
            await conn.disconnect('subscribe failed');
            throw e;
          }
        }
        this.#adopt(conn);
        return;
      } catch (e) {
        const err = toHyphaError(e, 'connect', [this.opts.token]);
        this.#lastError = err;
        if (!this.#isStopped()) this.#setState('down');
        this.#emit((l) => l.connectFailed?.(err, attempt));
        // One line per distinct failure, not one per retry.
        if (err.message !== lastLogged) {
          lastLogged = err.message;
          this.#log.warn({ kind: err.kind, attempt, error: err.message }, 'cannot connect to hypha; retrying');
        }
        const wait = Math.min(max, min * 2 ** Math.min(attempt - 1, 16));
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, wait);
          t.unref();
          this.#wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.#wake = undefined;
      }
    }
  }

  #adopt(conn: HyphaConnection): void {
    this.#conn = conn;
    this.#generation = conn.generation;
    this.#connects++;
    this.#lastError = undefined;
    conn.onTrouble((kind, op, message) => {
      if (this.#conn !== conn || !conn.open) return;
      this.#log.warn({ generation: conn.generation, kind, op, error: message }, 'hypha call failed in a way that makes the connection suspect');
      void this.rebuild(`${op}: ${kind}`);
    });
    conn.onClose((reason) => {
      if (this.#conn !== conn) return;
      this.#emit((l) => l.disconnected?.(reason, conn.generation));
      if (this.#state === 'stopped') return;
      this.#log.warn({ generation: conn.generation, reason }, 'hypha connection lost; reconnecting');
      this.#setState('down');
      this.#ensureLoop();
    });
    this.#log.info(
      { generation: conn.generation, workspace: conn.workspace, client_id: conn.clientId, server_id: conn.info.serverId, hypha_version: conn.info.hyphaVersion },
      this.#connects === 1 ? 'connected to hypha' : 'reconnected to hypha',
    );
    this.#setState('up');
    this.#emit((l) => l.connected?.(conn));
  }
}
