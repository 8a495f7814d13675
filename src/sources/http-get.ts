import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { SourceError } from '../util/errors';

export interface HttpResult {
  status: number;
  body: string;
}

// node:http rather than fetch(): fetch loads undici, whose HTTP parser is WebAssembly; compiling
// and instantiating it, with undici's own code, cost the exporter 7–9 MB resident for the life of
// the process (bench/bin-memory.ts), where node:http's parser is already in the binary.

/** What fetch() sent and decoded; an upstream that compresses its answer saves the transfer. */
const ACCEPT_ENCODING = 'gzip, deflate';

function decoder(encoding: string | undefined): zlib.Gunzip | zlib.Inflate | undefined {
  switch ((encoding ?? '').trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    default:
      return undefined;
  }
}

export interface HttpGetOptions {
  timeoutMs: number;
  maxBytes: number;
  headers?: Record<string, string>;
  /** CA, client certificate, SNI name, verification and minimum version of an https:// URL (tls_config). */
  tls?: tls.ConnectionOptions;
  /** http://host:port of an HTTP proxy: an http:// URL is asked of it, an https:// one tunnelled by CONNECT. */
  proxyUrl?: string;
}

/** Node's TLS verification failures, whose text says more than their code ("self-signed certificate in certificate chain"). */
function isTlsFailure(e: NodeJS.ErrnoException): boolean {
  return /CERT|SELF_SIGNED|ERR_TLS|ERR_SSL|UNABLE_TO_|HOSTNAME/.test(e.code ?? '') || /alert|handshake/i.test(e.message);
}

/**
 * The socket of an https:// request through an HTTP proxy: a CONNECT tunnel to the target, then TLS
 * inside it with the request's TLS options (the proxy sees only the host and port).
 */
function tunnel(proxy: URL, target: URL, tlsOpts: tls.ConnectionOptions | undefined, done: (e: Error | null, s?: net.Socket) => void): http.ClientRequest {
  const port = target.port || '443';
  const authority = `${target.hostname}:${port}`;
  const req = http.request({ host: proxy.hostname, port: proxy.port || 80, method: 'CONNECT', path: authority, headers: { host: authority } });
  req.on('connect', (res, socket) => {
    if (res.statusCode !== 200) {
      socket.destroy();
      done(new Error(`proxy ${proxy.host} answered HTTP ${res.statusCode} to CONNECT ${authority}`));
      return;
    }
    const host = target.hostname.replace(/^\[|\]$/g, '');
    const servername = tlsOpts?.servername ?? (net.isIP(host) === 0 ? host : undefined);
    done(null, tls.connect({ ...tlsOpts, socket, servername }));
  });
  req.on('error', (e) => done(e));
  req.end();
  return req;
}

/**
 * GET with a hard deadline covering connect (through the proxy too), TLS, headers and body, and a
 * cap on the (decoded) body size so a runaway upstream cannot exhaust memory. Redirects are not
 * followed: an answer is what the URL itself says.
 */
export function httpGet(url: string, opts: HttpGetOptions): Promise<HttpResult> {
  let target: URL;
  try {
    target = new URL(url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error(`unsupported protocol ${target.protocol}`);
  } catch (e) {
    return Promise.reject(new SourceError('connect', `connection failed: ${(e as Error).message}`));
  }
  let proxy: URL | undefined;
  try {
    proxy = opts.proxyUrl === undefined ? undefined : new URL(opts.proxyUrl);
  } catch (e) {
    return Promise.reject(new SourceError('connect', `connection failed: proxy_url: ${(e as Error).message}`));
  }
  return new Promise<HttpResult>((resolve, reject) => {
    let settled = false;
    let headersSeen = false;
    let connect: http.ClientRequest | undefined;
    const fail = (e: SourceError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      connect?.destroy();
      reject(e);
    };
    const timer = setTimeout(() => {
      fail(new SourceError('timeout', headersSeen ? `body not complete within ${opts.timeoutMs} ms` : `no answer within ${opts.timeoutMs} ms`));
    }, opts.timeoutMs);
    timer.unref();
    const headers = { 'accept-encoding': ACCEPT_ENCODING, ...opts.headers };
    const onResponse = (res: http.IncomingMessage) => {
      headersSeen = true;
      const declared = Number(res.headers['content-length'] ?? NaN);
      if (Number.isFinite(declared) && declared > opts.maxBytes) {
        fail(new SourceError('too_large', `response of ${declared} bytes exceeds the limit of ${opts.maxBytes}`));
        return;
      }
      const broke = (e: Error) => fail(new SourceError('connect', `connection broke while reading: ${e.message}`));
      const inflate = decoder(res.headers['content-encoding']);
      const body: NodeJS.ReadableStream = inflate ? res.pipe(inflate) : res;
      if (inflate) inflate.on('error', broke);
      res.on('error', broke);
      // A close before the end is a connection cut mid-body (the 'error' above may not come).
      res.on('close', () => {
        if (!res.complete) broke(new Error('the connection closed before the end of the body'));
      });
      const chunks: Buffer[] = [];
      let size = 0;
      body.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > opts.maxBytes) {
          fail(new SourceError('too_large', `response exceeds the limit of ${opts.maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      body.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
    };
    let req: http.ClientRequest;
    if (proxy === undefined) {
      req = (target.protocol === 'https:' ? https.get : http.get)(target, { headers, ...opts.tls }, onResponse);
    } else if (target.protocol === 'http:') {
      // A plain request asks the proxy for the absolute URL.
      req = http.get({ host: proxy.hostname, port: proxy.port || 80, path: target.href, headers: { host: target.host, ...headers } }, onResponse);
    } else {
      const via = proxy;
      req = http.get({
        host: target.hostname.replace(/^\[|\]$/g, ''), port: target.port || 443, path: `${target.pathname}${target.search}`, headers,
        // No agent: the socket is the tunnel's, made for this request alone.
        createConnection: (_o, done: (e: Error | null, s?: net.Socket) => void) => {
          connect = tunnel(via, target, opts.tls, done);
          return undefined;
        },
      } as http.RequestOptions, onResponse);
    }
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (headersSeen) fail(new SourceError('connect', `connection broke while reading: ${e.message}`));
      else if (isTlsFailure(e)) fail(new SourceError('connect', `TLS handshake failed: ${e.message}${e.code ? ` (${e.code})` : ''}`));
      else if (e.code === undefined) fail(new SourceError('connect', `connection failed: ${e.message}`));
      else fail(new SourceError('connect', `connection failed: ${e.code}${proxy ? ` (through proxy ${proxy.host})` : ''}`));
    });
  });
}
