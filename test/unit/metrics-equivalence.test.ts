// The cached, per-unit renderer against prom-client's own exposition writer, over recorded Ray answers and a
// registration snapshot. The oracle is derived from the one family table (FAMILIES, units(), forEachSample()):
// every family's samples are computed from the snapshot from scratch and written by prom-client's Registry,
// so a new family needs nothing here. What this proves: the served text of every family equals, byte for
// byte, what prom-client writes for the same samples (headers, escaping, number format, absent labels), on a
// fresh renderer and after every update of its per-unit caches (no stale, lost or doubled line). What it
// does not: which samples a family yields from a snapshot; that is each family's own unit test.
import fs from 'node:fs';
import path from 'node:path';
import { type Metric, Registry } from 'prom-client';
import { DYNAMIC_SCOPES, FAMILIES, forEachSample, units } from '../../src/metrics/families';
import { MetricsRenderer } from '../../src/metrics/renderer';
import { REGISTRATION_STATES } from '../../src/snapshot/registration';
import type { AppRegistration } from '../../src/snapshot/registration';
import { SnapshotStore } from '../../src/snapshot/store';
import { newSourceHealth, RayClusterSample, Snapshot } from '../../src/snapshot/types';
import { parseServeInstance } from '../../src/sources/ray-serve/parse';
import { hyphaParts, putSnapshot } from '../helpers/hypha-snapshot';
import { parseExposition } from '../helpers/exposition';
import { scrapeText } from '../helpers/exporter';

// ---------------------------------------------------------------- the oracle: the table, written by prom-client
interface OracleValue {
  metricName: string;
  labels: Record<string, string>;
  value: number;
}

/** prom-client's text for every table family over one snapshot: its Registry writes any metric whose get() yields values. */
async function promClientRender(s: Snapshot): Promise<string> {
  const r = new Registry();
  const now = Date.now() / 1000;
  for (const f of FAMILIES) {
    const values: OracleValue[] = [];
    for (const u of units(s, f.scope, now)) {
      forEachSample(f, u.arg, (metricName, names, vals, value) => {
        const labels: Record<string, string> = {};
        names.forEach((n, i) => {
          const v = vals[i];
          if (v !== undefined) labels[n] = v;
        });
        values.push({ metricName, labels, value });
      });
    }
    const metric = { name: f.name, help: f.help, type: f.type, aggregator: 'sum', get: () => Promise.resolve({ name: f.name, help: f.help, type: f.type, values, aggregator: 'sum' }) };
    r.registerMetric(metric as unknown as Metric);
  }
  return r.metrics();
}

// The exporter's own process families and sample ages are the clock's (two renders differ): left out of the
// comparison, checked on their own below. The standard process_* and nodejs_* families are not in the table.
const CLOCK = /^hypha_serve_(exporter_(start_time|resident_memory|heap_used|cpu)|source_sample_age_seconds)/;
const COMPARED = FAMILIES.filter((f) => !CLOCK.test(f.name)).map((f) => f.name);

/** Each family's lines (its HELP and TYPE headers, then its samples) by family name; blank lines dropped. */
function blocks(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let cur: string[] | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const help = /^# HELP (\S+) /.exec(line);
    if (help) {
      if (out.has(help[1])) throw new Error(`family written twice: ${help[1]}`);
      cur = [];
      out.set(help[1], cur);
    }
    if (!cur) throw new Error(`a line before any family: ${line}`);
    cur.push(line);
  }
  return out;
}

