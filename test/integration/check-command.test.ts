// `hypha-serve-exporter check` (the compiled CLI) against one real Ray Serve cluster and one real
// Hypha server with its artifact manager, per exit code: 0 when every app is registered, 1 for an
// app RUNNING in Ray and never registered and for a stale cached proxy (incident 2, continued from a
// running exporter's --storage.path, which check reads and never writes), 2 for a bad config, an
// unreachable Hypha and an unknown --app; plus --app, --output json and --config.check.
import fs from 'node:fs';
import path from 'node:path';
import type { CheckResultV1 } from '../../src/cli/check';
import { STATE_FILE } from '../../src/snapshot/persisted';
import { bioengineApp, bioengineServiceIds } from '../helpers/bioengine-apps';
import { ensureBuilt, runCli } from '../helpers/cli';
import { exporterWithConfig } from '../helpers/exporter';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { freePort } from '../harness/ports';
import { startTogether, waitFor } from '../harness/proc';
import { RayCluster, startRay } from '../harness/ray';

jest.setTimeout(600_000);

const PREFIX = 'chk-worker';
const WS = 'ws-user-root';
const AM = 'public/artifact-manager';

describe('hypha-serve-exporter check against real Ray Serve + Hypha', () => {
  let ray: RayCluster;
  let hypha: HyphaHandle;
  const tmp = tmpDir('hse-check-');
  let tokenFile: string;
  let configFile: string;
  const timings: string[] = [];

  const config = (hyphaUrl: string) => [
    'global: {interval: 1s, timeout: 3s}',
    'ray_clusters:',
    `  - {name: local, dashboard_url: "${ray.dashboardUrl}"}`,
    'hypha:',
    '  name: local',
    `  server_url: "${hyphaUrl}"`,
    `  bearer_token_file: "${tokenFile}"`,
    'watched_services:',
    `  - {service: ${AM}, interval: 1s}`,
    '',
  ].join('\n');

  /** Runs the CLI, timing it; JSON output parsed when asked for. */
  const check = async (args: string[], label: string) => {
    const t0 = Date.now();
    const r = await runCli(['check', ...args]);
    timings.push(`${label}: exit ${r.code} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return r;
  };
  const json = (stdout: string) => JSON.parse(stdout) as CheckResultV1;
  const registered = async (app: string) => {
    const id = bioengineServiceIds(WS, PREFIX, app).ws.split('/')[1];
    const r = await fetch(`${hypha.url}/${WS}/services/${id}`, { headers: { Authorization: `Bearer ${hypha.rootToken}` } });
    return r.status === 200;
  };
  const app = (name: string, initialReplicas: number | null, minReplicas?: number) =>
    bioengineApp({ name, behaviour: 'upstream', hyphaUrl: hypha.url, tokenFile, initialReplicas, minReplicas, clientIdPrefix: PREFIX, rtc: false });

  beforeAll(async () => {
    ensureBuilt();
    [ray, hypha] = await startTogether([startRay(), startHypha({ enableS3: true, serverId: 'chk-a' })]);
    tokenFile = tmp.write('hypha-token', hypha.rootToken);
    fs.chmodSync(tokenFile, 0o600);
    configFile = tmp.write('config.yml', config(hypha.url));
    // Registered for good: min_replicas 1, so the 0.16.1 gate opens and never closes. The cases
    // that need no app run while its proxy registers.
    await ray.deploy({ applications: [app('chk-ok', 1, 1)] });
  });

  afterAll(async () => {
    process.stdout.write(`check runs:\n  ${timings.join('\n  ')}\n`);
    await ray?.stop();
    await hypha?.stop();
    tmp.cleanup();
  });

  test('--config.check: 0 for a valid file (contacting nothing), 2 with file, line and field for a bad one', async () => {
    const ok = await runCli(['--config.check', `--config.file=${configFile}`]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/valid \(1 Ray cluster\(s\), 1 Hypha server\(s\), 1 watched service\(s\)\)/);
    const bad = tmp.write('bad.yml', config(hypha.url).replace('interval: 1s, timeout', 'interval: 5, timeout'));
    const r = await runCli(['--config.check', `--config.file=${bad}`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/bad\.yml:1:\d+: global\.interval: /);
    // The same bad file makes `check` exit 2 before it samples anything.
    const c = await check([`--config.file=${bad}`], 'bad config');
    expect(c.code).toBe(2);
    expect(c.stderr).toMatch(/bad\.yml:1:\d+: global\.interval/);
  });

  test('exit 2: Hypha unreachable; the source and its error are named, nothing is claimed missing', async () => {
    const cfg = tmp.write('unreachable.yml', config(`http://127.0.0.1:${await freePort()}`));
    const r = await check([`--config.file=${cfg}`, '--timeout=40s'], 'Hypha unreachable');
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/DOWN +hypha\/local +\S/);
    expect(r.stdout).toMatch(/Errors\n +hypha\/local: /);
    expect(r.stdout).not.toMatch(/registered: +NO/);
    expect(r.stdout).not.toContain('HyphaServeAppRunningNotRegistered');
    expect(r.stdout).toMatch(/Result: incomplete/);
  });

  test('exit 0: every app registered, the watched service with its providers and resolved id; text and json', async () => {
    await waitFor('chk-ok registered in Hypha', registered.bind(null, 'chk-ok'), 240_000, 250);
    const text = await check([`--config.file=${configFile}`], 'all registered (text)');
    expect({ code: text.code, stderr: text.stderr }).toEqual({ code: 0, stderr: '' });
    expect(text.stdout).toContain('local/chk-ok');
    expect(text.stdout).toMatch(/Ray status: +RUNNING/);
    expect(text.stdout).toMatch(/registered: +yes/);
    expect(text.stdout).toContain(`${WS}/`);
    expect(text.stdout).toMatch(/Result: no alert condition holds \(exit 0\)/);
    const j = await check([`--config.file=${configFile}`, '--output=json'], 'all registered (json)');
    expect(j.code).toBe(0);
    const r = json(j.stdout);
    expect(r).toMatchObject({ check_version: 1, exit_code: 0, complete: true, errors: [], unknown: [], conditions: [] });
    const ok = r.apps.find((a) => a.app === 'chk-ok');
    expect(ok?.status).toBe('RUNNING');
    expect(ok?.registration).toMatchObject({ hypha: 'local', state: 'registered', expected_service_id: `${WS}/*:chk-ok`, client_id: bioengineServiceIds(WS, PREFIX, 'chk-ok').clientId });
    const am = r.watched_services.find((w) => w.service === AM);
    expect(am?.provider_client_ids.length).toBeGreaterThanOrEqual(1);
    expect(am?.provider_client_ids).toContain(am?.resolved_client_id);
    expect(am?.cached.map((c) => c.stale)).toEqual([false]);
    expect(r.sources.map((s) => `${s.source}/${s.target}:${s.up}`).sort()).toEqual([`hypha/local:true`, `hypha_service/${AM}:true`, 'ray/local:true']);
  });

  test('exit 1: an app RUNNING in Ray and not registered; --app narrows (0 for the registered one, 1 for it); unknown --app is 2', async () => {
    // Deployed at zero replicas: the upstream proxy's gate never opens (incident 1b).
    await ray.deploy({ applications: [app('chk-ok', 1, 1), app('chk-wait', null)] });
    await ray.waitApp('chk-wait', (a) => a.status === 'RUNNING', 180_000);
    expect(await registered('chk-wait')).toBe(false);

    const text = await check([`--config.file=${configFile}`], 'one app missing (text)');
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/local\/chk-wait\n +Ray status: +RUNNING/);
    expect(text.stdout).toMatch(/registered: +NO/);
    // A fresh process did not see the app deployed: it does not claim "never registered".
    expect(text.stdout).toMatch(/cause: +missing_history_unknown: /);
    expect(text.stdout).toMatch(/HyphaServeAppRunningNotRegistered +local\/chk-wait: RUNNING in Ray, expected service/);
    expect(text.stdout).toMatch(/Result: 1 alert condition\(s\) hold \(exit 1\)/);

    expect((await check([`--config.file=${configFile}`, '--app', 'chk-ok'], '--app chk-ok')).code).toBe(0);
    const one = await check([`--config.file=${configFile}`, '--app=chk-wait', '--output', 'json'], '--app chk-wait json');
    expect(one.code).toBe(1);
    const r = json(one.stdout);
    expect(r.apps.map((a) => a.app)).toEqual(['chk-wait']);
    expect(r.watched_services).toEqual([]);
    expect(r.conditions).toEqual([expect.objectContaining({ alert: 'HyphaServeAppRunningNotRegistered', ray_cluster: 'local', app: 'chk-wait', severity: 'critical' })]);
    expect(r.apps[0].registration).toMatchObject({ state: 'missing_history_unknown', expected_service_id: `${WS}/*:chk-wait` });
    expect(r.apps[0].deployments.find((d) => d.name === 'Model')).toMatchObject({ running: 0, scaled_to_zero: true });

    const none = await check([`--config.file=${configFile}`, '--app=no-such-app'], 'unknown --app');
    expect(none.code).toBe(2);
    expect(none.stdout).toContain('app "no-such-app" not found on any configured Ray cluster');
  });

  test('exit 1: a stale cached proxy after Hypha came back under a new server id, continued read-only from the exporter\'s --storage.path', async () => {
    // A running exporter holds its canary; Hypha restarts under another server id (incident 2).
    const storage = path.join(tmp.dir, 'state');
    const { exporter } = exporterWithConfig({ file: configFile }, { logLevel: 'warn', storagePath: storage });
    exporter.start();
    try {
      const before = await waitFor('canary resolved',
        async () => exporter.store.get().services?.get(AM)?.cached.find((c) => c.holder === 'exporter')?.clientId, 60_000, 100);
      await hypha.restart({ serverId: 'chk-b' });
      await waitFor('canary stale in the running exporter', async () => exporter.store.get().services?.get(AM)?.cached[0]?.stale === true, 120_000, 100);
      expect(exporter.store.get().services?.get(AM)?.providers).not.toContain(before);
    } finally {
      await exporter.stop(); // flushes the state file
    }
    const file = path.join(storage, STATE_FILE);
    const saved = fs.readFileSync(file, 'utf8');
    const mtime = fs.statSync(file).mtimeMs;
    expect(Object.keys((JSON.parse(saved) as { witnesses: object }).witnesses)).toEqual([AM]);

    // Without the storage path a fresh process has no witness: its canary resolves a live provider now.
    const fresh = json((await check([`--config.file=${configFile}`, '--output=json'], 'after restart, no storage')).stdout);
    expect(fresh.watched_services.find((w) => w.service === AM)?.cached.map((c) => c.stale)).toEqual([false]);

    const r = await check([`--config.file=${configFile}`, `--storage.path=${storage}`, '--output=json'], 'stale witness from storage');
    expect(r.code).toBe(1);
    const j = json(r.stdout);
    const am = j.watched_services.find((w) => w.service === AM);
    expect(am?.cached[0]).toMatchObject({ holder: 'exporter', stale: true });
    expect(am?.provider_client_ids).not.toContain(am?.cached[0].client_id);
    expect(j.conditions).toContainEqual(expect.objectContaining({ alert: 'HyphaServiceCachedProxyStale', service: AM, holder: 'exporter' }));
    // Read, never written: the running exporter owns the file.
    expect(fs.readFileSync(file, 'utf8')).toBe(saved);
    expect(fs.statSync(file).mtimeMs).toBe(mtime);
    expect(fs.readdirSync(storage)).toEqual([STATE_FILE]);
  });
});
