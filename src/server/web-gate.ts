import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { WebConfig } from './web-config';
import { BasicAuth } from './basic-auth';
import type { BcryptWorker } from './bcrypt-worker';
import type { WebConfigReloader } from './web-config-reloader';

/**
 * The toolkit's token bucket (golang.org/x/time/rate with rate.Every(interval) and burst): `burst`
 * requests at once, then one more per interval. One bucket for all clients, as there.
 */
export class TokenBucket {
  #tokens: number;
  #at: number;
  constructor(readonly intervalMs: number, readonly burst: number, now = Date.now()) {
    this.#tokens = burst;
    this.#at = now;
  }
  take(now = Date.now()): boolean {
    this.#tokens = Math.min(this.burst, this.#tokens + (now - this.#at) / this.intervalMs);
    this.#at = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}

/**
 * What the web config asks of every request, before any route: the extra headers, the rate limit
 * (429) and basic auth (401), in that order, each read from the config served now (`web()`), so a
 * reloaded file applies to the next request.
 */
export function webGate(web: () => WebConfig, auth: BasicAuth): RequestHandler {
  let bucket: TokenBucket | undefined;
  let bucketOf = '';
  return (req: Request, res: Response, next: NextFunction): void => {
    const c = web();
    for (const [name, value] of c.headers) res.setHeader(name, value);
    const limit = c.rateLimit ? `${c.rateLimit.intervalMs}/${c.rateLimit.burst}` : '';
    if (limit !== bucketOf) {
      // A reload that keeps the same limit keeps the bucket (a reload must not refill it).
      bucketOf = limit;
      bucket = c.rateLimit ? new TokenBucket(c.rateLimit.intervalMs, c.rateLimit.burst) : undefined;
    }
    if (bucket && !bucket.take()) {
      res.status(429).type('text/plain').send('Too Many Requests\n');
      return;
    }
    const users = c.users;
    if (!users || users.size === 0) return next();
    auth.check(users, req.headers.authorization).then((ok) => {
      if (ok) return next();
      res.status(401).set('WWW-Authenticate', 'Basic realm="hypha-serve-exporter"').type('text/plain').send('Unauthorized.\n');
    }, next);
  };
}

/** The gate of a reloaded web config, its dummy hash made at once and again when the users change. */
export function gateFor(web: WebConfigReloader, bcrypt: BcryptWorker): RequestHandler {
  const auth = new BasicAuth(bcrypt);
  const prepare = (c: WebConfig) => {
    if (c.users && c.users.size > 0) auth.prepare(c.users);
  };
  prepare(web.current);
  web.onChange(prepare);
  return webGate(() => web.current, auth);
}
