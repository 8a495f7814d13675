// The table-driven, cached renderer must carry exactly the series of the prom-client renderer it
// replaced by the table: same families, labels and values, order aside. The replaced sections are
// kept below, verbatim in behaviour, as the oracle.
import fs from 'node:fs';
import path from 'node:path';
import { Counter, Gauge, Registry } from 'prom-client';
import { MetricsRenderer } from '../../src/metrics/renderer';
import { isMissing, REGISTRATION_STATES } from '../../src/snapshot/registration';
import type { HyphaServerSample } from '../../src/snapshot/hypha';
import type { AppRegistration } from '../../src/snapshot/registration';
import { SnapshotStore } from '../../src/snapshot/store';
import {
  APP_STATUSES, DEPLOYMENT_STATUSES, PROXY_STATUSES, SAMPLE_ERROR_REASONS, newSourceHealth, RayClusterSample, Snapshot, sourceHealths,
} from '../../src/snapshot/types';
import { parseServeInstance } from '../../src/sources/ray-serve/parse';
import { parseExposition, seriesSet } from './metrics-parse';
import { hyphaParts, putSnapshot } from '../helpers/hypha-snapshot';
import { scrapeText } from '../helpers/exporter';

// ---------------------------------------------------------------- the replaced renderer (oracle)
function g(r: Registry, name: string, labelNames: readonly string[]): Gauge<string> {
  return new Gauge({ name, help: name, labelNames: [...labelNames], registers: [r] });
}
function c(r: Registry, name: string, labelNames: readonly string[]): Counter<string> {
  return new Counter({ name, help: name, labelNames: [...labelNames], registers: [r] });
}
function stateSet(m: Gauge<string>, labels: Record<string, string>, key: string, known: readonly string[], value: string): void {
  for (const s of known) m.set({ ...labels, [key]: s }, s === value ? 1 : 0);
  if (!known.includes(value)) m.set({ ...labels, [key]: value }, 1);
}

