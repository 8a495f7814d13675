// scripts/setup.sh on a machine that already has everything (the test suite runs after it):
// nothing is installed, downloaded or built again except the TypeScript build, and it takes
// seconds. Guards against a step that forgets its "already done" check (e.g. rebuilding
// Prometheus 3, ~15 min cold).
import { spawnSync } from 'node:child_process';
import { repoRoot } from '../../src/util/repo-root';

jest.setTimeout(300_000);

test('a second run of scripts/setup.sh redoes nothing but the build, in seconds', () => {
  const t0 = Date.now();
  const r = spawnSync('bash', ['scripts/setup.sh'], { cwd: repoRoot(), encoding: 'utf8', timeout: 280_000 });
  const secs = (Date.now() - t0) / 1000;
  const out = `${r.stdout}\n${r.stderr}`;
  expect(r.status).toBe(0);
  const steps = out.split('\n').filter((l) => /^\[setup \d\d:\d\d:\d\d\] /.test(l)).map((l) => l.replace(/^\[setup \S+\] /, ''));
  expect(steps).toEqual(['build', 'ready']);
  if (process.env.SETUP_PROMETHEUS3 !== '0') {
    expect(out).toMatch(/\[setup-prometheus3 \S+\] Prometheus 3\.16\.0 and promtool already in /);
    expect(out).not.toMatch(/building Prometheus/);
  }
  // The TypeScript build dominates (~10 s idle, more on a busy 2-core machine).
  expect(secs).toBeLessThan(120);
  process.stdout.write(`[setup-idempotent] warm scripts/setup.sh took ${secs.toFixed(1)} s\n`);
});
