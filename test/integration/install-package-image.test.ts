/**
 * The two ways to run the exporter outside the repository, each against a real Ray Serve:
 *  - the npm package: `npm pack`, `npm install -g --prefix` of the tarball into a clean prefix, the bin link;
 *  - the container image: scripts/build-image.sh (podman, base image from the Debian mirror), run with
 *    --init on the host network, read-only root, all capabilities dropped, a token as a podman secret.
 * One Ray cluster serves both. Figures (install time, image size, start-to-ready) go to the test log.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePorts } from '../harness/ports';
import { Proc, repoRoot, startProc, waitFor } from '../harness/proc';
import { RayCluster, rayAppConfig, startRay } from '../harness/ray';
import { seriesValue } from '../helpers/exporter';
import { tmpDir } from '../helpers/tmp';

jest.setTimeout(1_800_000);
const execFileP = promisify(execFile);
const root = repoRoot();
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const cacheDir = process.env.HSE_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'hypha-serve-exporter');
const podman = path.join(cacheDir, 'podman', 'podman');

async function run(cmd: string, args: string[], opts: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}) {
  const r = await execFileP(cmd, args, {
    cwd: opts.cwd ?? root,
    timeout: opts.timeoutMs ?? 600_000,
    maxBuffer: 64 * 1024 * 1024,
    env: opts.env ?? process.env,
  });
  return { stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** Exit code and output of a command that may fail (no throw). */
