import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/**
 * A loopback HTTP server whose behaviour a test sets per request: used to
 * inject faults (hangs, 5xx, truncated or oversized bodies) that a real
 * upstream shows only rarely. It replays recorded real bodies; it is not a
 * substitute for the integration tests against real Ray Serve.
 */
export async function startUpstream(initial: Handler): Promise<{ url: string; port: number; set(h: Handler): void; requests: string[]; close(): Promise<void> }> {
  let handler = initial;
  const requests: string[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const srv = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  srv.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    set(h: Handler) {
      handler = h;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

export function json(body: unknown, status = 200): Handler {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(text);
  };
}
