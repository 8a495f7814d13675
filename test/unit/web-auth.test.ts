// The pieces of the web gate in process: SAN matching, the client policy, the token bucket, basic-auth
// caching on the bcrypt worker thread.
import bcrypt from 'bcryptjs';
import { BasicAuth, basicCredentials } from '../../src/server/basic-auth';
import { BcryptWorker } from '../../src/server/bcrypt-worker';
import { refusal, sanValues } from '../../src/server/listen';
import { TokenBucket } from '../../src/server/web-gate';

const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;

describe('client certificates', () => {
  it('reads every SAN kind the toolkit matches, quoted values and IPv6 in one spelling', () => {
    expect(sanValues('DNS:a.example, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, email:p@x.org, URI:spiffe://c/ns/m, DirName:CN=x'))
      .toEqual(['a.example', '127.0.0.1', '::1', 'p@x.org', 'spiffe://c/ns/m']);
    expect(sanValues('DNS:"a,b", URI:"x\\u002cy"')).toEqual(['a,b', 'x,y']);
    expect(sanValues(undefined)).toEqual([]);
  });

  it('applies each client_auth_type and client_allowed_sans after the handshake', () => {
    const cert = { subjectAltName: 'DNS:prom' } as unknown as import('node:crypto').X509Certificate;
    const sock = (c: typeof cert | undefined, authorized: boolean) => ({ authorized, authorizationError: new Error('UNABLE_TO_VERIFY'), getPeerX509Certificate: () => c });
    const t = (clientAuth: Parameters<typeof refusal>[0]['clientAuth'], allowedSans?: string[]) => ({ context: {}, clientAuth, allowedSans });
    expect(refusal(t('RequireAnyClientCert'), sock(undefined, false))).toMatch(/no client certificate/);
    expect(refusal(t('RequireAnyClientCert'), sock(cert, false))).toBeUndefined();
    expect(refusal(t('VerifyClientCertIfGiven'), sock(undefined, false))).toBeUndefined();
    expect(refusal(t('VerifyClientCertIfGiven'), sock(cert, false))).toMatch(/not verified/);
    expect(refusal(t('RequireAndVerifyClientCert', ['prom']), sock(cert, true))).toBeUndefined();
    expect(refusal(t('RequireAndVerifyClientCert', ['other']), sock(cert, true))).toMatch(/none of client_allowed_sans/);
    expect(refusal(t('RequestClientCert'), sock(undefined, false))).toBeUndefined();
  });
});

describe('rate limit', () => {
  it('allows burst requests, then one per interval', () => {
    const b = new TokenBucket(1000, 2, 0);
    expect([b.take(0), b.take(0), b.take(0)]).toEqual([true, true, false]);
    expect(b.take(999)).toBe(false);
    expect(b.take(1999)).toBe(true);
  });
});

describe('basic auth', () => {
  const worker = new BcryptWorker();
  afterAll(() => worker.close());
  const users = new Map([['prom', bcrypt.hashSync('pw', 4)]]);

  it('parses only Basic user:password headers', () => {
    expect(basicCredentials(basic('a:b:c'))).toEqual({ user: 'a', password: 'b:c' });
    expect(basicCredentials('Bearer x')).toBeUndefined();
    expect(basicCredentials(basic('nocolon'))).toBeUndefined();
  });

  it('admits only the right password, remembers failures and successes apart, and an unknown user costs a comparison too', async () => {
    const auth = new BasicAuth(worker);
    expect(await auth.check(users, basic('prom:pw'))).toBe(true);
    expect(await auth.check(users, basic('prom:nope'))).toBe(false);
    expect(await auth.check(users, basic('ghost:pw'))).toBe(false);
    expect(auth.remembered).toEqual({ successes: 1, failures: 2 });
    // 1,100 new wrong passwords: the success stays remembered (answered without the worker).
    const flood = await Promise.all(Array.from({ length: 1100 }, (_v, i) => auth.check(users, basic(`prom:x${i}`))));
    expect(flood.every((ok) => !ok)).toBe(true);
    expect(auth.remembered).toEqual({ successes: 1, failures: 1000 });
    const t0 = performance.now();
    expect(await auth.check(users, basic('prom:pw'))).toBe(true);
    expect(performance.now() - t0).toBeLessThan(50);
    expect(worker.queued).toBe(0);
  });
});