async function legacyRender(s: Snapshot): Promise<string> {
  const r = new Registry();
  const SRC = ['source', 'target'];
  const up = g(r, 'hypha_serve_source_up', SRC);
  const last = g(r, 'hypha_serve_source_last_success_timestamp_seconds', SRC);
  const dur = g(r, 'hypha_serve_source_sample_duration_seconds', SRC);
  const interval = g(r, 'hypha_serve_source_interval_seconds', SRC);
  const errors = c(r, 'hypha_serve_source_errors_total', [...SRC, 'reason']);
  for (const h of sourceHealths(s)) {
    const l = { source: h.source, target: h.target };
    up.set(l, h.up ? 1 : 0);
    if (h.lastSuccessSeconds !== undefined) last.set(l, h.lastSuccessSeconds);
    if (h.lastDurationSeconds !== undefined) dur.set(l, h.lastDurationSeconds);
    if (h.intervalSeconds !== undefined) interval.set(l, h.intervalSeconds);
    for (const reason of SAMPLE_ERROR_REASONS) errors.inc({ ...l, reason }, h.errors[reason]);
  }
  const APP = ['ray_cluster', 'app'];
  const DEP = [...APP, 'deployment'];
  const PROXY = ['ray_cluster', 'node_id', 'node_ip'];
  const appStatus = g(r, 'hypha_serve_app_status', [...APP, 'status']);
  const appInfo = g(r, 'hypha_serve_app_info', [...APP, 'route_prefix', 'source']);
  const appDeployed = g(r, 'hypha_serve_app_deployed_timestamp_seconds', APP);
  const appMessage = g(r, 'hypha_serve_app_message_present', APP);
  const appBioengine = g(r, 'hypha_serve_app_bioengine_proxy', APP);
  const depStatus = g(r, 'hypha_serve_deployment_status', [...DEP, 'status']);
  const depReplicas = g(r, 'hypha_serve_deployment_replicas', [...DEP, 'state']);
  const depTarget = g(r, 'hypha_serve_deployment_target_replicas', DEP);
  const depMin = g(r, 'hypha_serve_deployment_min_replicas', DEP);
  const depMax = g(r, 'hypha_serve_deployment_max_replicas', DEP);
  const depZero = g(r, 'hypha_serve_deployment_scaled_to_zero', DEP);
  const depAuto = g(r, 'hypha_serve_deployment_autoscaling', DEP);
  const proxyReady = g(r, 'hypha_serve_proxy_ready', PROXY);
  const proxyHead = g(r, 'hypha_serve_proxy_head', PROXY);
  const proxyStatus = g(r, 'hypha_serve_proxy_status', [...PROXY, 'status']);
  const dropped = c(r, 'hypha_serve_cluster_apps_dropped_total', ['ray_cluster']);
  const malformed = c(r, 'hypha_serve_cluster_malformed_entries_total', ['ray_cluster']);
  for (const sample of s.ray.values()) {
    const ray_cluster = sample.cluster;
    dropped.inc({ ray_cluster }, sample.appsDroppedTotal);
    malformed.inc({ ray_cluster }, sample.malformedTotal);
    if (!sample.state) continue;
    for (const app of sample.state.apps) {
      const a = { ray_cluster, app: app.name };
      stateSet(appStatus, a, 'status', APP_STATUSES, app.status);
      appInfo.set({ ...a, route_prefix: app.routePrefix ?? '', source: app.source ?? '' }, 1);
      if (app.lastDeployedSeconds !== undefined) appDeployed.set(a, app.lastDeployedSeconds);
      appMessage.set(a, app.messagePresent ? 1 : 0);
      appBioengine.set(a, app.deployments.some((d) => d.name === 'ProxyDeployment') ? 1 : 0);
      for (const d of app.deployments) {
        const dl = { ...a, deployment: d.name };
        stateSet(depStatus, dl, 'status', DEPLOYMENT_STATUSES, d.status);
        for (const [state, n] of Object.entries(d.replicas)) depReplicas.set({ ...dl, state }, n);
        if (d.targetReplicas !== undefined) depTarget.set(dl, d.targetReplicas);
        if (d.minReplicas !== undefined) depMin.set(dl, d.minReplicas);
        if (d.maxReplicas !== undefined) depMax.set(dl, d.maxReplicas);
        depZero.set(dl, d.scaledToZero ? 1 : 0);
        depAuto.set(dl, d.autoscaling ? 1 : 0);
      }
    }
    for (const p of sample.state.proxies) {
      const pl = { ray_cluster, node_id: p.nodeId, node_ip: p.nodeIp };
      if (p.ready !== undefined) proxyReady.set(pl, p.ready ? 1 : 0);
      proxyHead.set(pl, p.head ? 1 : 0);
      stateSet(proxyStatus, pl, 'status', PROXY_STATUSES, p.status);
    }
  }
  const REG = ['ray_cluster', 'app', 'hypha'];
  const reconnects = c(r, 'hypha_serve_hypha_reconnects_total', ['target']);
  const generation = g(r, 'hypha_serve_hypha_connection_generation', ['target']);
  const hyphaMalformed = c(r, 'hypha_serve_hypha_malformed_entries_total', ['target']);
  const serverInfo = g(r, 'hypha_serve_hypha_server_info', ['target', 'server_id']);
  const serverIdChanged = g(r, 'hypha_serve_hypha_server_id_changed', ['target']);
  const stuck = g(r, 'hypha_serve_app_registration_stuck', REG);
  const registered = g(r, 'hypha_serve_app_registered', REG);
  const expected = g(r, 'hypha_serve_app_expected_service_info', [...REG, 'workspace', 'service']);
  const regState = g(r, 'hypha_serve_app_registration_state', [...REG, 'state']);
  const since = g(r, 'hypha_serve_app_unregistered_since_timestamp_seconds', REG);
  const mismatch = g(r, 'hypha_serve_app_registration_client_id_mismatch', REG);
  const changes = c(r, 'hypha_serve_app_registration_client_id_changes_total', REG);
  const workerUp = g(r, 'hypha_serve_worker_up', ['hypha', 'worker']);
  const workerStatus = g(r, 'hypha_serve_worker_app_status', ['hypha', 'worker', 'ray_cluster', 'app', 'status']);
  const workerReg = g(r, 'hypha_serve_worker_app_service_registered', ['hypha', 'worker', 'ray_cluster', 'app']);
  const servers: ReadonlyMap<string, HyphaServerSample> = s.hypha ?? new Map();
  for (const h of servers.values()) {
    reconnects.inc({ target: h.target }, h.reconnectsTotal);
    if (h.generation > 0) generation.set({ target: h.target }, h.generation);
    hyphaMalformed.inc({ target: h.target }, h.malformedTotal);
    if (h.health.up && h.serverId !== undefined) serverInfo.set({ target: h.target, server_id: h.serverId }, 1);
    if (h.health.up && h.serverIdChanged !== undefined) serverIdChanged.set({ target: h.target }, h.serverIdChanged ? 1 : 0);
  }
  for (const a of s.registration?.apps ?? []) {
    const hypha = a.hypha;
    const l = { ray_cluster: a.cluster, app: a.app, hypha };
    changes.inc(l, a.clientIdChangesTotal);
    expected.set({ ...l, workspace: a.workspace, service: a.service }, 1);
    const rayUp = s.ray.get(a.cluster)?.health.up === true;
    if (servers.get(hypha)?.health.up !== true || !rayUp || !a.settled) continue;
    registered.set(l, a.registered ? 1 : 0);
    stateSet(regState, l, 'state', REGISTRATION_STATES, a.state);
    mismatch.set(l, a.clientIdMismatch ? 1 : 0);
    stuck.set(l, a.stuck === true ? 1 : 0);
    if (isMissing(a.state) && a.unregisteredSinceSeconds !== undefined) since.set(l, a.unregisteredSinceSeconds);
  }
  for (const w of s.registration?.workers ?? []) {
    const hypha = w.hypha;
    if (servers.get(hypha)?.health.up !== true) continue;
    workerUp.set({ hypha, worker: w.worker }, w.up ? 1 : 0);
    if (!w.up) continue;
    for (const app of w.apps) {
      const wl = { hypha, worker: w.worker, ray_cluster: w.rayCluster ?? '', app: app.app };
      stateSet(workerStatus, wl, 'status', APP_STATUSES, app.status);
      if (app.serviceRegistered !== undefined) workerReg.set(wl, app.serviceRegistered ? 1 : 0);
    }
  }
  return r.metrics();
}

