import type { Server } from 'node:http';
import type { Socket } from 'node:net';

// Connection hygiene for the listener. Node closes a connection whose request header is started but
// not finished within headersTimeout, but not one that sends nothing at all (or stops inside a TLS
// handshake, before any HTTP byte), and it keeps every connection it accepts: 5,000 half-open ones
// stayed open for minutes and cost the scrape 30-100×. Here every connection must have sent a whole
// request header within the header timeout of opening, and at most maxConnections are kept: one more
// closes the oldest connection that is not being answered (never one whose answer is being written),
// so a flood of idle connections cannot lock Prometheus out, as a plain cap (server.maxConnections,
// which refuses the newcomer) would.

export interface ConnectionLimits {
  /** From opening (TLS handshake included) to a complete request header. */
  headerTimeoutMs: number;
  maxConnections: number;
}

interface Tracked {
  socket: Socket;
  /** Closes it unless a whole request header arrives first. */
  deadline?: NodeJS.Timeout;
  /** Requests being answered on it. */
  active: number;
  /** It has sent a whole request header once (from then on Node's keep-alive and header timeouts apply). */
  served: boolean;
}

/** What the guard has done since the start (for tests and the bench). */
export interface ConnectionCounts {
  open: number;
  /** Closed for not sending a request header within the timeout. */
  timedOut: number;
  /** Closed to make room under the cap. */
  evicted: number;
  /** Refused at once: the cap was reached and every connection was being answered. */
  refused: number;
}

/** A TCP connection's peer, which a TLS socket and the TCP socket beneath it share. */
const peerOf = (s: Socket) => (s.remoteAddress === undefined ? undefined : `${s.remoteAddress}|${s.remotePort}`);

export class ConnectionGuard {
  /** By peer; a Map iterates in insertion order, so the first entries are the oldest connections. */
  readonly #open = new Map<string, Tracked>();
  readonly #counts = { timedOut: 0, evicted: 0, refused: 0 };

  constructor(server: Server, readonly limits: ConnectionLimits) {
    // 'connection' is the TCP socket, for https too (before its handshake); requests arrive on the TLS
    // socket above it, found again by the peer address they share.
    server.on('connection', (socket: Socket) => this.#accept(socket));
    server.on('request', (req: { socket: Socket }, res: { once(e: 'close', l: () => void): void }) => {
      const key = peerOf(req.socket);
      const t = key === undefined ? undefined : this.#open.get(key);
      if (!t) return;
      t.active++;
      t.served = true;
      clearTimeout(t.deadline);
      res.once('close', () => t.active--);
    });
  }

  counts(): ConnectionCounts {
    return { open: this.#open.size, ...this.#counts };
  }

  #accept(socket: Socket): void {
    const key = peerOf(socket);
    if (key === undefined) {
      socket.destroy();
      return;
    }
    if (this.#open.size >= this.limits.maxConnections && !this.#evictOne()) {
      this.#counts.refused++;
      socket.destroy();
      return;
    }
    const t: Tracked = { socket, active: 0, served: false };
    // One timer per connection (Node keeps timers of one duration in one list: cheap at thousands).
    t.deadline = setTimeout(() => {
      if (t.served) return;
      this.#counts.timedOut++;
      socket.destroy();
    }, this.limits.headerTimeoutMs);
    t.deadline.unref();
    this.#open.set(key, t);
    socket.once('close', () => {
      clearTimeout(t.deadline);
      if (this.#open.get(key) === t) this.#open.delete(key);
    });
  }

  /** Closes the oldest connection not being answered; false when every one is. */
  #evictOne(): boolean {
    for (const [key, t] of this.#open) {
      if (t.active > 0) continue;
      this.#open.delete(key);
      t.socket.destroy();
      this.#counts.evicted++;
      return true;
    }
    return false;
  }
}
