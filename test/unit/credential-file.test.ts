// Token files re-read when they change (issue 18): rotation, a file missing or empty for a moment
// (a Kubernetes Secret update in progress), the atomic `..data` symlink swap, and the fingerprint
// that keeps a rotation from restarting a source on reload.
import fs from 'node:fs';
import path from 'node:path';
import { FileSecret } from '../../src/config/credential-file';
import { ConfigError, loadConfig } from '../../src/config/load';
import { fingerprint } from '../../src/sources/fingerprint';
import { scrub, Secret } from '../../src/util/secret';
import { secretVolume } from '../helpers/secret-volume';
import { tmpDir } from '../helpers/tmp';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('FileSecret', () => {
  const t = tmpDir();
  afterAll(() => t.cleanup());

  it('refuses a missing or empty file at open (config validation), with the reason', () => {
    expect(() => FileSecret.open(path.join(t.dir, 'nope'))).toThrow('ENOENT');
    const empty = t.write('empty', '  \n');
    expect(() => FileSecret.open(empty)).toThrow('file is empty');
  });

  it('a rotated file is used from the next reveal(); the status tells when it was read, never the token', async () => {
    const f = t.write('rot', 'token-one-aaaa\n');
    const s = FileSecret.open(f);
    expect(s.reveal()).toBe('token-one-aaaa');
    const first = s.status();
    expect(first).toEqual({ file: f, lastReadSeconds: expect.any(Number), readErrorsTotal: 0, changesTotal: 0 });
    await sleep(20);
    fs.writeFileSync(f, 'token-two-bbbb\n');
    expect(s.reveal()).toBe('token-two-bbbb');
    expect(s.status().changesTotal).toBe(1);
    expect(s.status().lastReadSeconds).toBeGreaterThan(first.lastReadSeconds);
    expect(JSON.stringify(s.status())).not.toContain('token-');
    expect(String(s)).toBe('<secret>');
    expect(JSON.stringify({ s })).toBe('{"s":"<secret>"}');
    // An unchanged file is not read again (one stat per use).
    const read = s.status().lastReadSeconds;
    await sleep(20);
    s.reveal();
    expect(s.status().lastReadSeconds).toBe(read);
  });

  it('a file missing or empty for a moment keeps the last good token and counts the spell once', () => {
    const f = t.write('gap', 'good-token-1111');
    const s = FileSecret.open(f);
    fs.rmSync(f);
    for (let i = 0; i < 5; i++) expect(s.reveal()).toBe('good-token-1111');
    expect(s.status()).toMatchObject({ readErrorsTotal: 1, problem: 'ENOENT' });
    fs.writeFileSync(f, '');
    expect(s.reveal()).toBe('good-token-1111');
    expect(s.status()).toMatchObject({ readErrorsTotal: 2, problem: 'file is empty' });
    fs.writeFileSync(f, 'good-token-2222');
    expect(s.reveal()).toBe('good-token-2222');
    expect(s.status().problem).toBeUndefined();
    expect(s.status().readErrorsTotal).toBe(2);
  });

  it('follows a Kubernetes ..data symlink swap', () => {
    const dir = path.join(t.dir, 'vol');
    fs.mkdirSync(dir);
    const vol = secretVolume(dir, 'k8s-token-old');
    const s = FileSecret.open(vol.file);
    expect(s.reveal()).toBe('k8s-token-old');
    vol.swap('k8s-token-new');
    expect(s.reveal()).toBe('k8s-token-new');
    vol.swap('k8s-token-3rd');
    expect(s.reveal()).toBe('k8s-token-3rd');
    expect(s.status()).toMatchObject({ changesTotal: 2, readErrorsTotal: 0 });
  });

  it('refresh({force}) reads a file whose stamp did not move; the same content is not a change', () => {
    const f = t.write('force', 'same-token-xxxx');
    const s = FileSecret.open(f);
    const before = s.status().lastReadSeconds;
    s.refresh({ force: true });
    expect(s.status().lastReadSeconds).toBeGreaterThanOrEqual(before);
    expect(s.status().changesTotal).toBe(0);
  });

  it('scrubs the current and earlier tokens from texts', () => {
    const f = t.write('scrub', 'first-secret-1');
    const s = FileSecret.open(f);
    fs.writeFileSync(f, 'second-secret-2');
    s.reveal();
    expect(scrub('a first-secret-1 b second-secret-2 c', [s])).toBe('a <secret> b <secret> c');
    expect(scrub('x env-secret-9 y', [new Secret('env-secret-9')])).toBe('x <secret> y');
  });

  it('fingerprints by path: a rotation does not restart a source on reload, another file does', () => {
    const a = t.write('fp-a', 'fp-token-1');
    const b = t.write('fp-b', 'fp-token-1');
    const s1 = FileSecret.open(a);
    const before = fingerprint({ token: s1 });
    fs.writeFileSync(a, 'fp-token-2');
    expect(fingerprint({ token: FileSecret.open(a) })).toBe(before);
    expect(fingerprint({ token: FileSecret.open(b) })).not.toBe(before);
    // A token from the environment is still fingerprinted by its value.
    expect(fingerprint({ token: new Secret('x1234') })).not.toBe(fingerprint({ token: new Secret('y1234') }));
  });

  it('loadConfig: an unreadable token file at start is a config error naming the field and the file', () => {
    const cfg = t.write('cfg.yml', `ray_clusters:\n  - name: c1\n    dashboard_url: http://127.0.0.1:1\n    bearer_token_file: ${path.join(t.dir, 'missing-token')}\n`);
    let err: unknown;
    try { loadConfig(cfg); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).field).toBe('ray_clusters[0].bearer_token_file');
    expect((err as ConfigError).message).toContain(`cannot read token file ${path.join(t.dir, 'missing-token')}: ENOENT`);
    expect((err as ConfigError).line).toBe(4);
  });
});
