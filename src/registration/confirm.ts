/**
 * A registration can vanish (an event, applied at once) before the Serve
 * sample that explains it: the BioEngine proxy deregisters because its
 * sibling just scaled to zero, while our last Ray reading still shows a
 * replica. Judged on that reading the cause would be missing_other for one
 * Ray interval and then flip to missing_scaled_to_zero. So a loss seen
 * against a Serve sample requested before the loss is held back (the
 * previous evaluation stays published) while a fresh sample is asked for.
 * The hold ends with the first sample requested after the loss, or after
 * maxHoldMs: a hanging Ray API must not hide the loss itself.
 */
export type Verdict =
  /** Keep publishing the previous evaluation of this cluster. */
  | { hold: true }
  /** Evaluate now; seenSeconds is when a held loss was first seen (start of the missing spell). */
  | { hold: false; seenSeconds?: number };

interface Pending {
  seenSeconds: number;
  deadlineSeconds: number;
  timer: NodeJS.Timeout;
}

export class CauseConfirmation {
  readonly #pending = new Map<string, Pending>();

  constructor(
    private readonly maxHoldMs: number,
    /** Asks the cluster's Ray source for a fresh sample. */
    private readonly requestFresh: (cluster: string) => void,
    /** Re-evaluates when a hold runs out without a fresh sample. */
    private readonly onDeadline: () => void,
  ) {}

  /**
   * @param requestedSeconds when the Serve sample at hand was requested (undefined: unknown, never held)
   * @param lost whether a registration that was published as registered is gone from the registry view
   */
  check(cluster: string, requestedSeconds: number | undefined, lost: () => boolean, nowSeconds: number): Verdict {
    const p = this.#pending.get(cluster);
    if (p) {
      if ((requestedSeconds ?? 0) < p.seenSeconds && nowSeconds < p.deadlineSeconds) return { hold: true };
      this.#clear(cluster, p);
      return { hold: false, seenSeconds: p.seenSeconds };
    }
    if (requestedSeconds === undefined || requestedSeconds >= nowSeconds || !lost()) return { hold: false };
    const timer = setTimeout(this.onDeadline, this.maxHoldMs);
    timer.unref();
    this.#pending.set(cluster, { seenSeconds: nowSeconds, deadlineSeconds: nowSeconds + this.maxHoldMs / 1000, timer });
    this.requestFresh(cluster);
    return { hold: true };
  }

  clear(): void {
    for (const [cluster, p] of this.#pending) this.#clear(cluster, p);
  }

  #clear(cluster: string, p: Pending): void {
    clearTimeout(p.timer);
    this.#pending.delete(cluster);
  }
}
