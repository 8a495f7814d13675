import fs from 'node:fs';
import net from 'node:net';
import zlib from 'node:zlib';
import { httpGet } from '../../src/sources/http-get';
import { SourceError } from '../../src/util/errors';
import { freePort } from '../harness/ports';
import { startUpstream } from '../helpers/http-upstream';
import { TestCa } from '../helpers/certs';
import { startConnectProxy, startIngress } from '../helpers/ingress';
import { tmpDir } from '../helpers/tmp';

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

describe('httpGet over TLS and through an HTTP proxy (tls_config, proxy_url)', () => {
  const t = tmpDir('hse-httpget-tls-');
  const ca = new TestCa(t.dir);
  const other = new TestCa(t.dir, 'other-ca');
  const cert = ca.issue('ingress', ['DNS:ray.lab.example', 'IP:127.0.0.1']);
  let up: Awaited<ReturnType<typeof startUpstream>>;
  let ingress: Awaited<ReturnType<typeof startIngress>>;
  let proxy: Awaited<ReturnType<typeof startConnectProxy>>;
  beforeAll(async () => {
    up = await startUpstream((q, r) => r.end(`via ${q.headers.host} ${q.url}`));
    ingress = await startIngress({ cert: cert.pem.crt, key: cert.pem.key, upstream: up.url, accepts: (a) => a === 'Bearer ok' });
    proxy = await startConnectProxy();
  });
  afterAll(async () => {
    await proxy.close();
    await ingress.close();
    await up.close();
    t.cleanup();
  });
  const caPem = () => fs.readFileSync(ca.crt, 'utf8');

  it('verifies the server with the given CA and name, directly and through a CONNECT tunnel', async () => {
    const tlsOpts = { ca: caPem(), servername: 'ray.lab.example' };
    const direct = await httpGet(`${ingress.url}/a?b=1`, { timeoutMs: 5000, maxBytes: 1000, headers: { authorization: 'Bearer ok' }, tls: tlsOpts });
    expect([direct.status, direct.body]).toEqual([200, `via 127.0.0.1:${up.port} /a?b=1`]);
    const tunnelled = await httpGet(`${ingress.url}/p`, { timeoutMs: 5000, maxBytes: 1000, headers: { authorization: 'Bearer ok' }, tls: tlsOpts, proxyUrl: proxy.url });
    expect([tunnelled.status, tunnelled.body]).toEqual([200, `via 127.0.0.1:${up.port} /p`]);
    expect(proxy.tunnels).toEqual([`127.0.0.1:${ingress.port}`]);
  });

  it('a certificate another CA signed, or another name, is a connect error that says why', async () => {
    const wrongCa = await failure(httpGet(`${ingress.url}/`, { timeoutMs: 5000, maxBytes: 1000, tls: { ca: fs.readFileSync(other.crt, 'utf8') } }));
    expect(wrongCa.errorClass).toBe('connect');
    expect(wrongCa.message).toMatch(/^TLS handshake failed: .*\((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)\)$/);
    const viaProxy = await failure(httpGet(`${ingress.url}/`, { timeoutMs: 5000, maxBytes: 1000, tls: { ca: fs.readFileSync(other.crt, 'utf8') }, proxyUrl: proxy.url }));
    expect(viaProxy.message).toMatch(/^TLS handshake failed: /);
    const wrongName = await failure(httpGet(`${ingress.url}/`, { timeoutMs: 5000, maxBytes: 1000, tls: { ca: caPem(), servername: 'other.example' } }));
    expect(wrongName.message).toMatch(/^TLS handshake failed: .*ERR_TLS_CERT_ALTNAME_INVALID/);
  });

  it('the deadline covers a proxy that never answers CONNECT; a refused tunnel and a dead proxy are connect errors', async () => {
    const silent = net.createServer(() => undefined);
    const refusing = net.createServer((s) => s.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n'));
    await Promise.all([silent, refusing].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
    const at = (s: net.Server) => `http://127.0.0.1:${(s.address() as net.AddressInfo).port}`;
    try {
      const t0 = Date.now();
      const stalled = await failure(httpGet(`${ingress.url}/`, { timeoutMs: 300, maxBytes: 1000, tls: { ca: caPem() }, proxyUrl: at(silent) }));
      expect([stalled.errorClass, stalled.message]).toEqual(['timeout', 'no answer within 300 ms']);
      expect(Date.now() - t0).toBeLessThan(2000);
      const refused = await failure(httpGet(`${ingress.url}/`, { timeoutMs: 2000, maxBytes: 1000, tls: { ca: caPem() }, proxyUrl: at(refusing) }));
      expect(refused.errorClass).toBe('connect');
      expect(refused.message).toMatch(/answered HTTP 403 to CONNECT 127\.0\.0\.1:\d+/);
      const dead = await failure(httpGet(`${ingress.url}/`, { timeoutMs: 2000, maxBytes: 1000, proxyUrl: `http://127.0.0.1:${await freePort()}` }));
      expect(dead.message).toMatch(/^connection failed: ECONNREFUSED \(through proxy 127\.0\.0\.1:\d+\)$/);
    } finally {
      silent.close();
      refusing.close();
    }
  });
});
