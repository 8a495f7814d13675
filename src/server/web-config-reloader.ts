import { ConfigError } from '../config/load';
import type { Logger } from '../util/log';
import { errorMessage } from '../util/errors';
import { fingerprintFiles, loadWebConfig, WebConfig } from './web-config';
import { setWebConfigStatus, WebConfigReloadStatus } from '../metrics/web-config-status';

/** How often the web config and the files it names are compared with what is served. */
export const WEB_CONFIG_CHECK_MS = 1000;

/**
 * --web.config.file, read again whenever it or a file it names (certificate, key, client CA) changes:
 * the toolkit reads it on every request; a check every second serves a renewed certificate, a new user
 * or a changed password within a second or two, with no restart. The files are compared by content (a
 * secret volume swaps its ..data symlink, an editor renames over, cert-manager rewrites in place: all
 * are a change). A change that cannot be applied keeps what is served, logs the problem once (the
 * ConfigError names file, line and field, never a value) and counts it.
 */
export class WebConfigReloader {
  #current: WebConfig;
  /** The fingerprint of contents that failed: not tried again until they change. */
  #failed: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #listeners: ((c: WebConfig) => void)[] = [];
  readonly #status: WebConfigReloadStatus;

  /** Loads the file once; throws ConfigError as the first load must fail the start. */
  constructor(readonly file: string, private readonly log: Logger) {
    this.#current = loadWebConfig(file);
    this.#status = { ok: true, lastSuccessSeconds: Date.now() / 1000, failuresTotal: 0 };
    setWebConfigStatus(this.#status);
  }

  get current(): WebConfig {
    return this.#current;
  }

  /** Called with the new config each time one is applied. */
  onChange(listener: (c: WebConfig) => void): void {
    this.#listeners.push(listener);
  }

  start(intervalMs = WEB_CONFIG_CHECK_MS): void {
    this.stop();
    this.#timer = setInterval(() => this.check(), intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Compares the files with what is served and applies a change; true when one was applied. */
  check(): boolean {
    const now = fingerprintFiles(this.#current.files);
    if (now === this.#current.fingerprint) {
      // Back to what is served (a bad edit undone): nothing failed any more.
      this.#status.ok = true;
      this.#failed = undefined;
      return false;
    }
    if (now === this.#failed) return false;
    let next: WebConfig;
    try {
      next = loadWebConfig(this.file);
      if ((next.tls === undefined) !== (this.#current.tls === undefined)) {
        throw new ConfigError(this.file, 'tls_server_config', `turning TLS ${next.tls ? 'on' : 'off'} needs a restart (the listener's protocol is fixed)`);
      }
    } catch (e) {
      this.#failed = now;
      this.#status.ok = false;
      this.#status.failuresTotal++;
      this.log.error({ error: errorMessage(e), file: this.file }, 'web config changed but cannot be applied; the previous one is still served');
      return false;
    }
    this.#current = next;
    this.#failed = undefined;
    this.#status.ok = true;
    this.#status.lastSuccessSeconds = Date.now() / 1000;
    this.log.info({
      file: this.file, tls: next.tls !== undefined, users: next.users?.size ?? 0, rate_limit: next.rateLimit !== undefined,
    }, 'web config reloaded');
    for (const l of this.#listeners) l(next);
    return true;
  }
}
