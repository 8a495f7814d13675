import crypto from 'node:crypto';
import type { BcryptWorker } from './bcrypt-worker';

// Basic auth over bcrypt hashes, as the exporter-toolkit's web handler checks it:
// - an unknown user is compared against a fixed dummy hash, so the answer takes as long as for a known
//   user with a wrong password (the dummy has the cost of the configured hashes: a cheaper one would
//   answer unknown users faster, and tell them apart);
// - bcrypt runs on one worker thread, one comparison at a time (bcrypt-worker.ts);
// - results are remembered, failures as well as successes, by a SHA-256 of (user, hash, password) so no
//   password is kept. Successes and failures are bounded apart: a flood of new wrong passwords evicts
//   only other failures, never the credentials Prometheus scrapes with, so its scrape never waits for
//   bcrypt behind the flood.

const SUCCESSES_KEPT = 100;
const FAILURES_KEPT = 1000;

/** A Map used as a FIFO of at most `max` keys. */
class Bounded {
  readonly #keys = new Set<string>();
  constructor(readonly max: number) {}
  has(k: string): boolean {
    return this.#keys.has(k);
  }
  add(k: string): void {
    if (this.#keys.has(k)) return;
    if (this.#keys.size >= this.max) this.#keys.delete(this.#keys.values().next().value as string);
    this.#keys.add(k);
  }
  get size(): number {
    return this.#keys.size;
  }
}

/** The credentials of an Authorization header, or undefined when it is not Basic with a user:password. */
export function basicCredentials(header: string | undefined): { user: string; password: string } | undefined {
  const m = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header ?? '');
  if (!m) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) return undefined;
  return { user: decoded.slice(0, i), password: decoded.slice(i + 1) };
}

const costOf = (hash: string) => Number(hash.slice(4, 6));

export class BasicAuth {
  readonly #ok = new Bounded(SUCCESSES_KEPT);
  readonly #failed = new Bounded(FAILURES_KEPT);
  /** Comparisons under way, by key: the same credentials sent again meanwhile wait for the same answer. */
  readonly #inFlight = new Map<string, Promise<boolean>>();
  /** One dummy hash per cost, made once (on the worker) and kept for the process's life. */
  readonly #dummies = new Map<number, Promise<string>>();

  constructor(private readonly bcrypt: BcryptWorker) {}

  /** Makes the dummy hash for these users now, so the first unknown user does not pay for it. */
  prepare(users: ReadonlyMap<string, string>): void {
    void this.#dummy(users).catch(() => undefined);
  }

  /** True when the header names a configured user and its password; never rejects. */
  async check(users: ReadonlyMap<string, string>, header: string | undefined): Promise<boolean> {
    const cred = basicCredentials(header);
    if (!cred) return false;
    const known = users.get(cred.user);
    let hash: string;
    try {
      hash = known ?? (await this.#dummy(users));
    } catch {
      return false;
    }
    const key = crypto.createHash('sha256').update(`${cred.user}\0${hash}\0${cred.password}`).digest('base64');
    if (this.#ok.has(key)) return known !== undefined;
    if (this.#failed.has(key)) return false;
    let p = this.#inFlight.get(key);
    if (!p) {
      p = this.bcrypt.compare(cred.password, hash).then(
        (match) => {
          const ok = match && known !== undefined;
          (ok ? this.#ok : this.#failed).add(key);
          return ok;
        },
        () => false, // a failed worker refuses, and remembers nothing
      ).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, p);
    }
    return p;
  }

  /** Entries remembered (for tests and the bench). */
  get remembered(): { successes: number; failures: number } {
    return { successes: this.#ok.size, failures: this.#failed.size };
  }

  #dummy(users: ReadonlyMap<string, string>): Promise<string> {
    const cost = Math.max(4, ...[...users.values()].map(costOf));
    let d = this.#dummies.get(cost);
    if (!d) {
      d = this.bcrypt.hash(crypto.randomBytes(18).toString('base64'), cost);
      d.catch(() => this.#dummies.delete(cost));
      this.#dummies.set(cost, d);
    }
    return d;
  }
}
