import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A lab's ingress in front of a Ray dashboard: HTTPS with the given certificate, refusing (401)
 * every request whose Authorization header is not one `accepts` allows, passing the others to the
 * upstream as they came (path, query, headers other than Authorization), as an nginx ingress with
 * auth does. `accepts` is asked at every request, so a test changes the password the ingress wants.
 */
export async function startIngress(o: {
  cert: string;
  key: string;
  upstream: string;
  accepts: (authorization: string | undefined) => boolean;
}): Promise<{ url: string; port: number; refused: number; passed: number; close(): Promise<void> }> {
  const up = new URL(o.upstream);
  const stats = { refused: 0, passed: 0 };
  const server = https.createServer({ cert: o.cert, key: o.key }, (req, res) => {
    if (!o.accepts(req.headers.authorization)) {
      stats.refused++;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="ray"' });
      res.end('401 Authorization Required');
      return;
    }
    stats.passed++;
    const headers = { ...req.headers, host: up.host };
    delete headers.authorization;
    const fwd = http.request({ host: up.hostname, port: up.port, path: req.url, method: req.method, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    fwd.on('error', (e) => {
      res.writeHead(502);
      res.end(`upstream: ${e.message}`);
    });
    req.pipe(fwd);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    get refused() {
      return stats.refused;
    },
    get passed() {
      return stats.passed;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** An HTTP proxy that only tunnels (CONNECT), as a lab's egress proxy; it records every authority asked for. */
export async function startConnectProxy(): Promise<{ url: string; tunnels: string[]; close(): Promise<void> }> {
  const tunnels: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((_req, res) => {
    res.writeHead(405);
    res.end('CONNECT only');
  });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const authority = req.url ?? '';
    tunnels.push(authority);
    const [host, port] = [authority.slice(0, authority.lastIndexOf(':')), Number(authority.slice(authority.lastIndexOf(':') + 1))];
    const target = net.connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) target.write(head);
      target.pipe(client);
      client.pipe(target);
    });
    for (const s of [client, target]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    target.on('error', () => client.destroy());
    client.on('error', () => target.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tunnels,
    close: () => {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