async function tryRun(cmd: string, args: string[], timeoutMs = 120_000) {
  try {
    const r = await run(cmd, args, { timeoutMs });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (e) {
    const err = e as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : -1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

function get(url: string, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
  });
}

/** Waits until /metrics shows the real Ray cluster up and the deployed app RUNNING; returns the text. */
async function scrapeUntilRunning(base: string, timeoutMs: number): Promise<string> {
  return waitFor(
    'the exporter to report the Ray cluster up and two-step RUNNING',
    async () => {
      const r = await get(`${base}/metrics`);
      if (r.status !== 200) return undefined;
      const up = seriesValue(r.body, 'hypha_serve_source_up', { source: 'ray', target: 'local' });
      const running = seriesValue(r.body, 'hypha_serve_app_status', { app: 'two-step', status: 'RUNNING' });
      return up === 1 && running === 1 ? r.body : undefined;
    },
    timeoutMs,
    500,
  );
}

function exporterConfig(dashboardUrl: string, downPort: number, tokenFile: string): string {
  // A second cluster on a closed port, with the same token, walks the error paths that log.
  return [
    'global: {interval: 2s, timeout: 2s}',
    'ray_clusters:',
    '  - name: local',
    `    dashboard_url: ${dashboardUrl}`,
    `    bearer_token_file: ${tokenFile}`,
    '  - name: down',
    `    dashboard_url: http://127.0.0.1:${downPort}`,
    `    bearer_token_file: ${tokenFile}`,
    '',
  ].join('\n');
}

describe('install: npm package and container image against real Ray Serve', () => {
  let ray: RayCluster | undefined;
  const procs: Proc[] = [];
  const tmp = tmpDir('hse-install-');

  beforeAll(async () => {
    ray = await startRay();
    await ray.deploy(rayAppConfig('two-step.yaml'));
    await ray.waitApp('two-step', (a) => a.status === 'RUNNING', 180_000);
  });

  afterAll(async () => {
    for (const p of procs) await p.stop();
    await ray?.stop();
    tmp.cleanup();
  });

  it('npm pack ships only what runs; the tarball installs into a clean prefix; the bin serves /metrics', async () => {
    const packDir = path.join(tmp.dir, 'pack');
    fs.mkdirSync(packDir);
    // --ignore-scripts: dist/ was built by scripts/setup.sh; a prepack build would race other users of dist/.
    const packed = JSON.parse((await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir])).stdout) as Array<{
      filename: string;
      size: number;
      unpackedSize: number;
      files: Array<{ path: string }>;
    }>;
    const files = packed[0].files.map((f) => f.path).sort();
    console.log(`npm pack: ${packed[0].filename}, ${packed[0].size} bytes packed, ${packed[0].unpackedSize} unpacked, ${files.length} files`);
    const allowed = [/^dist\/src\/.+\.js$/, /^rules\/[^/]+\.yml$/, /^dashboards\/json\/[^/]+\.json$/, /^docs\/config\.schema\.json$/,
      /^deploy\/systemd\/hypha-serve-exporter\.service$/, /^package\.json$/, /^README\.md$/, /^LICENSE$/];
    expect(files.filter((f) => !allowed.some((re) => re.test(f)))).toEqual([]);
    for (const must of ['dist/src/main.js', 'rules/alerts.yml', 'rules/recording.yml', 'docs/config.schema.json', 'README.md', 'package.json']) {
      expect(files).toContain(must);
    }
    expect(files.filter((f) => f.startsWith('dashboards/json/')).length).toBeGreaterThan(0);
    // A compiled file without a source is a leftover of a deleted module: it would ship dead code.
    const orphans = files
      .filter((f) => f.startsWith('dist/src/'))
      .filter((f) => !fs.existsSync(path.join(root, f.replace(/^dist\//, '').replace(/\.js$/, '.ts'))));
    expect(orphans).toEqual([]);

    const prefix = path.join(tmp.dir, 'prefix');
    const t0 = Date.now();
    await run('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--loglevel=error', path.join(packDir, packed[0].filename)], {
      cwd: tmp.dir,
    });
    console.log(`npm install -g from the tarball: ${Date.now() - t0} ms`);
    const installed = path.join(prefix, 'lib', 'node_modules', pkg.name);
    const modules = fs.readdirSync(path.join(installed, 'node_modules')).flatMap((d) =>
      d.startsWith('@') ? fs.readdirSync(path.join(installed, 'node_modules', d)).map((s) => `${d}/${s}`) : [d],
    );
    for (const dep of Object.keys(pkg.dependencies)) expect(modules).toContain(dep);
    for (const dev of Object.keys(pkg.devDependencies)) expect(modules).not.toContain(dev);

    const bin = path.join(prefix, 'bin', 'hypha-serve-exporter');
    // Run from outside any checkout, with a PATH that has node but not the repo's node_modules/.bin.
    const env = { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, HOME: tmp.dir };
    const version = await run(bin, ['--version'], { cwd: tmp.dir, env });
    expect(version.stdout).toMatch(new RegExp(`^hypha-serve-exporter ${pkg.version.replace(/\./g, '\\.')} \\(`));
    const bad = await tryRun(bin, ['--no-such-flag']);
    expect(bad.code).toBe(2);

    const token = crypto.randomBytes(24).toString('hex');
    const tokenFile = tmp.write('ray-token', `${token}\n`);
    fs.chmodSync(tokenFile, 0o600);
    const [port, downPort] = await freePorts(2);
    const config = tmp.write('npm-config.yml', exporterConfig(ray!.dashboardUrl, downPort, tokenFile));
    const t1 = Date.now();
    const proc = startProc('install-npm-exporter', bin, [`--config.file=${config}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=debug'], {
      cwd: tmp.dir,
      env,
    });
    procs.push(proc);
    const base = `http://127.0.0.1:${port}`;
    await waitFor('/-/ready', async () => (await get(`${base}/-/ready`)).status === 200, 60_000, 100);
    console.log(`npm-installed exporter: start to ready ${Date.now() - t1} ms`);
    const text = await scrapeUntilRunning(base, 60_000);
    expect(seriesValue(text, 'hypha_serve_exporter_build_info', { version: pkg.version })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_source_up', { source: 'ray', target: 'down' })).toBe(0);
    await proc.stop('SIGTERM');
    expect(proc.output()).toContain('listening');
    expect(proc.output()).not.toContain(token);
  });

  it('the container image runs non-root, read-only, with --init on the host network; stops fast; keeps the token out of its logs', async () => {
    const tb = Date.now();
    const build = await run('bash', ['scripts/build-image.sh'], { timeoutMs: 1_500_000 });
    console.log(`scripts/build-image.sh: ${Date.now() - tb} ms\n${build.stdout.trim()}`);
    const image = `hypha-serve-exporter:${pkg.version}`;
    const size = Number((await run(podman, ['image', 'inspect', '--format', '{{.Size}}', image])).stdout.trim());
    console.log(`image ${image}: ${(size / 1e6).toFixed(1)} MB`);
    expect(size).toBeGreaterThan(0);
    const cfg = JSON.parse((await run(podman, ['image', 'inspect', '--format', '{{json .Config}}', image])).stdout) as {
      User: string;
      ExposedPorts: Record<string, unknown>;
    };
    expect(cfg.User).toBe('10001:10001');
    expect(Object.keys(cfg.ExposedPorts)).toEqual(['9731/tcp']);
    // Exec form (no shell): ["CMD", "/usr/bin/node", "-e", ...]
    const health = JSON.parse((await run(podman, ['image', 'inspect', '--format', '{{json .HealthCheck}}', image])).stdout) as { Test: string[] };
    expect(health.Test.slice(0, 3)).toEqual(['CMD', '/usr/bin/node', '-e']);
    expect(health.Test[3]).toContain('/-/healthy');

    // No shell in the runtime image: an entrypoint of /bin/sh cannot start.
    const shell = await tryRun(podman, ['run', '--rm', '--pull=never', '--network', 'none', '--health-interval=disable', '--entrypoint', '/bin/sh', image, '-c', 'true']);
    expect(shell.code).not.toBe(0);
    const version = await run(podman, ['run', '--rm', '--pull=never', '--network', 'none', '--health-interval=disable', image, '--version']);
    expect(version.stdout).toMatch(new RegExp(`^hypha-serve-exporter ${pkg.version.replace(/\./g, '\\.')} \\(revision [0-9a-f]{12}`));

    const id = `${process.pid}-${Date.now()}`;
    const name = `hse-install-test-${id}`;
    const secret = `hse-install-test-token-${id}`;
    const token = crypto.randomBytes(24).toString('hex');
    const tokenFile = tmp.write('container-token', token);
    const [port, downPort] = await freePorts(2);
    const config = tmp.write('container-config.yml', exporterConfig(ray!.dashboardUrl, downPort, '/run/secrets/hypha-serve-exporter/ray-token'));
    fs.chmodSync(config, 0o644);
    await run(podman, ['secret', 'create', secret, tokenFile]);
    try {
      const t0 = Date.now();
      await run(podman, [
        // Podman schedules image healthchecks with systemd timers; none here, so `healthcheck run` below
        // runs the image's check by hand.
        'run', '-d', '--init', '--name', name, '--pull=never', '--network', 'host', '--health-interval=disable',
        '--read-only', '--cap-drop=ALL', '--security-opt', 'no-new-privileges',
        '-v', `${config}:/etc/hypha-serve-exporter/config.yml:ro`,
        // With --read-only, podman can only create the secret's mount point on a tmpfs.
        '--tmpfs', '/run/secrets',
        '--secret', `${secret},target=hypha-serve-exporter/ray-token,uid=10001,gid=10001,mode=0400`,
        '-e', `HEALTHCHECK_URL=http://127.0.0.1:${port}/-/healthy`,
        image, '--config.file=/etc/hypha-serve-exporter/config.yml', `--web.listen-address=127.0.0.1:${port}`, '--log.level=debug',
      ]);
      const base = `http://127.0.0.1:${port}`;
      await waitFor('container /-/ready', async () => (await get(`${base}/-/ready`)).status === 200, 120_000, 100);
      console.log(`container: podman run to /-/ready ${Date.now() - t0} ms`);
      const text = await scrapeUntilRunning(base, 60_000);
      expect(seriesValue(text, 'hypha_serve_source_up', { source: 'ray', target: 'down' })).toBe(0);
      expect((await get(`${base}/-/healthy`)).status).toBe(200);
      expect((await tryRun(podman, ['healthcheck', 'run', name])).code).toBe(0);

      // SIGHUP through --init reaches the exporter: it reloads (the docs' `podman kill --signal HUP`).
      await run(podman, ['kill', '--signal', 'HUP', name]);
      await waitFor('the reload after SIGHUP', async () => {
        const l = await run(podman, ['logs', name]);
        return (l.stdout + l.stderr).includes('SIGHUP received');
      }, 15_000);
      const after = await get(`${base}/metrics`);
      expect(seriesValue(after.body, 'hypha_serve_exporter_config_last_reload_successful')).toBe(1);

      // The exporter runs as uid 10001 on the host too (rootful podman, no user namespace).
      const pid = Number((await run(podman, ['inspect', '--format', '{{.State.Pid}}', name])).stdout.trim());
      const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
      const uids = [pid, ...children].map((p) => /^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${p}/status`, 'utf8'))?.[1]);
      const nodeUid = children.map((p) => ({ p, cmd: fs.readFileSync(`/proc/${p}/cmdline`, 'utf8') }))
        .filter((c) => c.cmd.includes('main.js'))
        .map((c) => /^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${c.p}/status`, 'utf8'))?.[1]);
      expect(nodeUid).toEqual(['10001']);
      expect(uids).not.toContain('0');

      const ts = Date.now();
      await run(podman, ['stop', '-t', '10', name]);
      const stopMs = Date.now() - ts;
      console.log(`container: podman stop (SIGTERM) took ${stopMs} ms`);
      expect(stopMs).toBeLessThan(2000);
      const exit = (await run(podman, ['inspect', '--format', '{{.State.ExitCode}}', name])).stdout.trim();
      expect(exit).toBe('0');
      const logs = await run(podman, ['logs', name]);
      const all = logs.stdout + logs.stderr;
      expect(all).toContain('listening');
      expect(all).toContain('shutting down');
      expect(all).not.toContain(token);
    } finally {
      await tryRun(podman, ['rm', '-f', name]);
      await tryRun(podman, ['secret', 'rm', secret]);
    }
  });
});