// The exporter's process series and sample ages are the clock's, not the snapshot's (and the oracle
// never had them): left out of the comparison, checked on their own below. The standard process_*
// and nodejs_* families (prom-client's default collectors) are the process's too.
const CLOCK = /^(hypha_serve_(exporter_|source_sample_age_seconds)|process_|nodejs_)/;

function comparable(text: string): Set<string> {
  return seriesSet(parseExposition(text).filter((x) => !CLOCK.test(x.name)));
}

function storeWith(s: Omit<Snapshot, 'version'>): SnapshotStore {
  const store = new SnapshotStore();
  putSnapshot(store, { ...s, version: 0 });
  return store;
}

// ---------------------------------------------------------------- fixtures
const root = path.resolve(__dirname, '..', 'fixtures', 'ray');
const versions = fs.readdirSync(root).filter((d) => fs.statSync(path.join(root, d)).isDirectory());
function rayFixture(version: string, file: string, cluster = 'rec'): RayClusterSample {
  const p = parseServeInstance(JSON.parse(fs.readFileSync(path.join(root, version, file), 'utf8')) as unknown);
  const health = { ...newSourceHealth('ray', cluster, 15), up: true, lastSuccessSeconds: 1790000000, lastDurationSeconds: 0.02 };
  return { cluster, health, state: { apps: p.apps, proxies: p.proxies.map((x, i) => ({ ...x, ready: i % 2 === 0 ? true : undefined })), appsDropped: 0 }, appsDroppedTotal: 3, malformedTotal: p.malformed.length };
}

function reg(over: Partial<AppRegistration>): AppRegistration {
  return {
    cluster: 'rec', app: 'two-step', hypha: 'main', workspace: 'bio', service: 'bio/w-a-1234abcd:two-step', registered: false, state: 'missing_scaled_to_zero',
    unregisteredSinceSeconds: 1000, clientIdMismatch: false, clientIdChangesTotal: 2, settled: true,
    ...over,
  };
}