/** The compared families' blocks; `ordered` false sorts each block's samples (a cache keeps units in arrival order). */
function compared(text: string, ordered = true): Record<string, string[]> {
  const b = blocks(text);
  return Object.fromEntries(COMPARED.map((name) => {
    const lines = b.get(name) ?? [];
    return [name, ordered ? lines : [...lines.slice(0, 2), ...lines.slice(2).sort()]];
  }));
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

const seriesOf = (c: Record<string, string[]>) => Object.values(c).reduce((n, lines) => n + lines.length - 2, 0);

describe('table renderer ≡ prom-client over the same family table', () => {
  it('compares every table family but the clock\'s, and the oracle writes all of them', async () => {
    expect(COMPARED.length).toBeGreaterThan(30);
    expect(COMPARED.some((n) => DYNAMIC_SCOPES.includes(FAMILIES.find((f) => f.name === n)!.scope))).toBe(true);
    const oracle = blocks(await promClientRender(storeWith(registrationSnapshot(true)).get()));
    expect([...oracle.keys()]).toEqual(FAMILIES.map((f) => f.name));
  });

  for (const version of versions) {
    const files = fs.readdirSync(path.join(root, version)).filter((f) => f.endsWith('.json') && f !== 'index.json' && (JSON.parse(fs.readFileSync(path.join(root, version, f), 'utf8')) as object) !== null && 'applications' in (JSON.parse(fs.readFileSync(path.join(root, version, f), 'utf8')) as object));
    it(`recorded Ray ${version} answers (${files.length} files): a fresh renderer byte for byte, one renderer fed them in turn line for line`, async () => {
      expect(files.length).toBeGreaterThan(5);
      const running = storeWith({ ray: new Map() });
      const updated = new MetricsRenderer(running);
      for (const file of files) {
        const store = storeWith({ ray: new Map([['rec', rayFixture(version, file)]]) });
        const oracle = await promClientRender(store.get());
        const fresh = compared(await scrapeText(new MetricsRenderer(store)));
        expect(fresh).toEqual(compared(oracle));
        expect(seriesOf(fresh)).toBeGreaterThan(10);
        running.setRayCluster(rayFixture(version, file));
        expect(compared(await scrapeText(updated), false)).toEqual(compared(oracle, false));
      }
      expect(updated.stats.updates).toBe(files.length);
    });
  }

  it.each([true, false])('synthetic registration snapshot (hypha up: %s)', async (hyphaUp) => {
    const store = storeWith(registrationSnapshot(hyphaUp));
    const now = compared(await scrapeText(new MetricsRenderer(store)));
    expect(now).toEqual(compared(await promClientRender(store.get())));
    // The comparison sees registration series at all (not two empty sets), escaped label values included.
    const regs = now.hypha_serve_app_registration_state.slice(2);
    expect(regs.length).toBe(hyphaUp ? 4 * REGISTRATION_STATES.length : 0);
    if (hyphaUp) expect(regs.some((l) => l.includes('app="reg\\"d\\\\x\\ny"'))).toBe(true);
  });

  it('a registration snapshot going down and up again on one renderer', async () => {
    const store = storeWith(registrationSnapshot(true));
    const renderer = new MetricsRenderer(store);
    for (const up of [false, true, false]) {
      putSnapshot(store, { ...registrationSnapshot(up), version: 0 });
      expect(compared(await scrapeText(renderer), false)).toEqual(compared(await promClientRender(store.get()), false));
    }
  });

  it('the comparison can fail: a changed value the renderer did not see is a difference', async () => {
    const store = storeWith(registrationSnapshot(true));
    const renderer = new MetricsRenderer(store);
    const before = compared(await scrapeText(renderer));
    store.setHyphaServer({ ...store.get().hypha!.get('main')!, reconnectsTotal: 5 });
    const oracle = compared(await promClientRender(store.get()));
    expect(before).not.toEqual(oracle);
    expect(before.hypha_serve_hypha_reconnects_total).toContain('hypha_serve_hypha_reconnects_total{hypha="main"} 4');
    expect(oracle.hypha_serve_hypha_reconnects_total).toContain('hypha_serve_hypha_reconnects_total{hypha="main"} 5');
    expect(compared(await scrapeText(renderer))).toEqual(oracle);
  });

  it('clock-dependent series are present and current on every scrape', async () => {
    const store = storeWith(registrationSnapshot(true));
    const renderer = new MetricsRenderer(store);
    const age = (t: string) => parseExposition(t).find((x) => x.name === 'hypha_serve_source_sample_age_seconds' && x.labels.ray_cluster === 'rec')?.value ?? NaN;
    const a1 = age(await scrapeText(renderer));
    await new Promise((r) => setTimeout(r, 1100));
    const a2 = age(await scrapeText(renderer));
    expect(a2 - a1).toBeGreaterThanOrEqual(1);
    expect(a2 - a1).toBeLessThan(3);
    for (const f of FAMILIES.filter((x) => CLOCK.test(x.name))) expect(blocks(await scrapeText(renderer)).has(f.name)).toBe(true);
  });
});
