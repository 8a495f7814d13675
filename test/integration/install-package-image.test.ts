/**
 * The two ways to run the exporter outside the repository, each against a real Ray Serve:
 *  - the npm package: `npm pack`, `npm install -g --prefix` of the tarball into a clean prefix, the bin link;
 *  - the container image: scripts/build-image.sh (podman, base image from the Debian mirror), run with
 *    --init on the host network, read-only root, all capabilities dropped, a token as a podman secret;
 *  - the image with a named volume for --storage.path, replaced by a new container (an upgrade) while an
 *    incident-2 page fires in a real Prometheus (real Hypha, the shipped rules with `for:` ÷ 10): the page
 *    keeps firing and the witness and registration history come back from the volume.
 * One Ray cluster serves all. Figures (install time, image size, start-to-ready) go to the test log.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { StandinProvider, startStandinProvider } from '../harness/hypha-registrant';
import { freePorts } from '../harness/ports';
import { Proc, startProc, waitFor } from '../harness/proc';
import { PrometheusServer, startPrometheus } from '../harness/prometheus';
import { RayCluster, rayAppConfig, startRay } from '../harness/ray';
import { overriddenRuleFiles } from '../harness/rules-override';
import { samplesOf, seriesValue } from '../helpers/exposition';
import { tmpDir } from '../helpers/tmp';
import { repoRoot } from '../../src/util/repo-root';

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
      const up = seriesValue(r.body, 'hypha_serve_source_up', { source: 'ray', ray_cluster: 'local' });
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
    ray = await startRay({ serving: { config: rayAppConfig('two-step.yaml'), app: 'two-step', timeoutMs: 180_000 } });
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
    // dist/mixin: the rule model the `rules` subcommand renders, with its defaults in rules/config/mixin.yml.
    const allowed = [/^dist\/src\/.+\.js$/, /^dist\/mixin\/[a-z-]+\.js$/, /^rules\/(vmalert\/)?[^/]+\.yml$/, /^rules\/config\/mixin\.yml$/, /^dashboards\/json\/[^/]+\.json$/, /^docs\/config\.schema\.json$/,
      /^deploy\/systemd\/hypha-serve-exporter(-credentials)?\.(service|default|path)$/, /^package\.json$/, /^README\.md$/, /^CHANGELOG\.md$/, /^LICENSE$/];
    expect(files.filter((f) => !allowed.some((re) => re.test(f)))).toEqual([]);
    for (const must of ['dist/src/main.js', 'dist/mixin/build.js', 'dist/mixin/config.js', 'dist/src/util/repo-root.js', 'rules/config/mixin.yml',
      'rules/alerts.yml', 'rules/recording.yml', 'rules/vmalert/alerts.yml', 'rules/vmalert/recording.yml', 'docs/config.schema.json', 'README.md', 'CHANGELOG.md', 'package.json',
      'deploy/systemd/hypha-serve-exporter.service', 'deploy/systemd/hypha-serve-exporter.default']) {
      expect(files).toContain(must);
    }
    expect(files.filter((f) => f.startsWith('dashboards/json/')).length).toBeGreaterThan(0);
    // A compiled file without a source is a leftover of a deleted module: it would ship dead code.
    const orphans = files
      .filter((f) => f.startsWith('dist/'))
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
    // A variant of the rules pack from the installed package alone (no checkout, no TypeScript): promtool loads it.
    const mixin = tmp.write('my-mixin.yml', "exporter_selector: 'job=\"exporter\"'\nalerts:\n  HyphaServiceClientIdChurn: {disabled: true}\n");
    const rulesOut = path.join(tmp.dir, 'my-rules');
    const rendered = await run(bin, ['rules', `--config=${mixin}`, `--out=${rulesOut}`], { cwd: tmp.dir, env });
    expect(rendered.stdout).toContain('wrote');
    const alertsText = fs.readFileSync(path.join(rulesOut, 'alerts.yml'), 'utf8');
    expect(alertsText).toContain('job="exporter"');
    expect(alertsText).not.toContain('HyphaServiceClientIdChurn');
    const loads = await tryRun('promtool', ['check', 'rules', path.join(rulesOut, 'recording.yml'), path.join(rulesOut, 'alerts.yml')]);
    expect(loads.code).toBe(0);

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
    expect(seriesValue(text, 'hypha_serve_source_up', { source: 'ray', ray_cluster: 'down' })).toBe(0);
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
      expect(seriesValue(text, 'hypha_serve_source_up', { source: 'ray', ray_cluster: 'down' })).toBe(0);
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
      // It ended on SIGTERM, before podman's SIGKILL at -t 10 (which would also exit 137, not 0). A tighter bound
      // is a benchmark's figure, not a test's: 2.1 s beside two other lanes at load ~65 (2026-12-07).
      expect(stopMs).toBeLessThan(10_000);
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
  it('a named volume keeps --storage.path: a new container continues an incident-2 page and the registration history', async () => {
    const image = `hypha-serve-exporter:${pkg.version}`;
    // What the image declares: the state directory is a volume and the default command uses it.
    const cfg = JSON.parse((await run(podman, ['image', 'inspect', '--format', '{{json .Config}}', image])).stdout) as {
      Volumes: Record<string, unknown>;
      Cmd: string[];
    };
    expect(Object.keys(cfg.Volumes)).toEqual(['/var/lib/hypha-serve-exporter']);
    expect(cfg.Cmd).toContain('--storage.path=/var/lib/hypha-serve-exporter');

    const WS = 'ws-user-root';
    const SVC = `${WS}/standin`;
    // Deployed after the first container starts, so that exporter sees it appear: never registered.
    const APP = 'lonely';
    const id = `${process.pid}-${Date.now()}`;
    const volume = `hse-state-test-${id}`;
    const controlVolume = `hse-state-test-control-${id}`;
    const secret = `hse-state-test-token-${id}`;
    const names = [`hse-state-test-1-${id}`, `hse-state-test-2-${id}`, `hse-state-test-control-${id}`];
    let hypha: HyphaHandle | undefined;
    let prometheus: PrometheusServer | undefined;
    let rulesDir = '';
    const providers: StandinProvider[] = [];
    try {
      hypha = await startHypha({});
      providers.push(await startStandinProvider({ serverUrl: hypha.url, token: hypha.rootToken, clientId: 'standin-a', serviceIds: ['standin'] }));
      const tokenFile = tmp.write('state-hypha-token', hypha.rootToken);
      await run(podman, ['secret', 'create', secret, tokenFile]);
      const [port, controlPort] = await freePorts(2);
      // The Ray app is expected to be registered by a client that never comes: incident 1's history
      // (missing since when, never registered) is the registration state the volume must keep.
      const config = tmp.write('state-config.yml', [
        'global: {interval: 1s, timeout: 2s}',
        'ray_clusters:',
        '  - name: local',
        `    dashboard_url: ${ray!.dashboardUrl}`,
        'hypha:',
        '  name: local',
        `  server_url: ${hypha.url}`,
        '  bearer_token_file: /run/secrets/hypha-serve-exporter/hypha-token',
        'hypha_registration:',
        '  clusters:',
        '    - cluster: local',
        '      templates:',
        `        - {service: "{workspace}/nobody:{app}", include: "^${APP}$"}`,
        'watched_services:',
        `  - service: ${SVC}`,
        '    probe: {method: read, args: [probe-artifact]}',
        // The exporter's wait of the stale page, divided like the rules' for: (the ÷10 override below).
        '    page_waits: {uncertain: 12s}',
        '',
      ].join('\n'));
      fs.chmodSync(config, 0o644);
      await run(podman, ['volume', 'create', volume]);
      const runExporter = (name: string, vol: string, p: number) => run(podman, [
        'run', '-d', '--init', '--name', name, '--pull=never', '--network', 'host', '--health-interval=disable',
        '--read-only', '--cap-drop=ALL', '--security-opt', 'no-new-privileges',
        '-v', `${config}:/etc/hypha-serve-exporter/config.yml:ro`,
        '-v', `${vol}:/var/lib/hypha-serve-exporter`,
        '--tmpfs', '/run/secrets',
        '--secret', `${secret},target=hypha-serve-exporter/hypha-token,uid=10001,gid=10001,mode=0400`,
        image, '--config.file=/etc/hypha-serve-exporter/config.yml', `--web.listen-address=127.0.0.1:${p}`,
        '--storage.path=/var/lib/hypha-serve-exporter', '--log.level=debug',
      ]);
      const logsOf = async (name: string) => { const l = await run(podman, ['logs', name]); return l.stdout + l.stderr; };
      const base = `http://127.0.0.1:${port}`;
      const metrics = async (b = base) => (await get(`${b}/metrics`)).body;
      const cachedId = (text: string) => samplesOf(text, 'hypha_serve_service_cached_info', { holder: 'exporter' }).find((s) => s.value === 1)?.labels.client_id;
      const registrationState = (text: string) => ['missing_never_registered', 'missing_history_unknown', 'missing_other', 'registered', 'not_running']
        .find((st) => seriesValue(text, 'hypha_serve_app_registration_state', { app: APP, state: st }) === 1);

      await runExporter(names[0], volume, port);
      await waitFor('first container /-/ready', async () => (await get(`${base}/-/ready`).catch(() => ({ status: 0 }))).status === 200, 120_000, 200);
      await waitFor('the canary on standin-a, the Serve sample of two-step', async () => {
        const t = await metrics();
        return cachedId(t) === 'standin-a' && seriesValue(t, 'hypha_serve_app_status', { app: 'two-step', status: 'RUNNING' }) === 1;
      }, 60_000, 250);
      const [twoStep] = rayAppConfig('two-step.yaml').applications;
      await ray!.deploy({ applications: [twoStep, { ...twoStep, name: APP, route_prefix: `/${APP}` }] });
      await ray!.waitApp(APP, (a) => a.status === 'RUNNING', 240_000);
      await waitFor('the new app missing, never registered', async () => registrationState(await metrics()) === 'missing_never_registered', 60_000, 250);

      const rules = overriddenRuleFiles({ forDivisor: 10, minFor: '5s' });
      rulesDir = rules.dir;
      prometheus = await startPrometheus({
        scrapeTargets: [{ job: 'hypha-serve-exporter', targets: [`127.0.0.1:${port}`], honorLabels: true }],
        ruleFiles: rules.files,
        scrapeInterval: '1s',
        evaluationInterval: '1s',
      });
      await prometheus.waitForTargetsUp(60_000, 'hypha-serve-exporter');
      const firing = async () => (await prometheus!.vector(
        `ALERTS{alertname="HyphaServiceCachedProxyStale",alertstate="firing",service="${SVC}",holder="exporter"}`)).length > 0;

      // Incident 2: the provider comes back under a new client id; the canary keeps the old one.
      await providers.shift()!.disconnect();
      providers.push(await startStandinProvider({ serverUrl: hypha.url, token: hypha.rootToken, clientId: 'standin-b', serviceIds: ['standin'] }));
      const t0 = Date.now();
      await waitFor('HyphaServiceCachedProxyStale firing', firing, 120_000, 500);
      console.log(`container + named volume: incident-2 page firing ${Date.now() - t0} ms after the re-registration (for: 12 s)`);
      const before = await metrics();
      expect(cachedId(before)).toBe('standin-a');
      const staleSince = seriesValue(before, 'hypha_serve_service_cached_stale_since_timestamp_seconds', { service: SVC, holder: 'exporter' });
      const missingSince = seriesValue(before, 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: APP });
      expect(staleSince).toBeDefined();
      expect(missingSince).toBeDefined();

      // An upgrade: the container is stopped and removed, a new one starts on the same named volume.
      const gaps: number[] = [];
      const tStop = Date.now();
      await run(podman, ['stop', '-t', '10', names[0]]);
      expect((await run(podman, ['inspect', '--format', '{{.State.ExitCode}}', names[0]])).stdout.trim()).toBe('0');
      const firstLogs = await logsOf(names[0]);
      await run(podman, ['rm', names[0]]);
      // The fresh named volume took the image directory's owner: uid 10001 wrote the state file there.
      const mountpoint = (await run(podman, ['volume', 'inspect', '--format', '{{.Mountpoint}}', volume])).stdout.trim();
      const stateFile = path.join(mountpoint, 'state.json');
      expect(fs.statSync(mountpoint).uid).toBe(10001);
      expect(fs.statSync(stateFile).uid).toBe(10001);
      const saved = fs.readFileSync(stateFile, 'utf8');
      expect(saved).toContain('standin-a');
      expect(saved).toContain(APP);
      expect(saved).not.toContain(hypha.rootToken);
      expect(firstLogs).not.toContain('cannot write the state file');
      // Down for longer than several scrape intervals (a minute-long upgrade at the shipped timers ÷ 10).
      while (Date.now() - tStop < 8000) {
        if (!(await firing())) gaps.push(Date.now() - tStop);
        await new Promise((r) => setTimeout(r, 500));
      }
      await runExporter(names[1], volume, port);
      await waitFor('second container /-/ready', async () => (await get(`${base}/-/ready`).catch(() => ({ status: 0 }))).status === 200, 120_000, 200);
      console.log(`container + named volume: exporter away ${Date.now() - tStop} ms (stop, rm, run)`);
      await waitFor('the new container scraped', async () => (await prometheus!.vector('up{job="hypha-serve-exporter"} == 1')).length > 0, 60_000, 500);
      const watchUntil = Date.now() + 15_000;
      while (Date.now() < watchUntil) {
        if (!(await firing())) gaps.push(Date.now() - tStop);
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(gaps).toEqual([]);
      const after = await waitFor('the witness and the history from the volume', async () => {
        const t = await metrics();
        return registrationState(t) !== undefined && seriesValue(t, 'hypha_serve_service_cached_stale', { service: SVC, holder: 'exporter' }) !== undefined ? t : undefined;
      }, 30_000, 250);
      expect(cachedId(after)).toBe('standin-a');
      expect(seriesValue(after, 'hypha_serve_service_cached_stale', { service: SVC, holder: 'exporter' })).toBe(1);
      expect(seriesValue(after, 'hypha_serve_service_cached_stale_since_timestamp_seconds', { service: SVC, holder: 'exporter' })).toBe(staleSince);
      expect(registrationState(after)).toBe('missing_never_registered');
      expect(seriesValue(after, 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: APP })).toBe(missingSince);
      expect(await logsOf(names[1])).toContain('continuing from the state saved before the restart');

      // Control: the same image and config on an empty volume forgets both, so the volume is what kept them.
      await run(podman, ['volume', 'create', controlVolume]);
      await runExporter(names[2], controlVolume, controlPort);
      const controlBase = `http://127.0.0.1:${controlPort}`;
      await waitFor('control container /-/ready', async () => (await get(`${controlBase}/-/ready`).catch(() => ({ status: 0 }))).status === 200, 120_000, 200);
      // A fresh container connects to Hypha and Ray from scratch beside two other lanes: allow it what /-/ready gets,
      // and say which source it had not sampled if it still has not.
      const control = await waitFor('the control container sampled both', async () => {
        const t = await metrics(controlBase);
        if (cachedId(t) !== undefined && registrationState(t) !== undefined) return t;
        const up = samplesOf(t, 'hypha_serve_source_up', {}).map((x) => `${x.labels.source}=${x.value}`).join(' ');
        throw new Error(`cached id ${cachedId(t) ?? 'none'}, registration state ${registrationState(t) ?? 'none'}, sources up: ${up || 'none'}`);
      }, 120_000, 250);
      expect(cachedId(control)).toBe('standin-b');
      expect(seriesValue(control, 'hypha_serve_service_cached_stale', { service: SVC, holder: 'exporter' })).toBe(0);
      expect(registrationState(control)).toBe('missing_history_unknown');
      for (const n of names.slice(1)) expect(await logsOf(n)).not.toContain(hypha.rootToken);
    } finally {
      for (const n of names) await tryRun(podman, ['rm', '-f', '-t', '2', n]);
      for (const v of [volume, controlVolume]) await tryRun(podman, ['volume', 'rm', '-f', v]);
      await tryRun(podman, ['secret', 'rm', secret]);
      await prometheus?.stop();
      if (rulesDir) fs.rmSync(rulesDir, { recursive: true, force: true });
      for (const p of providers) await p.disconnect().catch(() => undefined);
      await hypha?.stop();
    }
  });
});
