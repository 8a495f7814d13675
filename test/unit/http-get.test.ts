import zlib from 'node:zlib';
import { httpGet } from '../../src/sources/http-get';
import { SourceError } from '../../src/util/errors';
import { freePort } from '../harness/ports';
import { startUpstream } from '../helpers/http-upstream';

/** The SourceError a request ends in (the test fails on a success or another error type). */
async function failure(p: Promise<unknown>): Promise<SourceError> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  if (!(e instanceof SourceError)) throw new Error(`expected a SourceError, got ${String(e)}`);
  return e;
}

describe('httpGet (the Serve API and proxy client)', () => {
  let up: Awaited<ReturnType<typeof startUpstream>>;
  beforeAll(async () => {
    up = await startUpstream((_q, r) => r.end());
  });
  afterAll(async () => {
    await up.close();
  });
  const get = (path: string, o: { timeoutMs?: number; maxBytes?: number; headers?: Record<string, string> } = {}) =>
    httpGet(`${up.url}${path}`, { timeoutMs: o.timeoutMs ?? 2000, maxBytes: o.maxBytes ?? 1000, headers: o.headers });

  it('returns the status and body, sending the given headers', async () => {
    up.set((q, r) => {
      r.writeHead(200, { 'content-type': 'application/json' });
      r.end(JSON.stringify({ auth: q.headers.authorization, ua: q.headers['user-agent'] }));
    });
    const res = await get('/a', { headers: { authorization: 'Bearer t', 'user-agent': 'x/1' } });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ auth: 'Bearer t', ua: 'x/1' });
  });

  it('answers other than 200 are returned, and a redirect is not followed', async () => {
    up.set((q, r) => {
      if (q.url === '/moved') {
        r.writeHead(302, { location: '/elsewhere' });
        r.end('see elsewhere');
        return;
      }
      r.writeHead(503);
      r.end('busy');
    });
    expect(await get('/moved')).toEqual({ status: 302, body: 'see elsewhere' });
    expect(await get('/x')).toEqual({ status: 503, body: 'busy' });
    expect(up.requests).not.toContain('GET /elsewhere');
  });

  it.each(['gzip', 'deflate'])('asks for a compressed answer and decodes %s', async (encoding) => {
    const text = JSON.stringify({ applications: { a: 'x'.repeat(500) } });
    up.set((q, r) => {
      expect(q.headers['accept-encoding']).toContain(encoding);
      r.writeHead(200, { 'content-encoding': encoding });
      r.end(encoding === 'gzip' ? zlib.gzipSync(text) : zlib.deflateSync(text));
    });
    expect((await get('/z')).body).toBe(text);
  });

  it('an oversized answer is too_large, whether declared or streamed, and after decoding', async () => {
    up.set((_q, r) => r.end('y'.repeat(1001)));
    expect((await failure(get('/declared'))).errorClass).toBe('too_large');
    up.set((_q, r) => {
      r.writeHead(200, { 'transfer-encoding': 'chunked' });
      for (let i = 0; i < 11; i++) r.write('z'.repeat(100));
      r.end();
    });
    expect((await failure(get('/chunked'))).message).toBe('response exceeds the limit of 1000 bytes');
    // 5,000 bytes that compress to a few dozen: the limit is on what would be held.
    up.set((_q, r) => {
      r.writeHead(200, { 'content-encoding': 'gzip' });
      r.end(zlib.gzipSync('0'.repeat(5000)));
    });
    expect((await failure(get('/bomb'))).errorClass).toBe('too_large');
  });

  it('no answer within the deadline, or a body that stalls, is a timeout', async () => {
    up.set(() => undefined);
    const silent = await failure(get('/hang', { timeoutMs: 150 }));
    expect([silent.errorClass, silent.message]).toEqual(['timeout', 'no answer within 150 ms']);
    up.set((_q, r) => {
      r.writeHead(200, { 'content-length': '100' });
      r.write('partial');
    });
    const stalled = await failure(get('/stall', { timeoutMs: 150 }));
    expect([stalled.errorClass, stalled.message]).toEqual(['timeout', 'body not complete within 150 ms']);
  });

  it('a refused connection, a bad URL and a body cut short are connect errors', async () => {
    const closed = await freePort();
    const refused = await failure(httpGet(`http://127.0.0.1:${closed}/`, { timeoutMs: 2000, maxBytes: 10 }));
    expect([refused.errorClass, refused.message]).toEqual(['connect', 'connection failed: ECONNREFUSED']);
    expect((await failure(httpGet('ftp://127.0.0.1/', { timeoutMs: 2000, maxBytes: 10 }))).errorClass).toBe('connect');
    up.set((_q, r) => {
      r.writeHead(200, { 'content-length': '100' });
      r.write('partial', () => r.socket?.destroy());
    });
    const cut = await failure(get('/cut'));
    expect(cut.errorClass).toBe('connect');
    expect(cut.message).toMatch(/^connection broke while reading: /);
  });
});
