import type { Logger } from '../util/log';
import { credentialStatus } from '../config/credential-file';
import { failedHealth, newSourceHealth, SampleErrorReason, SourceHealth, SourceKind } from '../snapshot/health';
import type { Secret } from '../util/secret';

export type LogFields = Record<string, unknown>;

export interface HealthBookOptions {
  kind: SourceKind;
  /** Configured name of the upstream, as in SourceHealth.target. */
  target: string;
  /** A watched service's Hypha server name, as in SourceHealth.hypha. */
  hypha?: string;
  intervalSeconds?: number;
  /** The health a predecessor replaced by a reload handed over: taken on, so a reload is neither an outage nor a counter reset. */
  handover?: SourceHealth;
  log: Logger;
  /** Names the source in its log lines: "<label> source up", "<label> source down", "<label> sample failed". */
  label: string;
  /** On every up/down line, so a line names its upstream even where the logger's bindings are not shown. */
  fields?: LogFields;
  /** The token the source authenticates with: a token file's reads are part of the health (never its value). */
  credential?: Secret;
}

/**
 * The up/down bookkeeping every source keeps: one SourceHealth, replaced (never mutated, since the
 * previous one is part of a published snapshot) on each outcome, and one log line per transition.
 *
 * "source down" is a warning once per down spell, including the spell before the first success and
 * never again for a spell a predecessor already reported; repeats are debug. A source that cannot
 * reach its upstream would otherwise repeat the same warning every interval.
 */
export class HealthBook {
  #health: SourceHealth;
  readonly #log: Logger;
  readonly #label: string;
  readonly #fields: LogFields;
  readonly #credential: Secret | undefined;

  constructor(opts: HealthBookOptions) {
    const h = newSourceHealth(opts.kind, opts.target, opts.intervalSeconds, opts.handover, opts.hypha);
    const handedOver = opts.handover !== undefined && opts.handover.source === opts.kind && opts.handover.target === opts.target;
    // Unknown until the first attempt ends; a source restarted by a reload takes its predecessor's handover instead.
    this.#health = handedOver ? h : { ...h, pending: true };
    this.#log = opts.log;
    this.#label = opts.label;
    this.#fields = opts.fields ?? {};
    this.#credential = opts.credential;
  }

  /** The current health, with the token file's latest reads (checked now: a rotation shows without a request). */
  get health(): SourceHealth {
    this.#credential?.refresh();
    const now = credentialStatus(this.#credential);
    const was = this.#health.credential;
    const changed = was?.lastReadSeconds !== now?.lastReadSeconds || was?.readErrorsTotal !== now?.readErrorsTotal
      || was?.problem !== now?.problem || was?.changesTotal !== now?.changesTotal;
    if (now && changed) {
      const fields = { ...this.#fields, file: now.file };
      if (now.readErrorsTotal > (was?.readErrorsTotal ?? 0) && now.problem !== undefined) {
        this.#log.warn({ ...fields, problem: now.problem }, `${this.#label} token file cannot be read; keeping the last token read`);
      } else if (was !== undefined && now.changesTotal > was.changesTotal) {
        this.#log.info(fields, `${this.#label} token file changed; the new token is used from the next request or connection`);
      }
      this.#health = { ...this.#health, credential: now };
    }
    return this.#health;
  }

  /** True once the first attempt has ended (or a predecessor's had). */
  get known(): boolean {
    return this.#health.pending !== true;
  }

  get up(): boolean {
    return this.#health.up;
  }

  /**
   * A successful sample. `durationSeconds` undefined keeps the previous duration (for a cycle that
   * reports up before its slower parts have run; see recordDuration). Returns true when this
   * success starts an up spell, for state that must only count from the source coming up.
   */
  succeeded(durationSeconds: number | undefined, logFields: LogFields = {}): boolean {
    const cameUp = !this.#health.up;
    const { pending: _ended, ...h } = this.#health;
    this.#health = {
      ...h,
      up: true,
      lastSuccessSeconds: Date.now() / 1000,
      lastDurationSeconds: durationSeconds ?? this.#health.lastDurationSeconds,
    };
    if (cameUp) this.#log.info({ ...this.#fields, ...logFields }, `${this.#label} source up`);
    return cameUp;
  }

  /** A failed sample: down, counted by reason. `message` must already be free of secrets. */
  failed(reason: SampleErrorReason, message: string, durationSeconds?: number): void {
    const h = this.#health;
    // Up only changes through succeeded()/failed(), so a source that is down and has an error on
    // record has already reported this spell (or its predecessor did).
    const spellStarts = h.up || (h.lastSuccessSeconds === undefined && h.lastError === undefined);
    this.#health = failedHealth(h, reason, message, durationSeconds);
    const fields = { ...this.#fields, reason, error: message };
    if (spellStarts) this.#log.warn(fields, `${this.#label} source down`);
    else this.#log.debug(fields, `${this.#label} sample failed`);
  }

  /** Errors of a partial failure (malformed entries, one unreadable part): counted, the source stays up. */
  countError(reason: SampleErrorReason, count = 1): void {
    if (count <= 0) return;
    this.#health = { ...this.#health, errors: { ...this.#health.errors, [reason]: this.#health.errors[reason] + count } };
  }

  /** The duration of a cycle whose success was recorded before it finished. */
  recordDuration(durationSeconds: number): void {
    this.#health = { ...this.#health, lastDurationSeconds: durationSeconds };
  }
}