function registrationSnapshot(hyphaUp: boolean): Omit<Snapshot, 'version'> {
  const down = { ...rayFixture('2.60', 'app-running.json', 'down'), health: { ...newSourceHealth('ray', 'down'), up: false }, state: undefined };
  const hypha = hyphaParts({
    target: 'main', health: { ...newSourceHealth('hypha', 'main', 30), up: hyphaUp, lastSuccessSeconds: 1790000001 }, reconnectsTotal: 4, generation: 5,
    apps: [
      reg({}),
      reg({ app: 'reg"d\\x\ny', state: 'registered', registered: true, unregisteredSinceSeconds: undefined, service: 'bio/*:reg' }),
      reg({ app: 'crashed', state: 'missing_crashed', clientIdMismatch: true }),
      reg({ app: 'settling', settled: false }),
      reg({ cluster: 'down', app: 'on-a-down-cluster' }),
      reg({ app: 'not-running', state: 'not_running', unregisteredSinceSeconds: undefined }),
    ],
    workers: [
      { worker: 'bio/w-a:bioengine-worker', workspace: 'bio', clientId: 'w-a', up: true, rayCluster: 'rec', apps: [{ app: 'two-step', status: 'RUNNING', serviceRegistered: false }, { app: 'odd', status: 'SOMETHING_NEW' }] },
      { worker: 'bio/w-z:bioengine-worker', workspace: 'bio', clientId: 'w-z', up: true, apps: [{ app: 'x', status: 'DEPLOYING' }] },
      { worker: 'bio/w-down:bioengine-worker', workspace: 'bio', clientId: 'w-down', up: false, apps: [{ app: 'x', status: 'RUNNING' }] },
    ],
  });
  return { ray: new Map([['rec', rayFixture('2.60', 'app-running.json')], ['down', down]]), ...hypha };
}

describe('table renderer ≡ replaced prom-client renderer', () => {
  for (const version of versions) {
    const files = fs.readdirSync(path.join(root, version)).filter((f) => f.endsWith('.json') && f !== 'index.json' && (JSON.parse(fs.readFileSync(path.join(root, version, f), 'utf8')) as object) !== null && 'applications' in (JSON.parse(fs.readFileSync(path.join(root, version, f), 'utf8')) as object));
    it(`recorded Ray ${version} answers (${files.length} files)`, async () => {
      expect(files.length).toBeGreaterThan(5);
      for (const file of files) {
        const s = { ray: new Map([['rec', rayFixture(version, file)]]) };
        const store = storeWith(s);
        const now = comparable(await scrapeText(new MetricsRenderer(store)));
        const old = comparable(await legacyRender(store.get()));
        expect([...now].sort()).toEqual([...old].sort());
        expect(now.size).toBeGreaterThan(10);
      }
    });
  }

  it.each([true, false])('synthetic registration snapshot (hypha up: %s)', async (hyphaUp) => {
    const store = storeWith(registrationSnapshot(hyphaUp));
    const renderer = new MetricsRenderer(store);
    const now = comparable(await scrapeText(renderer));
    const old = comparable(await legacyRender(store.get()));
    expect([...now].sort()).toEqual([...old].sort());
    // The comparison sees registration series at all (not two empty sets).
    const regs = [...now].filter((x) => x.startsWith('hypha_serve_app_registration_state'));
    expect(regs.length).toBe(hyphaUp ? 4 * REGISTRATION_STATES.length : 0);
  });

  it('the oracle comparison can fail: a changed value is seen', async () => {
    const store = storeWith(registrationSnapshot(true));
    const renderer = new MetricsRenderer(store);
    const old = comparable(await legacyRender(store.get()));
    store.setHyphaServer({ ...store.get().hypha!.get('main')!, reconnectsTotal: 5 });
    const now = comparable(await scrapeText(renderer));
    expect(now).not.toEqual(old);
    expect([...now].filter((x) => !old.has(x))).toEqual(['hypha_serve_hypha_reconnects_total{target="main"} 5']);
  });

  it('clock-dependent series are present and current on every scrape', async () => {
    const store = storeWith(registrationSnapshot(true));
    const renderer = new MetricsRenderer(store);
    const age = (t: string) => parseExposition(t).find((x) => x.name === 'hypha_serve_source_sample_age_seconds' && x.labels.target === 'rec')?.value ?? NaN;
    const a1 = age(await scrapeText(renderer));
    await new Promise((r) => setTimeout(r, 1100));
    const a2 = age(await scrapeText(renderer));
    expect(a2 - a1).toBeGreaterThanOrEqual(1);
    expect(a2 - a1).toBeLessThan(3);
  });
});
