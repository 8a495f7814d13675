// A real Ray dashboard behind a lab's ingress (HTTPS with a private CA, basic auth or a bearer
// token), and behind an egress proxy that only tunnels: the exporter reads Serve through each with
// tls_config, basic_auth, authorization and proxy_url; a wrong CA or password is a source down with
// its reason, never a crash; a rotated password file is taken without a restart.
import fs from 'node:fs';
import { exporterWithConfig } from '../helpers/exporter';
import { seriesValue } from '../helpers/exposition';
import { TestCa } from '../helpers/certs';
import { startConnectProxy, startIngress } from '../helpers/ingress';
import { tmpDir } from '../helpers/tmp';
import { waitFor } from '../harness/proc';
import { RayCluster, startRay } from '../harness/ray';

jest.setTimeout(600_000);

describe('Ray dashboard behind a TLS + auth ingress', () => {
  const t = tmpDir('hse-ingress-');
  let ray: RayCluster;
  let ingress: Awaited<ReturnType<typeof startIngress>>;
  let proxy: Awaited<ReturnType<typeof startConnectProxy>>;
  let h: ReturnType<typeof exporterWithConfig>;
  /** What the ingress accepts now: the lab rotates the password by changing this, then the file. */
  let password = 'first-password-1';
  const TOKEN = 'ray-bearer-token-77';
  const basic = (pw: string) => `Basic ${Buffer.from(`ray-reader:${pw}`).toString('base64')}`;

  const health = (cluster: string) => h.exporter.store.get().ray.get(cluster)?.health;
  const up = async (cluster: string) => seriesValue(await h.scrape(), 'hypha_serve_source_up', { source: 'ray', ray_cluster: cluster });
  const errors = async (cluster: string, reason: string) =>
    seriesValue(await h.scrape(), 'hypha_serve_source_errors_total', { source: 'ray', ray_cluster: cluster, reason }) ?? 0;

  beforeAll(async () => {
    const ca = new TestCa(t.dir);
    const cert = ca.issue('ingress', ['DNS:ray.lab.example', 'IP:127.0.0.1']);
    const otherCa = new TestCa(t.dir, 'other-ca');
    ray = await startRay();
    ingress = await startIngress({
      cert: cert.pem.crt, key: cert.pem.key, upstream: ray.dashboardUrl,
      accepts: (a) => a === basic(password) || a === `Bearer ${TOKEN}`,
    });
    proxy = await startConnectProxy();
    const pwFile = t.write('password', `${password}\n`);
    const wrongPw = t.write('wrong-password', 'not-the-password\n');
    const tokenFile = t.write('token', `${TOKEN}\n`);
    const entry = (name: string, extra: string) =>
      `  - name: ${name}\n    dashboard_url: ${ingress.url}\n    interval: 500ms\n    timeout: 5s\n    proxy_probe: {enabled: false}\n${extra}`;
    const tlsOk = `    tls_config: {ca_file: "${ca.crt}", server_name: ray.lab.example}\n`;
    h = exporterWithConfig(`ray_clusters:\n${[
      entry('basic', `${tlsOk}    basic_auth: {username: ray-reader, password_file: "${pwFile}"}\n`),
      entry('bearer', `${tlsOk}    authorization: {type: Bearer, credentials_file: "${tokenFile}"}\n`),
      entry('via-proxy', `${tlsOk}    authorization: {credentials_file: "${tokenFile}"}\n    proxy_url: ${proxy.url}\n`),
      entry('wrong-ca', `    tls_config: {ca_file: "${otherCa.crt}", server_name: ray.lab.example}\n    basic_auth: {username: ray-reader, password_file: "${pwFile}"}\n`),
      entry('wrong-password', `${tlsOk}    basic_auth: {username: ray-reader, password_file: "${wrongPw}"}\n`),
    ].join('')}`, { logArtifact: 'ray-ingress' });
    h.exporter.start();
  });

  afterAll(async () => {
    await h?.close();
    await proxy?.close();
    await ingress?.close();
    await ray?.stop();
    t.cleanup();
  });

  it('reads Serve through the ingress with tls_config + basic_auth, authorization Bearer, and through a CONNECT proxy', async () => {
    for (const c of ['basic', 'bearer', 'via-proxy']) await waitFor(`${c} up`, async () => (await up(c)) === 1, 60_000, 250);
    // The Serve answer itself came through: a sample with Serve's state, not only a 200.
    for (const c of ['basic', 'bearer', 'via-proxy']) expect(h.exporter.store.get().ray.get(c)?.state).toBeDefined();
    expect(ingress.passed).toBeGreaterThanOrEqual(3);
    // The proxy saw the tunnel, and only the host and port (TLS inside it).
    expect(proxy.tunnels).toContain(`127.0.0.1:${ingress.port}`);
  });

  it('a wrong CA and a wrong password are a source down with the reason, never a crash', async () => {
    await waitFor('wrong-ca counted', async () => (await errors('wrong-ca', 'connect')) >= 2, 60_000, 250);
    await waitFor('wrong-password counted', async () => (await errors('wrong-password', 'auth')) >= 2, 60_000, 250);
    expect(await up('wrong-ca')).toBe(0);
    expect(await up('wrong-password')).toBe(0);
    expect(health('wrong-ca')?.lastError).toMatch(/TLS handshake failed: .*(self-signed|unable to verify|certificate)/i);
    expect(health('wrong-password')?.lastError).toBe('HTTP 401 from the Serve API');
    // The good ones are unaffected; nothing secret in the exposition or the log.
    expect(await up('basic')).toBe(1);
    const text = await h.scrape();
    for (const s of [password, TOKEN, 'not-the-password']) {
      expect(text).not.toContain(s);
      expect(h.lines.join('')).not.toContain(s);
    }
  });

  it('picks up a rotated password file without a restart', async () => {
    const refusedBefore = ingress.refused;
    // The lab rotates: the ingress wants the new password first, the Secret volume follows.
    password = 'second-password-22';
    await waitFor('basic refused with the old password', async () => (await up('basic')) === 0, 30_000, 100);
    expect(ingress.refused).toBeGreaterThan(refusedBefore);
    expect(health('basic')?.lastErrorReason).toBe('auth');
    fs.renameSync(t.write('password.next', `${password}\n`), `${t.dir}/password`);
    await waitFor('basic up with the new password', async () => (await up('basic')) === 1, 30_000, 100);
    const text = await h.scrape();
    expect(seriesValue(text, 'hypha_serve_credential_read_errors_total', { ray_cluster: 'basic' })).toBe(0);
    expect(text).not.toContain(password);
  });
});
