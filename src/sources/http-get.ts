import http from 'node:http';
import https from 'node:https';
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

/**
 * GET with a hard deadline covering connect, headers and body, and a cap on the (decoded) body
 * size so a runaway upstream cannot exhaust memory. Redirects are not followed: an answer is
 * what the URL itself says.
 */
export function httpGet(
  url: string,
  opts: { timeoutMs: number; maxBytes: number; headers?: Record<string, string> },
): Promise<HttpResult> {
  let target: URL;
  try {
    target = new URL(url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error(`unsupported protocol ${target.protocol}`);
  } catch (e) {
    return Promise.reject(new SourceError('connect', `connection failed: ${(e as Error).message}`));
  }
  const get = target.protocol === 'https:' ? https.get : http.get;
  return new Promise<HttpResult>((resolve, reject) => {
    let settled = false;
    let headersSeen = false;
    const fail = (e: SourceError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(e);
    };
    const timer = setTimeout(() => {
      fail(new SourceError('timeout', headersSeen ? `body not complete within ${opts.timeoutMs} ms` : `no answer within ${opts.timeoutMs} ms`));
    }, opts.timeoutMs);
    timer.unref();
    const req = get(target, { headers: { 'accept-encoding': ACCEPT_ENCODING, ...opts.headers } }, (res) => {
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
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (headersSeen) fail(new SourceError('connect', `connection broke while reading: ${e.message}`));
      else fail(new SourceError('connect', `connection failed: ${e.code ?? e.message}`));
    });
  });
}
