import crypto from 'node:crypto';
import { SourceError, SourceErrorClass, withTimeout } from '../../util/errors';
import { Secret } from '../../util/secret';
import { classify, conciseMessage, fromHypha } from './errors';
import { openSession, RawHandler, RawSession } from './shim';
import {
  ConnectionInfo,
  HyphaEvent,
  HyphaEventType,
  ListServicesQuery,
  parseConnectionInfo,
  parseEvent,
  parseServiceInfo,
  parseServiceList,
  ServiceInfo,
} from './types';
import { parseServiceId } from '../../util/hypha-id';

/** Pino-compatible subset. */
export interface HyphaLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLogger: HyphaLogger = { debug() {}, info() {}, warn() {}, error() {} };

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

interface CallOptions {
  timeoutMs?: number;
}

interface ServiceCallOptions extends CallOptions {
  /** Keyword arguments (sent with hypha-rpc's `_rkwargs` marker after the positional ones). */
  kwargs?: Record<string, unknown>;
}

interface ServiceInfoOptions extends CallOptions {
  /** Hypha's selection mode when several providers match ("random", "first", "last", "exact", ...). */
  mode?: string;
}

type TroubleListener = (errorClass: SourceErrorClass, op: string, message: string) => void;

function withKwargs(args: readonly unknown[], kwargs: Record<string, unknown> | undefined): unknown[] {
  return kwargs ? [...args, { ...kwargs, _rkwargs: true }] : [...args];
}

/**
 * One websocket connection to Hypha. It never reconnects by itself: hypha-rpc's
 * own reconnect keeps addressing the old workspace manager after the server id
 * changes, and drops event subscriptions. When the socket closes, onClose
 * listeners run once and every further call fails fast with `never_sent`;
 * a new connection has to be made instead.
 */
export class HyphaConnection {
  #open = true;
  #closeReason = '';
  #malformedTotal = 0;
  readonly #closeListeners = new Set<(reason: string) => void>();
  readonly #troubleListeners = new Set<TroubleListener>();
  readonly #subscribed: { event: string; handler: RawHandler }[] = [];
  #heartbeat: NodeJS.Timeout | undefined;
  #awaitingPong = false;

