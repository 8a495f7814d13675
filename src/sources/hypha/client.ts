import crypto from 'node:crypto';
import { SourceError, type SourceErrorClass } from '../../util/errors';
import { Secret } from '../../util/secret';
import { connect, HyphaConnection, HyphaConnectOptions, HyphaLogger, silentLogger } from './connection';
import { conciseMessage, explainRefusal, fromHypha } from './errors';
import type { HyphaEvent, HyphaEventType } from './types';

// Tests and the bench import these from here.
export { connect, HyphaConnection } from './connection';
export type { HyphaConnectOptions } from './connection';
export { ensureWebSocketGlobal } from './shim';

/** The classes of a refused token: the next connect reads the token file even when it seems unchanged. */
const REFUSALS: ReadonlySet<SourceErrorClass | undefined> = new Set<SourceErrorClass>(['auth', 'auth_signature', 'auth_secret_changed']);

function digest(token: Secret): string {
  return crypto.createHash('sha256').update(token.reveal()).digest('hex');
}

type HyphaClientState = 'idle' | 'connecting' | 'up' | 'down' | 'stopped';

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
  event?(e: HyphaEvent): void;
  /** A connection attempt failed (the client retries on its own). */
  connectFailed?(err: SourceError): void;
}

/**
 * Keeps one usable connection to a Hypha server and rebuilds it (disconnect,
 * connect anew, re-subscribe) whenever it becomes suspect: a close, a timeout
 * on the manager or a stale-manager error. Never throws from its background
 * work; callers see the state, the last error and events.
 */
export class HyphaClient {
  #state: HyphaClientState = 'idle';
  #conn: HyphaConnection | undefined;
  #generation = 0;
  #connects = 0;
  /** malformedTotal of the connections before #conn (their counts no longer move). */
  #malformedBefore = 0;
  #lastError: SourceError | undefined;
  /** Digests of tokens this server accepted (never the tokens): a later signature failure of one means a new JWT secret. */
  readonly #accepted = new Set<string>();
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

  get lastError(): SourceError | undefined {
    return this.#lastError;
  }

  /**
   * Entries of listServices results that did not parse and were skipped, over
   * every connection this client has made: a counter that only grows, also
   * while down (the lost connection's entries still count) and across
   * reconnects. A new client starts at 0.
   */
  get malformedTotal(): number {
    return this.#malformedBefore + (this.#conn?.malformedTotal ?? 0);
  }

  on(listener: HyphaClientListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Starts connecting in the background (idempotent). */
  start(): void {
    if (this.#state !== 'idle' && this.#state !== 'stopped') return;
    this.#state = 'connecting';
    this.#ensureLoop();
  }

  /**
   * Resolves with the live connection once up; rejects with the last error after timeoutMs.
   * `untilAttemptFails`: also rejects as soon as an attempt fails (a source's first cycle waits for
   * the first attempt's outcome, not for the retries after it).
   */
  async waitUntilUp(timeoutMs: number, opts: { untilAttemptFails?: boolean } = {}): Promise<HyphaConnection> {
    const c = this.connection;
    if (c) return c;
    return new Promise<HyphaConnection>((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(this.#lastError ?? new SourceError('timeout', `not connected after ${timeoutMs} ms`, 'connect'));
      }, timeoutMs);
      const off = this.on({
        connected: (conn) => {
          clearTimeout(timer);
          off();
          resolve(conn);
        },
        connectFailed: (err) => {
          if (!opts.untilAttemptFails) return;
          clearTimeout(timer);
          off();
          reject(err);
        },
      });
    });
  }

  async stop(): Promise<void> {
    this.#state = 'stopped';
    this.#wake?.();
    const c = this.#conn;
    // Forgotten first, so that its close is not reported as a lost connection.
    this.#conn = undefined;
    this.#malformedBefore += c?.malformedTotal ?? 0;
    if (c) await c.disconnect('client stopped');
    await this.#loop;
  }

  /** Drops the current connection (if any) and connects anew. */
  async #rebuild(reason: string): Promise<void> {
    if (this.#state === 'stopped' || this.#state === 'idle') return;
    const old = this.#conn;
    if (old && old.open) {
      this.#log.info({ generation: old.generation, reason }, 'rebuilding hypha connection');
      await old.disconnect(`rebuild: ${reason}`);
    }
    this.#ensureLoop();
    this.#wake?.();
  }

  // A method, so TypeScript does not narrow the state across awaits.
  #isStopped(): boolean {
    return this.#state === 'stopped';
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
    while (!this.#isStopped()) {
      if (this.#conn?.open) return;
      if (this.#state !== 'connecting') this.#state = this.#connects === 0 ? 'connecting' : 'down';
      attempt++;
      // The token is read at every connect (a rotated file is used from the next connection);
      // after a refusal it is read even when the file seems unchanged.
      const configured = this.opts.token;
      configured?.refresh({ force: REFUSALS.has(this.#lastError?.errorClass) });
      const token = configured ? new Secret(configured.reveal()) : undefined;
      try {
        const conn = await connect({ ...this.opts, token, generation: this.#generation + 1 });
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
        if (token) this.#accepted.add(digest(token));
        this.#adopt(conn);
        return;
      } catch (e) {
        // A signature refusal of a token accepted before: the server's JWT secret changed.
        const err = explainRefusal(fromHypha(e, 'connect', [configured, token]), token !== undefined && this.#accepted.has(digest(token)));
        this.#lastError = err;
        if (!this.#isStopped()) this.#state = 'down';
        this.#emit((l) => l.connectFailed?.(err));
        // One line per distinct failure, not one per retry.
        if (err.message !== lastLogged) {
          lastLogged = err.message;
          this.#log.warn({ error_class: err.errorClass, attempt, error: err.message }, 'cannot connect to hypha; retrying');
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
    this.#malformedBefore += this.#conn?.malformedTotal ?? 0;
    this.#conn = conn;
    this.#generation = conn.generation;
    this.#connects++;
    this.#lastError = undefined;
    conn.onTrouble((errorClass, op, message) => {
      if (this.#conn !== conn || !conn.open) return;
      this.#log.warn({ generation: conn.generation, error_class: errorClass, op, error: message },
        'hypha call failed in a way that makes the connection suspect');
      // Not awaited (a listener); a failed rebuild is logged, and the connect loop retries on its own.
      this.#rebuild(`${op}: ${errorClass}`)
        .catch((e: unknown) => this.#log.warn({ generation: conn.generation, error: conciseMessage(e) }, 'rebuilding the hypha connection failed'));
    });
    conn.onClose((reason) => {
      if (this.#conn !== conn) return;
      this.#emit((l) => l.disconnected?.(reason, conn.generation));
      if (this.#isStopped()) return;
      this.#log.warn({ generation: conn.generation, reason }, 'hypha connection lost; reconnecting');
      this.#state = 'down';
      this.#ensureLoop();
    });
    this.#log.info(
      {
        generation: conn.generation, workspace: conn.workspace, client_id: conn.clientId,
        server_id: conn.info.serverId, hypha_version: conn.info.hyphaVersion,
      },
      this.#connects === 1 ? 'connected to hypha' : 'reconnected to hypha',
    );
    this.#state = 'up';
    this.#emit((l) => l.connected?.(conn));
  }
}
