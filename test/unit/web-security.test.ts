// TLS and basic auth through --web.config.file (exporter-toolkit format), and
// a grep of every output for a Ray token, using the real CLI and a real TLS client.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import bcrypt from 'bcryptjs';
import { ensureBuilt, runCli } from '../helpers/cli';
import { startUpstream } from '../helpers/http-upstream';
import { tmpDir } from '../helpers/tmp';
import { spawnExporter } from '../harness/exporter-process';
import { Proc, waitFor } from '../harness/proc';

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
});
