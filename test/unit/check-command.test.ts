// `hypha-serve-exporter check`: its flags, and the one function that turns a snapshot into alert
// conditions, over recorded Ray Serve 2.60 answers parsed by the exporter's own parser. The command
// against real Ray Serve and Hypha, per exit code: test/integration/check-command.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import { checkResult } from '../../src/cli/check';
import { alertConditions } from '../../src/cli/check-conditions';
import { checkUsage, FlagError, parseCheckFlags, parseFlags, usage } from '../../src/cli/flags';
import { parseServeInstance } from '../../src/sources/ray-serve/parse';
import type { AppRegistration } from '../../src/snapshot/registration';
import type { WatchedServiceSample } from '../../src/snapshot/services';
import { newSourceHealth, RayClusterSample, Snapshot } from '../../src/snapshot/types';
import { hyphaParts } from '../helpers/hypha-snapshot';
import { proxyPages } from '../../src/serve/judgement';
import { decideStalePage, DEFAULT_STALE_PAGE_WAITS } from '../../src/sources/services/state';

const FIXTURES = path.resolve(__dirname, '..', 'fixtures', 'ray', '2.60');

function raySample(file: string, opts: { ready?: boolean; up?: boolean } = {}): RayClusterSample {
  const p = parseServeInstance(JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8')) as unknown);
  const proxies = p.proxies.map((x) => ({ ...x, ready: opts.ready }));
  const state = { apps: p.apps, proxies, appsDropped: 0 };
  return {
    cluster: 'c1',
    health: { ...newSourceHealth('ray', 'c1'), up: opts.up ?? true, lastSuccessSeconds: 1 },
    state,
    appsDroppedTotal: 0,
    malformedTotal: 0,
    // As the Ray source decides them at each sample.
    proxyPages: proxyPages(state),
  };
}

function registration(app: string, state: AppRegistration['state'], extra: Partial<AppRegistration> = {}): Omit<AppRegistration, 'hypha'> {
  return {
    cluster: 'c1', app, workspace: 'ws', service: `ws/w1-0a1b2c3d:${app}`, registered: state === 'registered', state,
    clientIdMismatch: false, clientIdChangesTotal: 0, settled: true,
    ...extra,
  };
}

function snapshot(ray: RayClusterSample, apps: Omit<AppRegistration, 'hypha'>[], hyphaUp = true, services?: WatchedServiceSample[]): Snapshot {
  return {
    version: 1,
    ray: new Map([['c1', ray]]),
    ...hyphaParts({ target: 'main', up: hyphaUp, apps }),
    ...(services ? { services: new Map(services.map((w) => [w.service, w])) } : {}),
  };
}

/**
 * A watched service as its source publishes it: `stale` with the exporter's page decision (stale since 0 s, judged
 * at `now` with the shipped waits), `cachedFailing` the probe decision over the window.
 */
function watched(stale: boolean | undefined, probes: { cached?: 'ok' | 'timeout'; fresh?: 'ok' | 'timeout' } = {}, now = 600, cachedFailing?: boolean): WatchedServiceSample {
  const probe = (via: 'cached' | 'fresh', outcome: 'ok' | 'timeout') => ({ via, method: 'list', outcome, seconds: 0.1, atSeconds: 1 });
  const page = stale ? decideStalePage(0, undefined, 'not_listed', false, now, DEFAULT_STALE_PAGE_WAITS) : undefined;
  return {
    service: 'public/artifact-manager', health: { ...newSourceHealth('hypha_service', 'public/artifact-manager'), up: true, lastSuccessSeconds: 1 },
    providers: ['server-b'], resolvedClientId: 'server-b',
    cached: [{ holder: 'exporter', clientId: stale ? 'server-a' : 'server-b', stale, ...(stale ? { staleSinceSeconds: 0, page } : {}) }],
    clientIdChangesTotal: 1, canaryReresolvesTotal: 0, calls: [],
    lastProbes: { ...(probes.cached ? { cached: probe('cached', probes.cached) } : {}), ...(probes.fresh ? { fresh: probe('fresh', probes.fresh) } : {}) },
    ...(cachedFailing !== undefined ? { probeVerdicts: { cachedFailing, allFailing: false } } : {}),
  };
}

const names = (s: Snapshot) => alertConditions(s).map((c) => `${c.alert} ${c.subject}`);

describe('check flags', () => {
  test('defaults, and every flag', () => {
    expect(parseCheckFlags([])).toEqual({ configFile: 'hypha-serve-exporter.yml', output: 'text', timeoutMs: 30_000, logLevel: 'error', help: false, app: undefined, storagePath: undefined });
    expect(parseCheckFlags(['--config.file=c.yml', '--app', 'm1', '--output=json', '--timeout=5s', '--storage.path=/d', '--log.level=debug'])).toEqual({
      configFile: 'c.yml', app: 'm1', output: 'json', timeoutMs: 5000, storagePath: '/d', logLevel: 'debug', help: false,
    });
  });

  test.each([
    [['--output=yaml'], /--output: "yaml"/],
    [['--timeout=soon'], /--timeout: "soon"/],
    [['--timeout=0s'], /--timeout/],
    [['--app='], /--app needs/],
    [['--web.listen-address=:1'], /unknown flag --web.listen-address/],
    [['m1'], /unexpected argument "m1"/],
  ])('%j is refused', (argv, re) => {
    expect(() => parseCheckFlags(argv)).toThrow(FlagError);
    expect(() => parseCheckFlags(argv)).toThrow(re);
  });

  test('--config.check is a flag of the exporter itself; the help texts name the command and the exit codes', () => {
    expect(parseFlags(['--config.check']).configCheck).toBe(true);
    expect(parseFlags([]).configCheck).toBe(false);
    expect(() => parseCheckFlags(['--config.check'])).toThrow(/unknown flag/);
    expect(usage()).toMatch(/hypha-serve-exporter check \[<flags>\]/);
    expect(usage()).toContain('--config.check');
    expect(checkUsage()).toMatch(/Exit status: 0 no alert condition holds; 1 at least one holds; 2 a configuration or connection error/);
  });
});

describe('alertConditions over recorded Serve answers', () => {
  const running = () => raySample('app-running.json', { ready: true });

  test('registered apps, live cached ids and ready proxies: no condition', () => {
    const s = snapshot(running(), [registration('default', 'registered')], true, [watched(false, { cached: 'ok', fresh: 'ok' })]);
    expect(s.ray.get('c1')?.state?.apps.map((a) => a.status)).toContain('RUNNING');
    expect(names(s)).toEqual([]);
  });

  test('a RUNNING app with a missing registration is a condition, whatever the cause; not_running is not', () => {
    const app = running().state!.apps[0].name;
    for (const state of ['missing_scaled_to_zero', 'missing_never_registered', 'missing_history_unknown', 'missing_after_reconnect', 'missing_other'] as const) {
      expect(names(snapshot(running(), [registration(app, state)]))).toEqual([`HyphaServeAppRunningNotRegistered c1/${app}`]);
    }
    expect(names(snapshot(running(), [registration(app, 'not_running')]))).toEqual([]);
  });

  test('unknown is never a condition: Hypha down, Ray down, or a registration settling after a reconnect', () => {
    const app = running().state!.apps[0].name;
    expect(names(snapshot(running(), [registration(app, 'missing_other')], false))).toEqual([]);
    expect(names(snapshot(raySample('app-running.json', { ready: true, up: false }), [registration(app, 'missing_other')]))).toEqual([]);
    expect(names(snapshot(running(), [registration(app, 'missing_other', { settled: false })]))).toEqual([]);
  });

  test('an app Serve reads as not RUNNING does not make the registration condition', () => {
    const sick = raySample('app-unhealthy.json', { ready: true });
    const app = sick.state!.apps.find((a) => a.status !== 'RUNNING')!;
    expect(names(snapshot(sick, [registration(app.name, 'missing_crashed')]))).toEqual([]);
  });

  test('a stale cached id, and the exporter\'s decision that the cached path fails beside a working fresh one, are conditions; unknown staleness is not', () => {
    const base = running();
    const stale = alertConditions(snapshot(base, [], true, [watched(true, { cached: 'ok', fresh: 'ok' })]));
    expect(stale.map((c) => `${c.alert} ${c.subject}`)).toEqual(['HyphaServiceCachedProxyStale public/artifact-manager (exporter)']);
    expect(stale[0].text).toMatch(/\(cause not_listed\); the page fires since 1970-01-01T00:10:00Z$/);
    // Stale for 10 s: a condition whose page waits (the decision says when it fires).
    const fresh = alertConditions(snapshot(base, [], true, [watched(true, { cached: 'ok', fresh: 'ok' }, 10)]));
    expect(fresh[0].text).toMatch(/the page fires at 1970-01-01T00:02:00Z unless the id is live again first$/);
    expect(names(snapshot(base, [], true, [watched(undefined, { cached: 'ok', fresh: 'ok' })]))).toEqual([]);
    // The probe condition is the exporter's decision over its window, not the last call: one failed call is none.
    expect(names(snapshot(base, [], true, [watched(false, { cached: 'timeout', fresh: 'ok' }, 600, true)]))).toEqual(['HyphaServiceCachedProbeFailing public/artifact-manager']);
    expect(names(snapshot(base, [], true, [watched(false, { cached: 'timeout', fresh: 'ok' }, 600, false)]))).toEqual([]);
    expect(names(snapshot(base, [], true, [watched(false, { cached: 'timeout', fresh: 'ok' })]))).toEqual([]);
  });

  test('no proxy ready: at zero it is the wake condition, with replicas the all-unready one; not probed is unknown', () => {
    const zero = raySample('worker-scaled-to-zero.json', { ready: false });
    expect(zero.state!.apps.some((a) => a.deployments.some((d) => d.scaledToZero))).toBe(true);
    expect(names(snapshot(zero, []))).toContain('HyphaServeNoProxyCanWakeApps c1');
    expect(names(snapshot(raySample('worker-scaled-to-zero.json', { ready: true }), []))).toEqual([]);
    expect(names(snapshot(raySample('worker-scaled-to-zero.json', { ready: undefined }), []))).toEqual([]);
    expect(names(snapshot(raySample('app-running.json', { ready: false }), []))).toContain('HyphaServeAllProxiesUnready c1');
  });

  test('Ray listing no proxy at all is no proxy ready (decided by the Ray source), whatever is probed', () => {
    const z = raySample('worker-scaled-to-zero.json', { ready: undefined });
    const state = { ...z.state!, proxies: [] };
    expect(proxyPages(state)).toEqual({ noProxyCanWakeApps: true, allProxiesUnready: expect.any(Boolean) as boolean, why: 'Ray lists no Serve proxy' });
    expect(names(snapshot({ ...z, state, proxyPages: proxyPages(state) }, []))).toContain('HyphaServeNoProxyCanWakeApps c1');
    // Ray down: the decision is not read, whatever the last one said.
    expect(names(snapshot({ ...z, state, proxyPages: proxyPages(state), health: { ...z.health, up: false } }, []))).toEqual([]);
  });

  test('exit code: 0 clean, 1 a condition, 2 a source that cannot be read or something pending; --app narrows', () => {
    const app = running().state!.apps[0].name;
    const flags = { configFile: 'c.yml' };
    expect(checkResult(snapshot(running(), [registration(app, 'registered')]), flags, [], true).exit_code).toBe(0);
    const missing = snapshot(running(), [registration(app, 'missing_other')]);
    const r = checkResult(missing, flags, [], true);
    expect(r.exit_code).toBe(1);
    expect(r.conditions[0]).toMatchObject({ alert: 'HyphaServeAppRunningNotRegistered', ray_cluster: 'c1', app });
    expect(checkResult(missing, flags, ['hypha/main: first sample not finished'], true).exit_code).toBe(2);
    expect(checkResult(missing, { ...flags, app: 'no-such-app' }, [], true)).toMatchObject({ exit_code: 2, errors: ['app "no-such-app" not found on any configured Ray cluster'] });
    const down = snapshot(running(), [registration(app, 'registered')]);
    const h = down.hypha!.get('main')!;
    (down.hypha as Map<string, typeof h>).set('main', { ...h, health: { ...h.health, up: false, lastError: 'connect: refused', lastErrorSeconds: 2 } });
    expect(checkResult(down, flags, [], true)).toMatchObject({ exit_code: 2, errors: ['hypha/main: connect: refused'] });
  });
});
