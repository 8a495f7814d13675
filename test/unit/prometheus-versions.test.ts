// Which Prometheus versions the tests run on, and when a missing Prometheus 3 build is a failure
// (CI) rather than a dropped entry (a developer without Go). Uses scratch bin dirs, no real build.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  DEBIAN_PROMETHEUS, prometheus3BinDir, prometheusVersions, requirePrometheus3,
} from '../harness/prometheus-versions';

const KEYS = ['CI', 'HSE_REQUIRE_PROMETHEUS3', 'PROMETHEUS3_BIN_DIR', 'XDG_CACHE_HOME'] as const;
const saved: Partial<Record<(typeof KEYS)[number], string>> = {};
let scratch: string;

beforeEach(() => {
  for (const k of KEYS) { saved[k] = process.env[k]; delete process.env[k]; }
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'p3-versions-'));
});
afterEach(() => {
  for (const k of KEYS) { if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k]; }
  fs.rmSync(scratch, { recursive: true, force: true });
});

function fakeBuild(dir: string, which: string[] = ['prometheus', 'promtool']): void {
  fs.mkdirSync(dir, { recursive: true });
  for (const b of which) fs.writeFileSync(path.join(dir, b), '#!/bin/sh\n', { mode: 0o755 });
}

test('without a 3.x build and outside CI: only Debian 2.42, and requirePrometheus3 says so without throwing', () => {
  process.env.PROMETHEUS3_BIN_DIR = path.join(scratch, 'none');
  expect(prometheusVersions()).toEqual([DEBIAN_PROMETHEUS]);
  expect(requirePrometheus3()).toBeUndefined();
});

test.each([['CI', 'true'], ['HSE_REQUIRE_PROMETHEUS3', '1']] as const)('with %s=%s a missing 3.x build is kept in the list and requirePrometheus3 throws', (k, val) => {
  process.env.PROMETHEUS3_BIN_DIR = path.join(scratch, 'none');
  process.env[k] = val;
  const versions = prometheusVersions();
  expect(versions.map((v) => v.label)).toEqual(['2.42', '3.16']);
  expect(versions[1].prometheus).toBe(path.join(scratch, 'none', 'prometheus'));
  expect(() => requirePrometheus3()).toThrow(/Prometheus 3\.16\.0 not built.*setup-prometheus3\.sh/);
});

test('half a build (promtool missing) counts as missing', () => {
  const dir = path.join(scratch, 'half');
  fakeBuild(dir, ['prometheus']);
  process.env.PROMETHEUS3_BIN_DIR = dir;
  expect(prometheusVersions()).toEqual([DEBIAN_PROMETHEUS]);
  process.env.CI = 'true';
  expect(() => requirePrometheus3()).toThrow(/promtool/);
});

test('a build in the cache dir is listed with both binaries', () => {
  process.env.XDG_CACHE_HOME = scratch;
  const dir = path.join(scratch, 'hypha-serve-exporter', 'prometheus-v0.316.0', 'bin');
  fakeBuild(dir);
  process.env.CI = 'true';
  expect(prometheusVersions()[1]).toEqual({ label: '3.16', prometheus: path.join(dir, 'prometheus'), promtool: path.join(dir, 'promtool') });
  expect(requirePrometheus3()?.promtool).toBe(path.join(dir, 'promtool'));
});

test.each([
  ['defaults', {}],
  ['XDG_CACHE_HOME', { XDG_CACHE_HOME: '/x/cache' }],
  ['PROMETHEUS3_BIN_DIR', { PROMETHEUS3_BIN_DIR: '/y/bin', XDG_CACHE_HOME: '/x/cache' }],
] as const)('the harness looks where scripts/setup-prometheus3.sh builds (%s)', (_n, env: Record<string, string>) => {
  Object.assign(process.env, env);
  const script = path.join(__dirname, '..', '..', 'scripts', 'setup-prometheus3.sh');
  const printed = execFileSync('bash', [script, '--print-bin-dir'], { encoding: 'utf8', env: { ...process.env } }).trim();
  expect(printed).toBe(prometheus3BinDir());
});

describe('scripts/setup-prometheus3.sh decisions (scratch bin dirs; nothing is built)', () => {
  const script = path.join(__dirname, '..', '..', 'scripts', 'setup-prometheus3.sh');
  const run = (env: Record<string, string>) => spawnSync('bash', [script], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 });
  const fakeVersion = (dir: string, version: string) => {
    fs.mkdirSync(dir, { recursive: true });
    for (const b of ['prometheus', 'promtool']) {
      fs.writeFileSync(path.join(dir, b), `#!/bin/sh\necho "${b}, version ${version} (branch: x, revision: y)"\n`, { mode: 0o755 });
    }
  };

  test('binaries reporting 3.16.0 are kept: no Go needed, exits 0 at once', () => {
    const dir = path.join(scratch, 'ok');
    fakeVersion(dir, '3.16.0');
    const r = run({ PROMETHEUS3_BIN_DIR: dir, GO: '/nonexistent/go' });
    expect(r.stdout).toMatch(/Prometheus 3\.16\.0 and promtool already in/);
    expect(r.status).toBe(0);
  });

  test.each([['another version', '3.15.1'], ['an unstamped go install build', '']])('%s is rebuilt (here: fails clearly for want of Go)', (_what, version) => {
    const dir = path.join(scratch, 'stale');
    fakeVersion(dir, version);
    const r = run({ PROMETHEUS3_BIN_DIR: dir, GO: '/nonexistent/go' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/ERROR: Go is not installed \(GO=\/nonexistent\/go does not run\).*\n.*Install Go/);
    expect(r.stderr).toMatch(/SETUP_PROMETHEUS3=0/);
  });
});
