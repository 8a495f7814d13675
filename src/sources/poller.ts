/**
 * Runs one sampling function on a fixed interval in the background, never
 * overlapping itself: a slow upstream delays the next cycle instead of piling
 * up requests. The sample function must bound its own duration (timeouts).
 */
export class Poller {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #followUp: Promise<void> | undefined;
  #stopped = false;

  constructor(
    private readonly intervalMs: number,
    private readonly sample: () => Promise<void>,
    private readonly onError: (e: unknown) => void,
  ) {}

  start(): void {
    this.#stopped = false;
    this.#tick();
  }

  /** Runs a cycle now (if none is running) and resolves when it is done. */
  async runOnce(): Promise<void> {
    if (this.#running) return this.#running;
    this.#running = this.sample()
      .catch((e) => this.onError(e))
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  /**
   * Resolves after a cycle that started after this call: the running one
   * may have read its upstream before whatever made the caller ask. Callers
   * asking while a follow-up is already queued share it.
   */
  async runFresh(): Promise<void> {
    if (this.#stopped) return;
    if (!this.#running) return this.runOnce();
    this.#followUp ??= this.#running.then(() => {
      this.#followUp = undefined;
      return this.#stopped ? undefined : this.runOnce();
    });
    return this.#followUp;
  }

  #tick(): void {
    if (this.#stopped) return;
    const started = Date.now();
    // runOnce never rejects: a failed cycle goes to onError.
    void this.runOnce().then(() => {
      if (this.#stopped) return;
      const wait = Math.max(0, this.intervalMs - (Date.now() - started));
      this.#timer = setTimeout(() => this.#tick(), wait);
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }
}

/** A background sampler of one upstream; H is the state it hands its successor (see handover). */
export interface Source<H = unknown> {
  readonly kind: string;
  readonly target: string;
  start(): void;
  /** Stops sampling; data already published stays until forget(). */
  stop(): Promise<void>;
  /** Removes this source's data from the snapshot (the source was removed from the config). */
  forget(): void;
  /** One sampling cycle, awaited (tests, and the first cycle at startup). */
  sampleNow(): Promise<void>;
  /** A cycle that starts from now on (Poller.runFresh), for a stage that must read two upstreams of the same moment. */
  sampleFresh?(): Promise<void>;
  /**
   * The handover: what a successor takes when a reload restarts this source (DesiredSource.create): its
   * counters, health and facts, as of what it last published, so a reload is neither an outage nor a reset.
   */
  handover(): H;
}
