// Pre-rendered, cached /metrics: escaping of hostile names (promtool and a strict
// OpenMetrics parser), per-unit re-rendering, and the incremental result equal to a fresh render.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { FAMILIES, scopeReads } from '../../src/metrics/families';
import { MetricsRenderer } from '../../src/metrics/renderer';
import type { HyphaServerSample } from '../../src/snapshot/hypha';
import { escapeLabelValue, sampleLine } from '../../src/metrics/text';
import { SnapshotStore } from '../../src/snapshot/store';
import { newSourceHealth, RayClusterSample, ServeApp, Snapshot } from '../../src/snapshot/types';
import { hyphaParts, putSnapshot } from '../helpers/hypha-snapshot';
import { tmpDir } from '../helpers/tmp';
import { parseExposition, seriesSet } from '../helpers/exposition';
import { scrapeText } from '../helpers/exporter';

const HOSTILE = [
  'quote"in"name', 'back\\slash\\', 'new\nline', 'trailing\\', '\\"both\\"', 'ünïcødé-日本語-🚀', 'rtl-\u05d0\u05d1', 'combining-e\u0301',
  'braces}{,=', 'tab\there', 'sp ace', '#not-a-comment', '',
];

function app(name: string, status = 'RUNNING', replicas = 1): ServeApp {
  return {
    name, status, messagePresent: false, message: '', routePrefix: `/${name}`, source: 'declarative', lastDeployedSeconds: 1790000000,
    deployments: [
      { name: `Dep "${name}"`, status: 'HEALTHY', messagePresent: false, replicas: { STARTING: 0, UPDATING: 0, RECOVERING: 0, RUNNING: replicas, STOPPING: 0, PENDING_MIGRATION: 0 }, targetReplicas: replicas, minReplicas: 0, maxReplicas: 4, autoscaling: true, scaledToZero: false },
      { name: 'Fixed', status: 'HEALTHY', messagePresent: false, replicas: { STARTING: 0, UPDATING: 0, RECOVERING: 0, RUNNING: 2, STOPPING: 0, PENDING_MIGRATION: 0 }, targetReplicas: 2, minReplicas: 2, maxReplicas: 2, autoscaling: false, scaledToZero: false },
    ],
  };
}

function cluster(name: string, apps: ServeApp[]): RayClusterSample {
  const health = { ...newSourceHealth('ray', name, 15), up: true, lastSuccessSeconds: Date.now() / 1000, lastDurationSeconds: 0.01 };
  return { cluster: name, health, state: { apps, proxies: [{ nodeId: 'n"1', nodeIp: '10.0.0.1', status: 'HEALTHY', head: true, ready: true }], appsDropped: 0 }, appsDroppedTotal: 0, malformedTotal: 0 };
}

function hostileSnapshot(): Omit<Snapshot, 'version'> {
  const c = 'clu"ster\\\n日本';
  const hypha = hyphaParts({
    target: 'hy"pha', health: { ...newSourceHealth('hypha', 'hy"pha', 30), up: true, lastSuccessSeconds: Date.now() / 1000 }, reconnectsTotal: 1, generation: 2,
    apps: HOSTILE.map((n) => ({
      cluster: c, app: n, hypha: 'hy"pha', workspace: 'w"s', service: `w"s/*:${n}`, registered: false, state: 'missing_never_registered' as const, unregisteredSinceSeconds: 1000,
      clientIdMismatch: false, clientIdChangesTotal: 0, settled: true,
    })),
    workers: [{ worker: 'w"s/c\\1:bioengine-worker', workspace: 'w"s', clientId: 'c\\1', up: true, rayCluster: c, apps: HOSTILE.map((n) => ({ app: n, status: 'RUNNING', serviceRegistered: true })) }],
  });
  return { ray: new Map([[c, cluster(c, HOSTILE.map((n) => app(n)))]]), ...hypha };
}

function storeWith(s: Omit<Snapshot, 'version'>): SnapshotStore {
  const store = new SnapshotStore();
  putSnapshot(store, { ...s, version: 0 });
  return store;
}

const t = tmpDir();
afterAll(() => t.cleanup());