  /** @internal use connect() */
  constructor(
    readonly generation: number,
    readonly info: ConnectionInfo,
    private readonly session: RawSession,
    private readonly secrets: readonly (Secret | undefined)[],
    private readonly callTimeoutMs: number,
    heartbeatIntervalMs: number,
    private readonly log: HyphaLogger,
  ) {
    session.onSocketClose((code, reason) =>
      this.#markClosed(`websocket closed (code ${code}${reason.length ? `: ${reason.toString('utf8').slice(0, 200)}` : ''})`));
    session.onPong(() => {
      this.#awaitingPong = false;
    });
    // hypha-rpc's own reconnect announces itself with "connected". It should
    // never get to run (a close tears this connection down first); if it did,
    // this object addresses a manager that may no longer exist.
    session.on('connected', () => this.#trouble('never_sent', 'reconnect', 'hypha-rpc reconnected underneath; rebuilding'));
    if (heartbeatIntervalMs > 0) {
      this.#heartbeat = setInterval(() => this.#beat(), heartbeatIntervalMs);
      this.#heartbeat.unref();
    }
  }

  get open(): boolean {
    return this.#open;
  }

  get workspace(): string {
    return this.info.workspace;
  }

  get clientId(): string {
    return this.info.clientId;
  }

  /** Entries of listServices results that did not parse and were skipped. */
  get malformedTotal(): number {
    return this.#malformedTotal;
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
    const raw = await this.#call('listServices', () => this.session.listServices(query), opts);
    const parsed = parseServiceList(raw);
    if (!parsed) throw new SourceError('schema', 'listServices: result is not a list', 'listServices');
    this.#malformedTotal += parsed.malformed;
    return parsed.services;
  }

  /** Registry entry of one service; rejects with class `not_found` when absent. */
  async getServiceInfo(id: string, opts?: ServiceInfoOptions): Promise<ServiceInfo> {
    const raw = await this.#call('getServiceInfo', () => this.session.getServiceInfo(id, opts?.mode), opts);
    const info = parseServiceInfo(raw);
    if (!info) throw new SourceError('schema', 'getServiceInfo: result has no valid id', 'getServiceInfo');
    return info;
  }

  /**
   * Calls a method at an explicit provider ("ws/client:svc") without resolving
   * it first: what a proxy cached earlier does. Messages to a provider that no
   * longer exists are dropped by the server, so this times out rather than
   * failing (unless the provider left within the server's 120 s memory).
   */
  async callDirect(fullServiceId: string, method: string, args: readonly unknown[] = [], opts?: ServiceCallOptions): Promise<unknown> {
    const ids = parseServiceId(fullServiceId);
    if (!ids) throw new SourceError('schema', `not a full service id: ${fullServiceId}`, 'callDirect');
    const fn = this.session.remoteMethod(ids.workspace, ids.clientId, ids.serviceId, method);
    return this.#call(`${ids.serviceId}.${method}`, () => fn(...withKwargs(args, opts?.kwargs)), opts, false);
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
      this.session.on(event, h);
      this.#subscribed.push({ event, handler: h });
    }
    await this.#call('subscribe', () => this.session.subscribe(events), opts);
  }

  /** Closes the websocket (idempotent; never throws, never waits long). */
  async disconnect(reason = 'disconnect requested'): Promise<void> {
    const wasOpen = this.#open;
    this.#markClosed(reason);
    if (!wasOpen && this.session.socketClosed) return;
    for (const { event, handler } of this.#subscribed.splice(0)) {
      try { this.session.off(event, handler); } catch { /* already cleared */ }
    }
    try {
      await withTimeout(this.session.disconnect(), 2000, 'disconnect');
    } catch {
      this.session.terminate();
    }
  }

  #markClosed(reason: string): void {
    if (!this.#open) return;
    this.#open = false;
    this.#closeReason = reason;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    // Before hypha-rpc sees the close: this keeps its reconnect loop from starting.
    void this.session.disconnect().catch(() => undefined);
    for (const l of [...this.#closeListeners]) {
      try { l(reason); } catch (e) { this.log.warn({ error: conciseMessage(e) }, 'hypha close listener failed'); }
    }
    this.#closeListeners.clear();
  }

  #beat(): void {
    if (!this.#open) return;
    if (this.#awaitingPong) {
      this.log.warn({ generation: this.generation }, 'hypha websocket missed a heartbeat; dropping the connection');
      this.session.terminate();
      return;
    }
    this.#awaitingPong = true;
    this.session.ping();
  }

  #trouble(errorClass: SourceErrorClass, op: string, message: string): void {
    for (const l of [...this.#troubleListeners]) l(errorClass, op, message);
  }

  async #call<T>(op: string, fn: () => Promise<T>, opts?: CallOptions, managerCall = true): Promise<T> {
    if (!this.#open) throw new SourceError('never_sent', `${op}: connection is closed (${this.#closeReason})`, op);
    const ms = opts?.timeoutMs ?? this.callTimeoutMs;
    try {
      return await withTimeout(fn(), ms, op);
    } catch (e) {
      const err = fromHypha(e, op, this.secrets);
      if (makesConnectionSuspect(err.errorClass, managerCall)) this.#trouble(err.errorClass, op, err.message);
      throw err;
    }
  }
}

/**
 * Whether a failed call says the connection itself is in trouble (its listeners rebuild it). A timeout on a
 * provider's method says nothing about the connection; on the manager it does. A not-found aimed at the
 * manager means the server id changed under us.
 */
export function makesConnectionSuspect(errorClass: SourceErrorClass, managerCall: boolean): boolean {
  if (errorClass === 'timeout') return managerCall;
  return errorClass === 'never_sent' || errorClass === 'connection_lost' || errorClass === 'manager_not_found';
}

let generationSeq = 0;

/** Opens one connection. Rejects with a SourceError of class connect, auth or timeout. */
export async function connect(opts: HyphaConnectOptions & { generation?: number }): Promise<HyphaConnection> {
  const log = opts.logger ?? silentLogger;
  const secrets = [opts.token];
  const clientId = opts.clientId ?? `hypha-serve-exporter-${crypto.randomBytes(4).toString('hex')}`;
  let session: RawSession;
  try {
    session = await openSession({
      serverUrl: opts.serverUrl,
      clientId,
      workspace: opts.workspace,
      token: opts.token?.reveal(),
      timeoutMs: opts.connectTimeoutMs ?? 10_000,
      // hypha-rpc logs reconnect chatter and whole event objects; it stays at
      // debug, scrubbed, because this layer reports what matters itself.
      log: (level, text) => log.debug({ hypha_rpc: level, client_id: clientId }, conciseMessage(text, secrets)),
    });
  } catch (e) {
    const errorClass = classify(e);
    const passed = errorClass === 'auth' || errorClass === 'auth_signature' || errorClass === 'timeout';
    throw new SourceError(passed ? errorClass : 'connect', `connect: ${conciseMessage(e, secrets)}`, 'connect');
  }
  const info = parseConnectionInfo(session.config);
  if (!info) {
    await session.disconnect().catch(() => undefined);
    session.terminate();
    throw new SourceError('connect', 'connect: unexpected connection info', 'connect');
  }
  return new HyphaConnection(
    opts.generation ?? ++generationSeq,
    info,
    session,
    secrets,
    opts.callTimeoutMs ?? 5000,
    opts.heartbeatIntervalMs ?? 10_000,
    log,
  );
}
