import { SourceError } from '../util/errors';

export interface HttpResult {
  status: number;
  body: string;
}

/**
 * GET with a hard deadline covering connect, headers and body, and a cap on
 * the body size so a runaway upstream cannot exhaust memory.
 */
export async function httpGet(
  url: string,
  opts: { timeoutMs: number; maxBytes: number; headers?: Record<string, string> },
): Promise<HttpResult> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), opts.timeoutMs);
  timer.unref();
  try {
    let res: Response;
    try {
      res = await fetch(url, { headers: opts.headers, signal: ac.signal, redirect: 'manual' });
    } catch (e) {
      if (ac.signal.aborted) throw new SourceError('timeout', `no answer within ${opts.timeoutMs} ms`);
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new SourceError('connect', `connection failed: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
    }
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (Number.isFinite(declared) && declared > opts.maxBytes) {
      ac.abort();
      throw new SourceError('too_large', `response of ${declared} bytes exceeds the limit of ${opts.maxBytes}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      if (res.body) {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          size += chunk.byteLength;
          if (size > opts.maxBytes) {
            ac.abort();
            throw new SourceError('too_large', `response exceeds the limit of ${opts.maxBytes} bytes`);
          }
          chunks.push(Buffer.from(chunk));
        }
      }
    } catch (e) {
      if (e instanceof SourceError) throw e;
      if (ac.signal.aborted) throw new SourceError('timeout', `body not complete within ${opts.timeoutMs} ms`);
      throw new SourceError('connect', `connection broke while reading: ${(e as Error).message}`);
    }
    return { status: res.status, body: Buffer.concat(chunks).toString('utf8') };
  } finally {
    clearTimeout(timer);
  }
}
