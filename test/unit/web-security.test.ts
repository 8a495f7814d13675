// TLS and basic auth through --web.config.file (exporter-toolkit format), and
// a grep of every output for a Ray token, using the real CLI and a real TLS client.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import bcrypt from 'bcryptjs';
import { ensureBuilt, runCli } from '../helpers/cli';
import { startUpstream } from '../helpers/http-upstream';
import { tmpDir } from '../helpers/tmp';
import { spawnExporter } from '../harness/exporter-process';
import { Proc, waitFor } from '../harness/proc';
import tls from 'node:tls';
import { secretVolumeFiles, TestCa } from '../helpers/certs';
import { authTiming, floodScrape, get } from '../helpers/web-attack';
import { freePort } from '../harness/ports';

jest.setTimeout(60_000);

function tlsGet(url: string, ca: string, opts: { auth?: string; method?: string } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { ca, method: opts.method ?? 'GET', headers: opts.auth ? { authorization: `Basic ${Buffer.from(opts.auth).toString('base64')}` } : {} }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('web security', () => {
  const t = tmpDir();
  let ca = '';
  beforeAll(() => {
    ensureBuilt();
    const sh = (cmd: string) => execFileSync('sh', ['-c', cmd], { cwd: t.dir, stdio: 'pipe' });
    sh('openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=test-ca" 2>/dev/null');
    sh('openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj "/CN=127.0.0.1" 2>/dev/null');
    t.write('ext.cnf', 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    sh('openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out srv.crt -days 2 -extfile ext.cnf 2>/dev/null');
    ca = fs.readFileSync(`${t.dir}/ca.crt`, 'utf8');
  });
  afterAll(() => t.cleanup());

  async function start(webConfig: string, extraEnv: NodeJS.ProcessEnv = {}, config = 'ray_clusters: []\n'): Promise<{ p: Proc; base: string; out: () => string }> {
    const wc = t.write('web.yml', webConfig);
    const cfg = t.write('cfg.yml', config);
    // Not waiting for readiness here: the listener speaks TLS; each test waits for it through a TLS client.
    const ex = await spawnExporter({ name: 'web-security-exporter', config: { file: cfg }, env: extraEnv, args: [`--web.config.file=${wc}`], waitReady: false });
    return { p: ex.proc, base: `https://${ex.instance}`, out: ex.proc.output };
  }
  const stop = (p: Proc) => p.stop();

  it('serves every endpoint over TLS with basic auth; reload is POST-only and behind auth', async () => {
    const hash = bcrypt.hashSync('s3cret-pass', 4);
    const { p, base } = await start(`tls_server_config:\n  cert_file: ${t.dir}/srv.crt\n  key_file: ${t.dir}/srv.key\nbasic_auth_users:\n  prom: ${hash}\n`);
    try {
      await waitFor('TLS listener', async () => (await tlsGet(`${base}/-/healthy`, ca)).status > 0, 15_000);
      for (const path of ['/metrics', '/-/healthy', '/-/ready', '/']) {
        expect((await tlsGet(`${base}${path}`, ca)).status).toBe(401);
        expect((await tlsGet(`${base}${path}`, ca, { auth: 'prom:wrong' })).status).toBe(401);
        expect((await tlsGet(`${base}${path}`, ca, { auth: 'nobody:s3cret-pass' })).status).toBe(401);
      }
      const m = await tlsGet(`${base}/metrics`, ca, { auth: 'prom:s3cret-pass' });
      expect(m.status).toBe(200);
      expect(m.body).toContain('hypha_serve_exporter_build_info');
      expect((await tlsGet(`${base}/-/reload`, ca, { method: 'POST' })).status).toBe(401);
      expect((await tlsGet(`${base}/-/reload`, ca, { auth: 'prom:s3cret-pass' })).status).toBe(405);
      expect((await tlsGet(`${base}/-/reload`, ca, { auth: 'prom:s3cret-pass', method: 'POST' })).status).toBe(200);
      // Plain HTTP on the TLS port gets no metrics.
      const plain = await fetch(base.replace('https', 'http') + '/metrics').then((r) => r.status, () => 0);
      expect(plain).not.toBe(200);
    } finally {
      await stop(p);
    }
  });

  it.each([
    ['unknown key', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [x]\n', /web\.yml:4:\d+: tls_server_config\.cipher_suites: unknown key/],
    ['missing cert file', 'tls_server_config:\n  cert_file: /nonexistent.crt\n  key_file: /nonexistent.key\n', /cannot read \/nonexistent\.crt: ENOENT/],
    ['plaintext password', 'basic_auth_users:\n  prom: hunter2\n', /basic_auth_users\.prom: must be a bcrypt hash/],
  ])('a bad web config (%s) exits 2 with one line', async (_n, text, re) => {
    const wc = t.write('bad-web.yml', text as string);
    const r = await runCli([`--web.config.file=${wc}`, '--config.file=/dev/null']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(re as RegExp);
    expect(r.stderr).not.toContain('hunter2');
  });

  it('a Ray token never appears in logs (debug), /metrics, the pages or error messages', async () => {
    const token = 'tok-7c1e9d2f-never-show-me';
    // An upstream that echoes the Authorization header back in every kind of answer.
    const up = await startUpstream((req, res) => {
      const echo = String(req.headers.authorization);
      if (req.url?.includes('applications')) {
        res.writeHead(500, { 'content-type': 'text/plain', 'x-echo': echo });
        res.end(`controller error; you sent ${echo}`);
      }
    });
    const { p, base, out } = await start('tls_server_config:\n  cert_file: ' + `${t.dir}/srv.crt\n  key_file: ${t.dir}/srv.key\n`, { RAYTOK: token },
      `ray_clusters:\n  - name: c\n    dashboard_url: ${up.url}\n    bearer_token_env: RAYTOK\n    interval: 200ms\n`);
    try {
      await waitFor('a few failed samples', async () => up.requests.length >= 3, 15_000);
      const bodies = await Promise.all(['/metrics', '/', '/api/v1/status', '/-/ready'].map((path) => tlsGet(`${base}${path}`, ca).then((r) => r.body)));
      bodies.push(out());
      expect(out()).toContain('ray source down'); // the error was logged...
      for (const b of bodies) expect(b).not.toContain(token); // ...without the token
      expect(out()).toContain('<secret>');
    } finally {
      await stop(p);
      await up.close();
    }
  });

  it('no request parameter makes the exporter contact a host that is not in its config', async () => {
    const configured = await startUpstream((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"applications": {}}'); });
    const other = await startUpstream((_req, res) => { res.writeHead(200); res.end('{}'); });
    const { p, base } = await start('tls_server_config:\n  cert_file: ' + `${t.dir}/srv.crt\n  key_file: ${t.dir}/srv.key\n`, {},
      `ray_clusters:\n  - name: c\n    dashboard_url: ${configured.url}\n    interval: 200ms\n`);
    try {
      await waitFor('sampling', async () => configured.requests.length >= 2, 15_000);
      const evil = encodeURIComponent(other.url);
      for (const path of [`/metrics?target=${evil}`, `/probe?target=${evil}&module=ray`, `/api/v1/status?url=${evil}`, `/?dashboard_url=${evil}`, `/-/ready?target=${evil}`]) {
        await tlsGet(`${base}${path}`, ca);
      }
      await tlsGet(`${base}/-/reload?config.file=${encodeURIComponent('/etc/passwd')}`, ca, { method: 'POST' });
      await new Promise((r) => setTimeout(r, 1000));
      expect(other.requests).toEqual([]);
    } finally {
      await stop(p);
      await configured.close();
      await other.close();
    }
  });

  /** The certificate a real TLS client is served now (its serial), and whether the handshake worked. */
  function servedSerial(port: number, client?: { crt: string; key: string }): Promise<string | undefined> {
    return new Promise((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port, ca, ...(client ? { cert: client.crt, key: client.key } : {}) }, () => {
        const serial = s.getPeerX509Certificate()?.serialNumber;
        // A refused client certificate is closed after the handshake: ask for something to see it.
        s.write('GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        let body = '';
        s.on('data', (d: Buffer) => (body += d.toString()));
        s.on('close', () => resolve(body.startsWith('HTTP/1.1') ? serial : undefined));
      });
      s.on('error', () => resolve(undefined));
    });
  }
  const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);

  it('a certificate renewed as cert-manager does (secret volume ..data swap) is served within seconds, no restart; a broken one keeps the old and is counted', async () => {
    // The server certificates are signed by the test CA that `ca` (the client's trust) holds.
    const issue = (name: string) => {
      execFileSync('sh', ['-c', `openssl req -newkey rsa:2048 -nodes -keyout ${name}.key -out ${name}.csr -subj "/CN=${name}" 2>/dev/null && `
        + `openssl x509 -req -in ${name}.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out ${name}.crt -days 2 -extfile ext.cnf 2>/dev/null`], { cwd: t.dir });
      return { 'tls.crt': fs.readFileSync(`${t.dir}/${name}.crt`, 'utf8'), 'tls.key': fs.readFileSync(`${t.dir}/${name}.key`, 'utf8') };
    };
    const first = issue('gen1');
    const second = issue('gen2');
    const vol = `${t.dir}/volume`;
    fs.mkdirSync(vol);
    const secret = secretVolumeFiles(vol, first);
    // Relative names: relative to the web config's directory, as in the toolkit.
    fs.writeFileSync(`${vol}/../web-rot.yml`, `tls_server_config:\n  cert_file: volume/tls.crt\n  key_file: volume/tls.key\n`);
    const port = await freePort();
    const ex = await spawnExporter({ name: 'web-rotation', config: 'ray_clusters: []\n', port, waitReady: false, args: [`--web.config.file=${t.dir}/web-rot.yml`] });
    try {
      const serialOf = (pem: string) => new crypto.X509Certificate(pem).serialNumber;
      await waitFor('first certificate', async () => (await servedSerial(port)) === serialOf(first['tls.crt']), 15_000);
      const t0 = Date.now();
      secret.swap(second);
      await waitFor('renewed certificate', async () => (await servedSerial(port)) === serialOf(second['tls.crt']), 10_000, 100);
      const renewedMs = Date.now() - t0;
      process.stdout.write(`renewed certificate served after ${renewedMs} ms\n`);
      expect(renewedMs).toBeLessThan(5000);
      let m = (await tlsGet(`https://127.0.0.1:${port}/metrics`, ca)).body;
      expect(metric(m, 'hypha_serve_exporter_web_config_last_reload_successful')).toBe(1);
      expect(metric(m, 'hypha_serve_exporter_web_config_reload_failures_total')).toBe(0);
      // A key that does not match its certificate: the previous pair stays served, the failure is counted once.
      secret.swap({ 'tls.crt': first['tls.crt'], 'tls.key': second['tls.key'] });
      await waitFor('failure counted', async () => {
        m = (await tlsGet(`https://127.0.0.1:${port}/metrics`, ca)).body;
        return metric(m, 'hypha_serve_exporter_web_config_last_reload_successful') === 0;
      }, 10_000, 200);
      await new Promise((r) => setTimeout(r, 2500));
      m = (await tlsGet(`https://127.0.0.1:${port}/metrics`, ca)).body;
      expect(metric(m, 'hypha_serve_exporter_web_config_reload_failures_total')).toBe(1);
      expect(await servedSerial(port)).toBe(serialOf(second['tls.crt']));
      expect(ex.proc.output()).toMatch(/web config changed but cannot be applied/);
      expect(ex.proc.output()).not.toContain('PRIVATE KEY');
      secret.swap(first);
      await waitFor('fixed', async () => (await servedSerial(port)) === serialOf(first['tls.crt']), 10_000, 200);
      m = (await tlsGet(`https://127.0.0.1:${port}/metrics`, ca)).body;
      expect(metric(m, 'hypha_serve_exporter_web_config_last_reload_successful')).toBe(1);
    } finally {
      await ex.stop();
    }
  });

  it('a new user, rate_limit (429) and http_server_config.headers apply from the reloaded file; client_allowed_sans admits only listed SANs', async () => {
    const hash = bcrypt.hashSync('pw-one', 4);
    const web = t.write('web-live.yml', `basic_auth_users:\n  prom: ${hash}\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n    Content-Security-Policy: "default-src 'self'"\n`);
    const ex = await spawnExporter({ name: 'web-live', config: 'ray_clusters: []\n', waitReady: false, args: [`--web.config.file=${web}`] });
    try {
      await waitFor('listening', async () => (await get(`${ex.url}/-/healthy`, 'prom:pw-one')).status === 200, 15_000);
      const r = await fetch(`${ex.url}/-/healthy`);
      expect(r.status).toBe(401);
      expect(r.headers.get('x-frame-options')).toBe('deny');
      expect(r.headers.get('content-security-policy')).toBe("default-src 'self'");
      expect((await get(`${ex.url}/-/healthy`, 'alice:pw-two')).status).toBe(401);
      fs.writeFileSync(web, `basic_auth_users:\n  prom: ${hash}\n  alice: ${bcrypt.hashSync('pw-two', 4)}\nrate_limit:\n  interval: 1m\n  burst: 3\n`);
      await waitFor('new user', async () => (await get(`${ex.url}/-/healthy`, 'alice:pw-two')).status === 200, 10_000, 300);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await get(`${ex.url}/-/healthy`, 'alice:pw-two')).status);
      expect(statuses).toContain(429);
      expect(statuses.slice(-1)).toEqual([429]);
    } finally {
      await ex.stop();
    }
    // Client certificates: RequireAndVerifyClientCert plus client_allowed_sans.
    const cas = new TestCa(t.dir, 'client-ca');
    const good = cas.issue('good-client', ['DNS:prometheus.monitoring.svc', 'URI:spiffe://cluster/ns/monitoring/sa/prometheus'], 'client');
    const other = cas.issue('other-client', ['DNS:someone-else'], 'client');
    const mtls = t.write('web-mtls.yml', `tls_server_config:\n  cert_file: ${t.dir}/srv.crt\n  key_file: ${t.dir}/srv.key\n  client_auth_type: RequireAndVerifyClientCert\n`
      + `  client_ca_file: ${cas.crt}\n  client_allowed_sans: [spiffe://cluster/ns/monitoring/sa/prometheus]\n`);
    const port = await freePort();
    const ex2 = await spawnExporter({ name: 'web-mtls', config: 'ray_clusters: []\n', port, waitReady: false, args: [`--web.config.file=${mtls}`] });
    try {
      await waitFor('mTLS listener', async () => (await servedSerial(port, good.pem)) !== undefined, 15_000);
      expect(await servedSerial(port, other.pem)).toBeUndefined();
      expect(await servedSerial(port)).toBeUndefined();
    } finally {
      await ex2.stop();
    }
  });

  it('an unknown user takes as long as a wrong password; 8 wrong-password clients do not stall the authenticated scrape', async () => {
    // Cost 10, as htpasswd -B makes by default: a comparison is tens of ms, well above the noise.
    const web = t.write('web-timing.yml', `basic_auth_users:\n  prom: ${bcrypt.hashSync('right-pass', 10)}\n`);
    const ex = await spawnExporter({ name: 'web-timing', config: 'ray_clusters: []\n', waitReady: false, args: [`--web.config.file=${web}`] });
    try {
      await waitFor('listening', async () => (await get(`${ex.url}/-/ready`, 'prom:right-pass')).status === 200, 15_000);
      const timing = await authTiming(`${ex.url}/-/healthy`, 'prom', 9);
      const flood = await floodScrape(`${ex.url}/metrics`, 'prom:right-pass', { clients: 8, scrapes: 20, gapMs: 50 });
      process.stdout.write(`timing ${JSON.stringify(timing)} flood ${JSON.stringify(flood)}\n`);
      expect(timing.statuses).toEqual([401]);
      expect(timing.unknownMs).toBeLessThanOrEqual(2 * timing.wrongMs);
      expect(timing.wrongMs).toBeLessThanOrEqual(2 * timing.unknownMs);
      expect(flood.statuses).toEqual([200]);
      expect(flood.wrongAnswered).toBeGreaterThan(8);
      expect(flood.floodMaxMs).toBeLessThanOrEqual(Math.max(5 * flood.baselineMs, 250));
    } finally {
      await ex.stop();
    }
  });

  it.each([
    ['a header the toolkit does not allow', 'http_server_config:\n  headers:\n    Server: evil\n', /web\.yml:3:\d+: http_server_config\.headers\.Server: HTTP header "Server" can not be configured/],
    ['a header value out of its set', 'http_server_config:\n  headers:\n    X-Frame-Options: allow\n', /http_server_config\.headers\.X-Frame-Options: must be one of deny, sameorigin/],
    ['http2 on', 'http_server_config:\n  http2: true\n', /http_server_config\.http2: HTTP\/2 is not supported/],
    ['a rate limit that refuses everything', 'rate_limit:\n  interval: 1s\n', /rate_limit\.burst: must be at least 1/],
    ['SANs without client certificates', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  client_allowed_sans: [x]\n', /tls_server_config\.client_allowed_sans: needs a client_auth_type/],
  ])('a bad web config (%s) exits 2 naming file, line and field', async (_n, text, re) => {
    const wc = t.write('web.yml', text as string);
    const r = await runCli([`--web.config.file=${wc}`, '--config.file=/dev/null']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(re as RegExp);
  });
});
