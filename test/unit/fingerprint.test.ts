import { loadConfig } from '../../src/config/load';
import { fingerprint } from '../../src/sources/fingerprint';
import { Secret } from '../../src/util/secret';
import { tmpDir } from '../helpers/tmp';

describe('fingerprint', () => {
  const t = tmpDir();
  afterAll(() => t.cleanup());
  const load = (text: string, env: NodeJS.ProcessEnv = {}) => loadConfig(t.write('c.yml', text), env);

  it('changes with a secret value, is equal for the same value, and never contains it', () => {
    const a = fingerprint({ name: 'main', token: new Secret('token-value-aaaa-1111') });
    expect(fingerprint({ name: 'main', token: new Secret('token-value-aaaa-1111') })).toBe(a);
    expect(fingerprint({ name: 'main', token: new Secret('token-value-bbbb-2222') })).not.toBe(a);
    expect(fingerprint({ name: 'main' })).not.toBe(a);
    expect(a).not.toContain('token-value-aaaa-1111');
    expect(a).not.toContain('<secret>');
  });

  it('a secret in a loaded config: changed token, changed fingerprint; the token is not in it', () => {
    const text = 'hypha:\n  name: main\n  server_url: http://127.0.0.1:9527\n  bearer_token_env: TOK\n';
    const one = fingerprint(load(text, { TOK: 'secret-value-1234' }).hypha);
    expect(fingerprint(load(text, { TOK: 'secret-value-1234' }).hypha)).toBe(one);
    expect(fingerprint(load(text, { TOK: 'other-value-5678' }).hypha)).not.toBe(one);
    expect(one).not.toContain('secret-value-1234');
  });

  it('changes with a RegExp source or flags (JSON.stringify sees every RegExp as {})', () => {
    const a = fingerprint({ include: /^two/ });
    expect(fingerprint({ include: /^two/ })).toBe(a);
    expect(fingerprint({ include: /^three/ })).not.toBe(a);
    expect(fingerprint({ include: /^two/i })).not.toBe(a);
    expect(fingerprint({ include: undefined })).not.toBe(a);
  });

  it('a regex in a loaded config changes the fingerprint', () => {
    const cfg = (re: string) => `ray_clusters:\n  - name: c\n    dashboard_url: http://127.0.0.1:8265\nhypha:\n  name: main\n  server_url: http://127.0.0.1:9527\nhypha_registration:\n  clusters:\n    - cluster: c\n      templates:\n        - service: "{workspace}/bridge:{app}"\n          include: "${re}"\n`;
    const a = fingerprint(load(cfg('^two')).hyphaRegistration);
    expect(fingerprint(load(cfg('^two')).hyphaRegistration)).toBe(a);
    expect(fingerprint(load(cfg('^three')).hyphaRegistration)).not.toBe(a);
  });

  it('does not depend on the order of object keys, in the YAML or in the loaded objects', () => {
    const a = load('ray_clusters:\n  - name: c\n    dashboard_url: http://127.0.0.1:8265\n    interval: 10s\n    timeout: 2s\n').rayClusters[0];
    const b = load('ray_clusters:\n  - timeout: 2s\n    interval: 10s\n    dashboard_url: http://127.0.0.1:8265\n    name: c\n').rayClusters[0];
    expect(fingerprint(b)).toBe(fingerprint(a));
    const reversed = Object.fromEntries(Object.entries(a).reverse());
    expect(Object.keys(reversed)).not.toEqual(Object.keys(a));
    expect(fingerprint(reversed)).toBe(fingerprint(a));
    expect(fingerprint({ ...a, timeoutMs: a.timeoutMs + 1 })).not.toBe(fingerprint(a));
  });

  it('array order counts; Map and Set contents count, their insertion order does not', () => {
    expect(fingerprint(['a', 'b'])).not.toBe(fingerprint(['b', 'a']));
    expect(fingerprint(new Map([['x', 1], ['y', 2]]))).toBe(fingerprint(new Map([['y', 2], ['x', 1]])));
    expect(fingerprint(new Map([['x', 1]]))).not.toBe(fingerprint(new Map([['x', 2]])));
    expect(fingerprint(new Set(['a', 'b']))).toBe(fingerprint(new Set(['b', 'a'])));
    expect(fingerprint(new Set(['a']))).not.toBe(fingerprint(new Set(['a', 'b'])));
    expect(fingerprint(new Map([['t', new Secret('s3cret-in-a-map')]]))).not.toContain('s3cret-in-a-map');
  });
});
