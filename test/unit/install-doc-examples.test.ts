// The configuration examples of docs/install.md, copied as written, load through the exporter's own loaders with
// every knob in effect (their files put where the examples say). The chart and kustomize examples are rendered by
// test/integration/deploy-rule-values.test.ts with the pinned helm and kustomize.
import fs from 'node:fs';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { loadConfig } from '../../src/config/load';
import { authorizationHeader, tlsOptions } from '../../src/config/http-client';
import { loadWebConfig } from '../../src/server/web-config';
import { TestCa } from '../helpers/certs';
import { installDocBlock, withoutComments } from '../helpers/install-doc';
import { tmpDir } from '../helpers/tmp';

describe('docs/install.md examples', () => {
  const t = tmpDir('hse-install-doc-');
  const ca = new TestCa(t.dir);
  afterAll(() => t.cleanup());

  /** Writes `files` into a fresh directory and returns the block with `dir` pointed there; checks the block names exactly those files. */
  function withFiles(block: string, dir: string, files: Record<string, string>): string {
    const used = withoutComments(block).match(new RegExp(`${dir}[\\w.]+`, 'g')) ?? [];
    expect([...new Set(used)].sort()).toEqual(Object.keys(files).map((f) => `${dir}${f}`).sort());
    const local = fs.mkdtempSync(path.join(t.dir, 'files-'));
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(local, name), text);
    return block.split(dir).join(`${local}/`);
  }

  it('the Ray dashboard behind an ingress: TLS with a client certificate, basic auth, a proxy', () => {
    const client = ca.issue('exporter', ['DNS:exporter'], 'client');
    const text = withFiles(installDocBlock('ray_clusters:', 'tls_config:'), '/etc/hypha-serve-exporter/ray/', {
      'ca.crt': fs.readFileSync(ca.crt, 'utf8'), 'tls.crt': client.pem.crt, 'tls.key': client.pem.key, password: 'pw-doc-1234\n',
    });
    const cfg = loadConfig(t.write('ray.yml', text), {});
    const http = cfg.rayClusters[0].http;
    expect(cfg.rayClusters[0].name).toBe('lab');
    expect(authorizationHeader(http)).toBe(`Basic ${Buffer.from('ray-reader:pw-doc-1234').toString('base64')}`);
    expect(tlsOptions(http)).toMatchObject({ servername: 'ray.lab.example', rejectUnauthorized: true, minVersion: 'TLSv1.2', cert: client.pem.crt.trim() });
    expect(http.proxyUrl).toBe('http://egress-proxy.lab:3128');
  });

  it('the web config: TLS with client certificates and allowed SANs, headers, a rate limit, a user (its hash made as the comment says)', () => {
    const server = ca.issue('exporter-web', ['DNS:exporter']);
    const block = installDocBlock('tls_server_config:');
    // The example's hash is elided (`$2y$10$...`); the comment gives the command that makes one.
    expect(block).toContain('$2y$10$...');
    const hash = bcrypt.hashSync('scrape-pw', 10).replace(/^\$2a\$/, '$2y$');
    const text = withFiles(block.replace('$2y$10$...', hash), '/etc/hypha-serve-exporter/tls/', {
      'tls.crt': server.pem.crt, 'tls.key': server.pem.key, 'ca.crt': fs.readFileSync(ca.crt, 'utf8'),
    });
    const web = loadWebConfig(t.write('web.yml', text));
    expect(web.tls).toMatchObject({ clientAuth: 'RequireAndVerifyClientCert', allowedSans: ['spiffe://cluster.local/ns/monitoring/sa/prometheus'] });
    expect(web.headers).toEqual([['X-Frame-Options', 'deny'], ['Content-Security-Policy', "default-src 'self'"]]);
    expect(web.rateLimit).toEqual({ intervalMs: 100, burst: 20 });
    expect([...(web.users?.keys() ?? [])]).toEqual(['prometheus']);
    expect(bcrypt.compareSync('scrape-pw', web.users?.get('prometheus') ?? '')).toBe(true);
  });
});
