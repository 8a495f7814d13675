import fs from 'node:fs';
import { ConfigError, loadConfig } from '../../src/config/load';
import { authorizationHeader, tlsOptions } from '../../src/config/http-client';
import { TestCa } from '../helpers/certs';
import { tmpDir } from '../helpers/tmp';

// tls_config, basic_auth, authorization and proxy_url of a Ray cluster: what loads, and every
// refusal naming file, line and field.

describe('Ray dashboard HTTP client config', () => {
  const t = tmpDir('hse-httpc-');
  const ca = new TestCa(t.dir);
  const server = ca.issue('ingress', ['DNS:ray.lab', 'IP:127.0.0.1']);
  const client = ca.issue('exporter', ['DNS:exporter'], 'client');
  const password = t.write('password', 'pw-one-1234\n');
  const user = t.write('user', 'ray-reader\n');
  const token = t.write('token', 'tok-abcd-5678\n');
  afterAll(() => t.cleanup());

  const head = 'ray_clusters:\n  - name: a\n    dashboard_url: https://ray.lab:8443\n';
  const load = (body: string, env: NodeJS.ProcessEnv = {}) => loadConfig(t.write('c.yml', head + body), env);
  function refusal(body: string): ConfigError {
    try {
      load(body);
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const ce = e as ConfigError;
      expect(ce.message).toContain(`${ce.file}:${ce.line}:`);
      expect(ce.message.split('\n')).toHaveLength(1);
      return ce;
    }
    throw new Error('loaded');
  }

  it('loads every field and resolves them into what a request sends', () => {
    const cfg = load([
      '    tls_config:',
      `      ca_file: ${ca.crt}`,
      `      cert_file: ${client.crt}`,
      `      key_file: ${client.key}`,
      '      server_name: ray.lab',
      '      min_version: TLS13',
      '    basic_auth:',
      `      username_file: ${user}`,
      `      password_file: ${password}`,
      '    proxy_url: http://proxy.lab:3128',
      '',
    ].join('\n'));
    const http = cfg.rayClusters[0].http;
    expect(authorizationHeader(http)).toBe(`Basic ${Buffer.from('ray-reader:pw-one-1234').toString('base64')}`);
    const o = tlsOptions(http);
    expect(o?.ca).toBe(fs.readFileSync(ca.crt, 'utf8').trim());
    expect(o?.cert).toBe(client.pem.crt.trim());
    expect(o).toMatchObject({ servername: 'ray.lab', rejectUnauthorized: true, minVersion: 'TLSv1.3' });
    expect(http.proxyUrl).toBe('http://proxy.lab:3128');
    // Nothing of a secret in a dump of the config.
    const dump = JSON.stringify(cfg.rayClusters);
    for (const s of ['pw-one-1234', 'BEGIN PRIVATE KEY', 'ray-reader']) expect(dump).not.toContain(s);
  });

  it('authorization: type defaults to Bearer; another scheme is sent as written', () => {
    expect(authorizationHeader(load(`    authorization:\n      credentials_file: ${token}\n`).rayClusters[0].http)).toBe('Bearer tok-abcd-5678');
    expect(authorizationHeader(load(`    authorization: {type: Token, credentials_file: ${token}}\n`).rayClusters[0].http)).toBe('Token tok-abcd-5678');
  });

  it('bearer_token_file and bearer_token_env keep working, as authorization Bearer', () => {
    expect(authorizationHeader(load(`    bearer_token_file: ${token}\n`).rayClusters[0].http)).toBe('Bearer tok-abcd-5678');
    expect(authorizationHeader(load('    bearer_token_env: TOK\n', { TOK: 'env-token-1' }).rayClusters[0].http)).toBe('Bearer env-token-1');
  });

  it('basic_auth with an inline username and no password sends "user:"', () => {
    expect(authorizationHeader(load('    basic_auth: {username: reader}\n').rayClusters[0].http)).toBe(`Basic ${Buffer.from('reader:').toString('base64')}`);
  });

  it('a rotated password, token or CA file is read again at the next use', () => {
    const dir = tmpDir('hse-rot-');
    try {
      const pw = dir.write('pw', 'first-pass\n');
      const caFile = dir.write('ca.crt', fs.readFileSync(ca.crt, 'utf8'));
      const http = load(`    basic_auth: {username: u, password_file: ${pw}}\n    tls_config: {ca_file: ${caFile}}\n`).rayClusters[0].http;
      expect(authorizationHeader(http)).toBe(`Basic ${Buffer.from('u:first-pass').toString('base64')}`);
      fs.writeFileSync(pw, 'second-pass-longer\n');
      expect(authorizationHeader(http)).toBe(`Basic ${Buffer.from('u:second-pass-longer').toString('base64')}`);
      const other = new TestCa(dir.dir, 'other-ca');
      fs.writeFileSync(caFile, fs.readFileSync(other.crt));
      expect(tlsOptions(http)?.ca).toBe(fs.readFileSync(other.crt, 'utf8').trim());
    } finally {
      dir.cleanup();
    }
  });

  it.each([
    ['an inline password', '    basic_auth:\n      username: u\n      password: hunter2\n', 'ray_clusters[0].basic_auth.password', 6, /inline password is not accepted.*password_file/],
    ['inline credentials', `    authorization:\n      credentials_file: ${token}\n      credentials: abc\n`, 'ray_clusters[0].authorization.credentials', 6, /inline credentials is not accepted.*credentials_file/],
    ['basic_auth with authorization', `    basic_auth: {username: u}\n    authorization:\n      credentials_file: ${token}\n`, 'ray_clusters[0].authorization', 6, /set only one of basic_auth, authorization/],
    ['authorization with bearer_token_file', `    bearer_token_file: ${token}\n    authorization: {credentials_file: ${token}}\n`, 'ray_clusters[0].bearer_token_file', 4, /set only one of authorization, bearer_token_file/],
    ['basic_auth with bearer_token_env', '    basic_auth: {username: u}\n    bearer_token_env: T\n', 'ray_clusters[0].bearer_token_env', 5, /set only one of basic_auth, bearer_token_env/],
    ['no username', `    basic_auth:\n      password_file: ${password}\n`, 'ray_clusters[0].basic_auth', 5, /either username or username_file/],
    ['username and username_file', `    basic_auth:\n      username: u\n      username_file: ${user}\n`, 'ray_clusters[0].basic_auth.username_file', 6, /either username or username_file/],
    ['a missing password file', '    basic_auth:\n      username: u\n      password_file: /nonexistent/pw\n', 'ray_clusters[0].basic_auth.password_file', 6, /cannot read password file \/nonexistent\/pw: ENOENT/],
    ['a missing username file', '    basic_auth:\n      username_file: /nonexistent/u\n', 'ray_clusters[0].basic_auth.username_file', 5, /cannot read username file \/nonexistent\/u: ENOENT/],
    ['a missing credentials file', '    authorization:\n      credentials_file: /nonexistent/c\n', 'ray_clusters[0].authorization.credentials_file', 5, /cannot read credentials file \/nonexistent\/c: ENOENT/],
    ['authorization type Basic', `    authorization:\n      type: Basic\n      credentials_file: ${token}\n`, 'ray_clusters[0].authorization.type', 5, /cannot be Basic: use basic_auth/],
    ['authorization type with a space', `    authorization:\n      type: "Bear er"\n      credentials_file: ${token}\n`, 'ray_clusters[0].authorization.type', 5, /authentication scheme/],
    ['authorization without credentials_file', '    authorization:\n      type: Bearer\n', 'ray_clusters[0].authorization.credentials_file', 5, /./],
    ['a missing CA file', '    tls_config:\n      ca_file: /nonexistent/ca.crt\n', 'ray_clusters[0].tls_config.ca_file', 5, /cannot read CA file \/nonexistent\/ca.crt: ENOENT/],
    ['a CA file that is no PEM', `    tls_config:\n      ca_file: ${token}\n`, 'ray_clusters[0].tls_config.ca_file', 5, /no PEM certificate in CA file/],
    ['cert_file without key_file', `    tls_config:\n      cert_file: ${client.crt}\n`, 'ray_clusters[0].tls_config.key_file', 5, /required with cert_file/],
    ['key_file without cert_file', `    tls_config:\n      key_file: ${client.key}\n`, 'ray_clusters[0].tls_config.cert_file', 5, /required with key_file/],
    ['a key of another certificate', `    tls_config:\n      cert_file: ${client.crt}\n      key_file: ${server.key}\n`, 'ray_clusters[0].tls_config.cert_file', 5, /cannot use the certificate and key/],
    ['a missing key file', `    tls_config:\n      cert_file: ${client.crt}\n      key_file: /nonexistent/k\n`, 'ray_clusters[0].tls_config.key_file', 6, /cannot read key file/],
    ['insecure_skip_verify with ca_file', `    tls_config:\n      ca_file: ${ca.crt}\n      insecure_skip_verify: true\n`, 'ray_clusters[0].tls_config.insecure_skip_verify', 6, /contradicts ca_file/],
    ['an unknown TLS version', '    tls_config:\n      min_version: TLS14\n', 'ray_clusters[0].tls_config.min_version', 5, /TLS13/],
    ['an unknown tls_config key', '    tls_config:\n      ca: x\n', 'ray_clusters[0].tls_config.ca', 5, /unknown key "ca"/],
    ['a proxy_url with credentials', '    proxy_url: http://u:p@proxy:3128\n', 'ray_clusters[0].proxy_url', 4, /without credentials/],
    ['an https proxy_url', '    proxy_url: https://proxy:3128\n', 'ray_clusters[0].proxy_url', 4, /http:\/\/host:port/],
    ['a proxy_url with a path', '    proxy_url: http://proxy:3128/x\n', 'ray_clusters[0].proxy_url', 4, /without credentials or a path/],
  ])('refuses %s, naming the field and its line', (_what, body, field, line, problem) => {
    const e = refusal(body);
    expect(e.field).toBe(field);
    expect(e.line).toBe(line);
    expect(e.problem).toMatch(problem);
    // A refusal never quotes a secret's value.
    expect(e.message).not.toMatch(/hunter2|pw-one|tok-abcd/);
  });

  it('refuses tls_config on an http:// dashboard_url', () => {
    let err: unknown;
    try {
      loadConfig(t.write('c.yml', `ray_clusters:\n  - name: a\n    dashboard_url: http://ray:8265\n    tls_config:\n      ca_file: ${ca.crt}\n`));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).field).toBe('ray_clusters[0].tls_config');
    expect((err as ConfigError).line).toBe(5);
    expect((err as ConfigError).problem).toMatch(/no effect on an http:\/\/ dashboard_url/);
  });
});
