import { ConfigError, loadConfig } from '../../src/config/load';
import { tmpDir } from '../helpers/tmp';

describe('config loading', () => {
  const t = tmpDir();
  afterAll(() => t.cleanup());

  function load(text: string, env: NodeJS.ProcessEnv = {}) {
    return loadConfig(t.write('c.yml', text), env);
  }
  function expectError(text: string, fieldRe: RegExp, line: number | undefined, problemRe: RegExp, env: NodeJS.ProcessEnv = {}) {
    let err: unknown;
    try {
      load(text, env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const ce = err as ConfigError;
    expect(ce.file).toMatch(/c\.yml$/);
    expect(ce.field).toMatch(fieldRe);
    expect(ce.line).toBe(line);
    expect(ce.problem).toMatch(problemRe);
    // One line, naming file, line and field.
    expect(ce.message.split('\n')).toHaveLength(1);
    expect(ce.message).toContain(ce.file);
  }

  it('loads a valid config with defaults and per-cluster overrides', () => {
    const tokenFile = t.write('tok', 'tok-abcdef-123\n');
    const cfg = load(`global:\n  interval: 30s\nray_clusters:\n  - name: a\n    dashboard_url: http://127.0.0.1:8265/\n  - name: b\n    dashboard_url: https://ray.example:8265\n    timeout: 500ms\n    bearer_token_file: ${tokenFile}\n    proxy_probe: {enabled: false}\n`);
    expect(cfg.rayClusters).toHaveLength(2);
    expect(cfg.rayClusters[0]).toMatchObject({ name: 'a', dashboardUrl: 'http://127.0.0.1:8265', intervalMs: 30000, timeoutMs: 5000 });
    expect(cfg.rayClusters[1].timeoutMs).toBe(500);
    expect(cfg.rayClusters[1].proxyProbe.enabled).toBe(false);
    expect(cfg.rayClusters[1].http.authorization?.credentials.reveal()).toBe('tok-abcdef-123');
    // The secret never serialises.
    expect(JSON.stringify(cfg)).not.toContain('tok-abcdef-123');
  });

  it('takes a token from the environment', () => {
    const cfg = load('ray_clusters:\n  - name: a\n    dashboard_url: http://h:1\n    bearer_token_env: RAY_TOK\n', { RAY_TOK: 'xyz-secret' });
    expect(cfg.rayClusters[0].http.authorization?.credentials.reveal()).toBe('xyz-secret');
  });

  it('an empty file is a valid, empty config', () => {
    expect(load('').rayClusters).toEqual([]);
  });

  it('rejects YAML syntax errors with line and column', () => {
    // The parser reports the unclosed flow sequence where the input ends.
    expectError('ray_clusters:\n  - name: a\n    dashboard_url: [http://h:1\n', /^$/, 4, /YAML syntax: Flow sequence/);
  });

  it('rejects unknown keys, pointing at the key', () => {
    expectError('ray_clusters:\n  - name: a\n    dashbord_url: http://h:1\n', /ray_clusters\[0\]\.dashbord_url/, 3, /unknown key "dashbord_url"/);
  });

  it('rejects wrong types', () => {
    expectError('ray_clusters:\n  - name: a\n    dashboard_url: http://h:1\n    max_apps: many\n', /ray_clusters\[0\]\.max_apps/, 4, /number/i);
  });

  it('rejects bad URLs and URLs with credentials', () => {
    expectError('ray_clusters:\n  - name: a\n    dashboard_url: ftp://h:1\n', /ray_clusters\[0\]\.dashboard_url/, 3, /http/);
    expectError('ray_clusters:\n  - name: a\n    dashboard_url: http://u:p@h:1\n', /dashboard_url/, 3, /credentials/);
  });

  it('rejects bad durations', () => {
    expectError('global:\n  interval: 15 seconds\n', /global\.interval/, 2, /duration/);
  });

  it('rejects a missing required field at the enclosing item', () => {
    expectError('ray_clusters:\n  - name: a\n', /ray_clusters\[0\]\.dashboard_url/, 2, /./);
  });

  it('rejects a missing token file without revealing anything else', () => {
    expectError('ray_clusters:\n  - name: a\n    dashboard_url: http://h:1\n    bearer_token_file: /nonexistent/tok\n', /bearer_token_file/, 4, /cannot read token file \/nonexistent\/tok: ENOENT/);
  });

  it('rejects an unset token variable', () => {
    expectError('ray_clusters:\n  - name: a\n    dashboard_url: http://h:1\n    bearer_token_env: NOPE\n', /bearer_token_env/, 4, /NOPE is not set/);
  });

  it('rejects duplicate cluster names', () => {
    expectError('ray_clusters:\n  - name: a\n    dashboard_url: http://h:1\n  - name: a\n    dashboard_url: http://h:2\n', /ray_clusters\[1\]\.name/, 4, /duplicate/);
  });

  it('hypha: one server as an object or several as a list; mappings name their server', () => {
    const one = load('hypha: {name: main, server_url: "https://hypha.example"}\n');
    expect(one.hyphaServers.map((h) => h.name)).toEqual(['main']);
    expect(one.hypha?.name).toBe('main');
    const two = load([
      'ray_clusters:',
      '  - {name: a, dashboard_url: "http://127.0.0.1:8265"}',
      'hypha:',
      '  - {name: public, server_url: "https://hypha.example", bearer_token_env: T1}',
      '  - {name: lab, server_url: "http://hypha.lab:9527", bearer_token_env: T2}',
      'hypha_registration:',
      '  clusters: [{cluster: a, hypha: lab}]',
      '',
    ].join('\n'), { T1: 'token-one', T2: 'token-two' });
    expect(two.hyphaServers.map((h) => [h.name, h.token?.reveal()])).toEqual([['public', 'token-one'], ['lab', 'token-two']]);
    expect(two.hypha?.name).toBe('public');
    expect(two.hyphaRegistration.clusters[0].hypha).toBe('lab');
    // Watched services default to the first server.
    expect(two.watchedServices.map((w) => [w.service, w.hypha])).toEqual([['public/artifact-manager', undefined]]);
    expect(JSON.stringify(two)).not.toMatch(/token-one|token-two/);
  });

  it('hypha: errors name the field inside the form used (object or list), duplicates and unknown servers', () => {
    expectError('hypha:\n  name: main\n  server_url: "ftp://x"\n', /^hypha\.server_url$/, 3, /url|http/i);
    expectError('hypha:\n  - {name: a, server_url: "https://x"}\n  - {name: b, server_urll: "https://y"}\n', /^hypha\[1\]\.server_urll$/, 3, /unknown key "server_urll"/);
    expectError('hypha:\n  - {name: a, server_url: "https://x"}\n  - {name: a, server_url: "https://y"}\n', /^hypha\[1\]\.name$/, 3, /duplicate Hypha server name "a"/);
    expectError('ray_clusters:\n  - {name: c, dashboard_url: "http://x:8265"}\nhypha: {name: a, server_url: "https://x"}\nhypha_registration:\n  clusters:\n    - cluster: c\n      hypha: nope\n', /hypha_registration\.clusters\[0\]\.hypha/, 7, /no hypha server is named "nope"/);
    expectError('hypha: []\n', /^hypha$/, 1, /.+/);
    expectError('hypha: {name: a, server_url: "https://x"}\nwatched_services:\n  - service: public/artifact-manager\n    hypha: lab\n', /^watched_services\[0\]\.hypha$/, 4, /no hypha server is named "lab"/);
  });

  it('reports a missing config file', () => {
    expect(() => loadConfig('/nonexistent/c.yml')).toThrow(/\/nonexistent\/c\.yml: cannot read config file: ENOENT/);
  });
});

describe('source fingerprints', () => {
  it('change when a token changes and not otherwise', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { fingerprint } = require('../../src/sources/fingerprint') as typeof import('../../src/sources/fingerprint');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { Secret } = require('../../src/util/secret') as typeof import('../../src/util/secret');
    const a = fingerprint({ url: 'x', token: new Secret('one') });
    expect(fingerprint({ url: 'x', token: new Secret('one') })).toBe(a);
    expect(fingerprint({ url: 'x', token: new Secret('two') })).not.toBe(a);
    expect(a).not.toContain('one');
  });
});