describe('escaping', () => {
  it('label values escape backslash, quote and line feed only', () => {
    expect(escapeLabelValue('a"b\\c\nd\te🚀')).toBe('a\\"b\\\\c\\nd\te🚀');
    expect(sampleLine('m', ['a', 'b', 'c'], ['x', undefined, ''], 1.5)).toBe('m{a="x",c=""} 1.5\n');
    expect(sampleLine('m', [], [], NaN)).toBe('m NaN\n');
    expect(sampleLine('m', [], [], -Infinity)).toBe('m -Inf\n');
  });

  it('hostile names survive a round trip and pass promtool check metrics', async () => {
    const store = storeWith(hostileSnapshot());
    const text = await scrapeText(new MetricsRenderer(store));
    const samples = parseExposition(text);
    const apps = new Set(samples.filter((s) => s.name === 'hypha_serve_app_status').map((s) => s.labels.app));
    expect([...apps].sort()).toEqual([...HOSTILE].sort());
    const regs = new Set(samples.filter((s) => s.name === 'hypha_serve_worker_app_service_registered').map((s) => s.labels.app));
    expect(regs.size).toBe(HOSTILE.length);
    expect(samples.find((s) => s.name === 'hypha_serve_proxy_head')?.labels).toEqual({ ray_cluster: 'clu"ster\\\n日本', node_id: 'n"1', node_ip: '10.0.0.1' });
    const f = t.write('hostile.prom', text);
    expect(execFileSync('sh', ['-c', `promtool check metrics < '${f}' 2>&1; echo rc=$?`]).toString().trim()).toBe('rc=0');
  });

  it('a wrong escape is caught by promtool (the check can fail)', () => {
    const f = t.write('broken.prom', '# HELP m x\n# TYPE m gauge\nm{a="new\nline"} 1\n');
    expect(execFileSync('sh', ['-c', `promtool check metrics < '${f}' 2>&1; echo rc=$?`]).toString().trim()).not.toMatch(/^rc=0$/);
  });

  const py = path.resolve(__dirname, '..', '..', '.venv', 'ray', 'bin', 'python');
  const omCheck = (file: string) => execFileSync(py, ['-c', [
    'import sys',
    'from prometheus_client.openmetrics.parser import text_string_to_metric_families as p',
    'fams = list(p(open(sys.argv[1], encoding="utf-8").read()))',
    'print(sum(len(f.samples) for f in fams))',
  ].join('\n'), file], { stdio: 'pipe' }).toString().trim();

  it('the OpenMetrics body parses with a strict OpenMetrics parser, same samples as the text format', async () => {
    expect(fs.existsSync(py)).toBe(true);
    const store = storeWith(hostileSnapshot());
    const r = new MetricsRenderer(store);
    const om = await scrapeText(r, 'openmetrics');
    expect(om.endsWith('# EOF\n')).toBe(true);
    expect(om).toMatch(/^# TYPE hypha_serve_source_errors counter$/m);
    expect(om).toMatch(/^hypha_serve_source_errors_total\{/m);
    const text = await scrapeText(r);
    const n = parseExposition(text).length;
    expect(Number(omCheck(t.write('om.txt', om)))).toBe(n);
    // The parser is strict: a missing # EOF is rejected.
    expect(() => omCheck(t.write('om-bad.txt', om.replace('# EOF\n', '')))).toThrow();
  });
});

describe('pre-rendered lines per unit', () => {
  const many = (n: number, bump?: number) => Array.from({ length: n }, (_, i) => app(`a${i}`, 'RUNNING', i === bump ? 3 : 1));

  it('a steady scrape renders nothing; a change to one app re-renders that app (and its deployment) only', async () => {
    const store = storeWith({ ray: new Map([['c', cluster('c', many(50))]]) });
    const r = new MetricsRenderer(store);
    await scrapeText(r);
    const first = r.stats.unitsRendered;
    expect(first).toBe(1 + 50 + 100 + 1); // cluster + apps + deployments + proxy
    await scrapeText(r);
    expect(r.stats.unitsRendered).toBe(first);
    expect(r.stats.updates).toBe(1);
    // A new sample: new objects everywhere, one app's first deployment changed.
    store.setRayCluster(cluster('c', many(50, 7)));
    const text = await scrapeText(r);
    // Only the changed deployment: the cluster unit is compared on its counters, not on its health (new lastSuccessSeconds).
    expect(r.stats.unitsRendered - first).toBe(1);
    expect(seriesSet(parseExposition(text)).has('hypha_serve_deployment_replicas{app="a7",deployment="Dep \\"a7\\"",ray_cluster="c",state="RUNNING"} 3')).toBe(true);
  });

  it('incremental renders equal fresh renders through appearing, changing and vanishing apps and clusters', async () => {
    const store = storeWith({ ray: new Map() });
    const r = new MetricsRenderer(store);
    const steps: ((s: SnapshotStore) => void)[] = [
      (s) => s.setRayCluster(cluster('c', many(5))),
      (s) => s.setRayCluster(cluster('d', many(3))),
      (s) => s.setRayCluster(cluster('c', many(5, 2))),
      (s) => s.setRayCluster(cluster('c', [...many(2), app('new"one', 'DEPLOY_FAILED'), app('odd', 'BRAND_NEW_STATUS')])),
      (s) => s.setRayCluster({ ...cluster('d', []), state: undefined, health: { ...newSourceHealth('ray', 'd'), up: false } }),
      (s) => s.removeRayCluster('c'),
      (s) => s.setRayCluster(cluster('c', many(1))),
    ];
    const strip = (x: string) => new Set([...seriesSet(parseExposition(x))].filter((l) => !/^(hypha_serve_(exporter_|source_sample_age)|process_|nodejs_)/.test(l)));
    for (const step of steps) {
      step(store);
      const incremental = strip(await scrapeText(r));
      const fresh = strip(await scrapeText(new MetricsRenderer(store)));
      expect([...incremental].sort()).toEqual([...fresh].sort());
    }
    const last = await scrapeText(r);
    expect(parseExposition(last).filter((x) => x.name === 'hypha_serve_app_status' && x.labels.ray_cluster === 'c').length).toBe(6);
    expect(last).not.toContain('new\\"one');
  });

  it('the denylist and allowlist select families by anchored regex, the denylist winning', async () => {
    const store = storeWith({ ray: new Map([['c', cluster('c', many(2))]]) });
    const r = new MetricsRenderer(store, { deny: [/^(?:hypha_serve_deployment_.*)$/] });
    let names = new Set(parseExposition(await scrapeText(r)).map((x) => x.name));
    expect([...names].some((n) => n.startsWith('hypha_serve_deployment_'))).toBe(false);
    expect(names.has('hypha_serve_app_status')).toBe(true);
    r.setFilter({ allow: [/^(?:hypha_serve_app_status|hypha_serve_source_up|hypha_serve_deployment_.*)$/], deny: [/^(?:hypha_serve_deployment_replicas)$/] });
    const text = await scrapeText(r);
    names = new Set(parseExposition(text).map((x) => x.name));
    expect([...names].sort()).toEqual(['hypha_serve_app_status', 'hypha_serve_deployment_autoscaling', 'hypha_serve_deployment_max_replicas', 'hypha_serve_deployment_min_replicas',
      'hypha_serve_deployment_scaled_to_zero', 'hypha_serve_deployment_status', 'hypha_serve_deployment_target_replicas', 'hypha_serve_source_up']);
    // Anchored: a prefix alone matches nothing.
    r.setFilter({ allow: [/^(?:hypha_serve_app)$/] });
    expect(parseExposition(await scrapeText(r))).toEqual([]);
  });
});

type Rec = Record<string, unknown>;
/** The fields (`a`, or `health.b` one level down) that `sample` reads of `x`. */
function fieldsRead(sample: (x: never, emit: () => void) => void, x: object): Set<string> {
  const seen = new Set<string>();
  const watch = (o: Rec, prefix: string): Rec => new Proxy(o, {
    get(target, prop) {
      const v = target[prop as string];
      if (typeof prop !== 'string') return v;
      // One level down (health.up: what of it is read counts); collections (registry, workers) count as one field.
      if (prefix === '' && v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Map)) return watch(v as Rec, `${prop}.`);
      seen.add(`${prefix}${prop}`);
      return v;
    },
  });
  sample(watch(x as unknown as Rec, '') as never, () => undefined);
  return seen;
}

/**
 * Every family of a projected scope reads only the fields it declares (a field read but not declared
 * would serve a stale line), over every variant of its argument; the scope's key is their union.
 */
function expectReadsDeclared(scope: 'cluster' | 'hypha', variants: readonly object[]): void {
  const families = FAMILIES.filter((f) => f.scope === scope);
  expect(families.length).toBeGreaterThan(0);
  for (const f of families) {
    const read = new Set(variants.flatMap((v) => [...fieldsRead(f.sample as never, v)]));
    expect({ family: f.name, undeclared: [...read].filter((k) => !(f.reads ?? []).includes(k as never)) }).toEqual({ family: f.name, undeclared: [] });
  }
  expect(scopeReads(scope)).toEqual([...new Set(families.flatMap((f) => f.reads ?? []))].sort());
}

describe('the Ray cluster scope\'s render-cache key is what its families read', () => {

  it('every cluster family reads only the fields it declares; the key is their union', () => {
    expectReadsDeclared('cluster', [cluster('c', [])]);
  });

  it('a changed counter re-renders the cluster\'s lines; a sample that moved only its health does not', async () => {
    const store = storeWith({ ray: new Map([['c', cluster('c', [])]]) });
    const r = new MetricsRenderer(store);
    await scrapeText(r);
    const before = r.stats.unitsRendered;
    store.setRayCluster({ ...cluster('c', []), health: { ...cluster('c', []).health, lastDurationSeconds: 0.5, lastSuccessSeconds: Date.now() / 1000 + 1 } });
    await scrapeText(r);
    expect(r.stats.unitsRendered).toBe(before);
    store.setRayCluster({ ...cluster('c', []), malformedTotal: 3, appsDroppedTotal: 2 });
    const text = await scrapeText(r);
    expect(r.stats.unitsRendered).toBe(before + 1);
    expect(text).toContain('hypha_serve_cluster_malformed_entries_total{ray_cluster="c"} 3');
    expect(text).toContain('hypha_serve_cluster_apps_dropped_total{ray_cluster="c"} 2');
  });
});

describe('the Hypha scope\'s render-cache key is what its families read', () => {
  const server = (o: Partial<HyphaServerSample> = {}): HyphaServerSample => ({
    ...(hyphaParts({ target: 'h', reconnectsTotal: 2, generation: 3, malformedTotal: 1 }).hypha?.get('h') as HyphaServerSample),
    serverId: 'srv-1', workspace: 'ws', ...o,
  });
  // Every branch of the families' sample functions: up and down, ids known and not, comebacks seen and not.
  const variants = [
    server(), server({ serverIdChanged: true }), server({ serverIdChanged: false, generation: 0 }), server({ serverId: undefined }),
    server({ health: { ...newSourceHealth('hypha', 'h'), up: false } }),
  ];

  it('every Hypha family reads only the fields it declares (a field read but not declared would serve a stale line)', () => {
    expectReadsDeclared('hypha', variants);
    // The check can fail: a family reading a field it does not declare is caught.
    const stale = (h: HyphaServerSample, emit: (v: readonly string[], n: number) => void) => emit([h.target], h.listedSeconds);
    expect([...fieldsRead(stale as never, server())].sort()).toEqual(['listedSeconds', 'target']);
  });

  it('a change to any declared field re-renders the server\'s lines; the registry listing, which no family reads, does not', async () => {
    const store = storeWith({ ray: new Map() });
    store.setHyphaServer(server());
    const r = new MetricsRenderer(store);
    const strip = (x: string) => [...seriesSet(parseExposition(x))].filter((l) => l.startsWith('hypha_serve_hypha_')).sort();
    await scrapeText(r);
    const changed: Record<string, Partial<HyphaServerSample>> = {
      reconnectsTotal: { reconnectsTotal: 5 }, generation: { generation: 7 }, malformedTotal: { malformedTotal: 9 }, serverId: { serverId: 'srv-2' },
      serverIdChanged: { serverIdChanged: true }, 'health.up': { health: { ...newSourceHealth('hypha', 'h'), up: false } },
    };
    for (const field of scopeReads('hypha')) {
      if (field === 'target') continue; // the unit's identity: another target is another unit
      expect(changed[field]).toBeDefined();
      store.setHyphaServer(server(changed[field]));
      const incremental = strip(await scrapeText(r));
      expect({ field, lines: incremental }).toEqual({ field, lines: strip(await scrapeText(new MetricsRenderer(store))) });
      store.setHyphaServer(server());
      await scrapeText(r);
    }
    const before = r.stats.unitsRendered;
    const listing = new Map([['ws', [{ id: 'ws/c:s', workspace: 'ws', clientId: 'c', serviceId: 's' }]]]);
    store.setHyphaServer(server({ registry: listing, listedSeconds: 99, workspace: 'other' }));
    await scrapeText(r);
    expect(r.stats.unitsRendered).toBe(before);
  });
});
