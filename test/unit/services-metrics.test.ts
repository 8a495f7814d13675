import { execFileSync } from 'node:child_process';
import { newSourceHealth, Snapshot } from '../../src/snapshot/types';
import { WatchedServiceSample } from '../../src/snapshot/services';
import { CycleEvents, HolderReading, RegistryObservation, WatchState } from '../../src/sources/services/state';
import type { ProbeResult } from '../../src/snapshot/services';
import fs from 'node:fs';
import path from 'node:path';
import { MetricsRenderer } from '../../src/metrics/renderer';
import { CALL_DURATION_BUCKETS, CALL_OUTCOMES, emptyHistogram, observe } from '../../src/snapshot/services';
import { SnapshotStore } from '../../src/snapshot/store';
import { renderSnapshot, scrapeText } from '../helpers/exporter';
import { parseExposition, seriesCount, seriesSet, seriesValue } from '../helpers/exposition';
import { tmpDir } from '../helpers/tmp';

function sampleFrom(st: WatchState, up: boolean, resolved?: string, extra: { holdersConfigured?: number; witnessMaxSeconds?: number } = {}): WatchedServiceSample {
  const health = { ...newSourceHealth('hypha_service', 'public/artifact-manager'), up };
  return {
    service: 'public/artifact-manager',
    health,
    providers: up ? st.providers : undefined,
    resolvedClientId: up ? resolved : undefined,
    cached: up ? st.cached : [],
    clientIdChangesTotal: st.changesTotal,
    lastChangeSeconds: st.lastChangeSeconds,
    canaryReresolvesTotal: st.reresolvesTotal,
    calls: st.calls,
    lastProbes: up ? st.lastProbes : {},
    holdersConfigured: extra.holdersConfigured ?? 0,
    witnessMaxSeconds: extra.witnessMaxSeconds,
    witnessReleasesTotal: st.releasesTotal,
    holderProbes: st.holderProbes,
  };
}

type Cycle = RegistryObservation & { probes: ProbeResult[]; holders: HolderReading[] };
function apply(st: WatchState, o: Cycle): CycleEvents {
  const ev = st.applyRegistry(o);
  st.applyCalls({ nowSeconds: o.nowSeconds, probes: o.probes, holders: o.holders });
  return ev;
}

function render(sample: WatchedServiceSample): Promise<string> {
  const snap: Snapshot = { version: 1, ray: new Map(), services: new Map([[sample.service, sample]]) };
  return renderSnapshot(snap);
}

const A = { fullId: 'public/srv-a:artifact-manager', clientId: 'srv-a' };
const B = { fullId: 'public/srv-b:artifact-manager', clientId: 'srv-b' };

test('renders the contract series; stale is derivable from cached_info unless provider_info', async () => {
  const st = new WatchState({ enabled: true }, 'list');
  st.adoptCanaryIfNone(A, 10);
  apply(st, { nowSeconds: 10, providers: ['srv-a'], resolved: A, probes: [], holders: [] });
  apply(st, {
    nowSeconds: 20, providers: ['srv-b'], resolved: B,
    probes: [{ via: 'cached', method: 'list', outcome: 'timeout', seconds: 5.001, atSeconds: 20 }, { via: 'fresh', method: 'list', outcome: 'ok', seconds: 0.004, atSeconds: 20 }],
    holders: [{ name: 'kth-worker', clientId: 'srv-a' }],
  });
  const text = await render(sampleFrom(st, true, 'srv-b'));
  const s = { service: 'public/artifact-manager' };
  expect(seriesValue(text, 'hypha_serve_service_providers', s)).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_provider_info', { ...s, client_id: 'srv-b' })).toBe(1);
  expect(seriesCount(text, 'hypha_serve_service_provider_info')).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_resolved_info', { ...s, client_id: 'srv-b' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_cached_info', { ...s, holder: 'exporter', client_id: 'srv-a' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_cached_info', { ...s, holder: 'kth-worker', client_id: 'srv-a' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_cached_stale', { ...s, holder: 'exporter' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_cached_stale', { ...s, holder: 'kth-worker' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_client_id_changes_total', s)).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_client_id_last_change_timestamp_seconds', s)).toBe(20);
  expect(seriesValue(text, 'hypha_serve_service_canary_reresolves_total', s)).toBe(0);
  expect(seriesValue(text, 'hypha_serve_service_probe_success', { ...s, via: 'cached' })).toBe(0);
  expect(seriesValue(text, 'hypha_serve_service_probe_success', { ...s, via: 'fresh' })).toBe(1);
  const c = { ...s, method: 'list', via: 'cached', outcome: 'timeout' };
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_bucket', { ...c, le: '5' })).toBe(0);
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_bucket', { ...c, le: '6' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_bucket', { ...c, le: '+Inf' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_count', c)).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_sum', c)).toBeCloseTo(5.001);
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_bucket', { ...s, via: 'fresh', outcome: 'ok', le: '0.005' })).toBe(1);
  // Zero series for the other outcomes exist from the start.
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_count', { ...s, via: 'fresh', outcome: 'never_sent' })).toBe(0);
  expect(text).toContain('# TYPE hypha_serve_service_call_duration_seconds histogram');

  // promtool accepts the exposition (histogram shape, names, help).
  const t = tmpDir();
  try {
    const f = t.write('m.prom', text);
    execFileSync('sh', ['-c', `promtool check metrics < ${f}`], { stdio: 'pipe' });
  } finally {
    t.cleanup();
  }
});

test('while the source is down only the counters and histograms remain', async () => {
  const st = new WatchState({ enabled: true }, 'list');
  st.adoptCanaryIfNone(A, 0);
  apply(st, { nowSeconds: 0, providers: ['srv-a'], resolved: A, probes: [], holders: [] });
  const text = await render(sampleFrom(st, false));
  for (const name of ['hypha_serve_service_providers', 'hypha_serve_service_provider_info', 'hypha_serve_service_resolved_info',
    'hypha_serve_service_cached_info', 'hypha_serve_service_cached_stale', 'hypha_serve_service_probe_success']) {
    expect(seriesCount(text, name)).toBe(0);
  }
  expect(seriesValue(text, 'hypha_serve_service_client_id_changes_total', { service: 'public/artifact-manager' })).toBe(0);
  expect(seriesCount(text, 'hypha_serve_service_call_duration_seconds_count')).toBe(10);
});

test('witness and holder-probe series: stale since, holders configured, bound, releases by reason, holder probe success and via="holder" histogram', async () => {
  const st = new WatchState({ enabled: true, witnessMaxMs: 7200_000 }, 'list', [{ name: 'kth-worker', reportsId: false, probeMethod: 'list_apps' }]);
  st.adoptCanaryIfNone(A, 10);
  st.applyRegistry({ nowSeconds: 10, providers: ['srv-a'], resolved: A });
  st.applyCalls({ nowSeconds: 10, probes: [], holders: [], holderProbes: [{ holder: 'kth-worker', method: 'list_apps', outcome: 'ok', seconds: 0.3, atSeconds: 10 }] });
  st.applyRegistry({ nowSeconds: 25, providers: ['srv-b'], resolved: B });
  st.applyCalls({
    nowSeconds: 25, holders: [], freshAttempts: [
      { via: 'fresh', method: 'list', outcome: 'timeout', seconds: 5, atSeconds: 25 },
      { via: 'fresh', method: 'list', outcome: 'ok', seconds: 0.01, atSeconds: 25 }],
    probes: [{ via: 'fresh', method: 'list', outcome: 'ok', seconds: 0.01, atSeconds: 25, attempts: 2 }],
    holderProbes: [{ holder: 'kth-worker', method: 'list_apps', outcome: 'timeout', seconds: 5.0, atSeconds: 30 }],
  });
  const s = { service: 'public/artifact-manager' };
  let text = await render(sampleFrom(st, true, 'srv-b', { holdersConfigured: 1, witnessMaxSeconds: 7200 }));
  expect(seriesValue(text, 'hypha_serve_service_cached_stale', { ...s, holder: 'exporter' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_cached_stale_since_timestamp_seconds', { ...s, holder: 'exporter' })).toBe(25);
  expect(seriesValue(text, 'hypha_serve_service_holders_configured', s)).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_witness_max_seconds', s)).toBe(7200);
  for (const reason of ['returned', 'holders_agree', 'max_age', 'operator']) expect(seriesValue(text, 'hypha_serve_service_witness_releases_total', { ...s, reason })).toBe(0);
  expect(seriesValue(text, 'hypha_serve_service_holder_probe_success', { ...s, holder: 'kth-worker' })).toBe(0);
  expect(seriesValue(text, 'hypha_serve_service_probe_success', { ...s, via: 'fresh' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_fresh_probe_attempts', s)).toBe(2);
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_count', { ...s, method: 'list', via: 'fresh', outcome: 'timeout' })).toBe(1);
  const h = { ...s, method: 'list_apps', via: 'holder', holder: 'kth-worker' };
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_count', { ...h, outcome: 'ok' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_count', { ...h, outcome: 'timeout' })).toBe(1);
  expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_count', { ...h, outcome: 'never_sent' })).toBe(0);
  // The holder probe does not count as a probe path (HyphaServiceProbeFailing takes the max over via).
  expect(seriesCount(text, 'hypha_serve_service_probe_success')).toBe(1);
  const t = tmpDir();
  try {
    execFileSync('sh', ['-c', `promtool check metrics < ${t.write('m.prom', text)}`], { stdio: 'pipe' });
  } finally {
    t.cleanup();
  }
  // Unbounded witness, and while down: no bound series, no holder probe, no stale-since.
  text = await render(sampleFrom(st, false, undefined, { holdersConfigured: 1 }));
  for (const name of ['hypha_serve_service_witness_max_seconds', 'hypha_serve_service_holder_probe_success', 'hypha_serve_service_cached_stale_since_timestamp_seconds',
    'hypha_serve_service_fresh_probe_attempts']) expect(seriesCount(text, name)).toBe(0);
  expect(seriesValue(text, 'hypha_serve_service_witness_releases_total', { ...s, reason: 'holders_agree' })).toBe(0);
});

// The watched services are units of the declared table like apps: one service's new sample
// re-renders that service only, and the histogram is written from the source's cumulative buckets.
describe('watched services in the one pipeline', () => {
  function handMade(service: string, observations: number[], up = true): WatchedServiceSample {
    let h = emptyHistogram();
    for (const x of observations) h = observe(h, x);
    return {
      service, health: { ...newSourceHealth('hypha_service', service), up, lastSuccessSeconds: 100 },
      providers: up ? ['srv-b'] : undefined, resolvedClientId: up ? 'srv-b' : undefined,
      cached: up ? [{ holder: 'exporter', clientId: 'srv-a', stale: true, staleSinceSeconds: 50, serverGone: false }] : [],
      clientIdChangesTotal: 1, lastChangeSeconds: 50, canaryReresolvesTotal: 0,
      calls: CALL_OUTCOMES.map((outcome) => ({ method: 'list', via: 'fresh' as const, outcome, histogram: outcome === 'ok' ? h : emptyHistogram() })),
      lastProbes: {}, holdersConfigured: 0,
    };
  }
  const dynamic = /^(hypha_serve_(exporter_|source_sample_age)|process_|nodejs_)/;
  const strip = (x: string) => [...seriesSet(parseExposition(x))].filter((l) => !dynamic.test(l)).sort();

  it('a sample of one service re-renders that service only; incremental renders equal fresh ones', async () => {
    const store = new SnapshotStore();
    for (const id of ['ws/a', 'ws/b', 'ws/c']) store.setService(id, handMade(id, [0.01]));
    const r = new MetricsRenderer(store);
    await scrapeText(r);
    expect(r.stats.unitsRendered).toBe(3);
    store.setService('ws/b', handMade('ws/b', [0.01, 7]));
    let text = await scrapeText(r);
    expect(r.stats.unitsRendered).toBe(4);
    expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_bucket', { service: 'ws/b', outcome: 'ok', le: '6' })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_bucket', { service: 'ws/b', outcome: 'ok', le: '10' })).toBe(2);
    expect(strip(text)).toEqual(strip(await scrapeText(new MetricsRenderer(store))));
    // The same data in new objects renders nothing; a removed service's series vanish.
    store.setService('ws/a', handMade('ws/a', [0.01]));
    store.removeService('ws/c');
    text = await scrapeText(r);
    expect(r.stats.unitsRendered).toBe(4);
    expect(seriesCount(text, 'hypha_serve_service_call_duration_seconds_count', { service: 'ws/c' })).toBe(0);
    expect(seriesCount(text, 'hypha_serve_service_client_id_changes_total')).toBe(2);
    expect(strip(text)).toEqual(strip(await scrapeText(new MetricsRenderer(store))));
  });

  it('histogram series are cumulative with +Inf = count, in both formats; OpenMetrics passes a strict parser', async () => {
    const store = new SnapshotStore();
    store.setService('ws/a', handMade('ws/a', [0.0005, 0.001, 0.3, 4.5, 5, 61, 120]));
    store.setService('ws/down', handMade('ws/down', [], false));
    const r = new MetricsRenderer(store);
    const text = await scrapeText(r);
    const samples = parseExposition(text).filter((x) => x.name.startsWith('hypha_serve_service_call_duration_seconds'));
    const key = (l: Record<string, string>) => JSON.stringify(Object.entries(l).filter(([k]) => k !== 'le'));
    const series = new Map<string, number[]>();
    for (const x of samples.filter((y) => y.name.endsWith('_bucket'))) series.set(key(x.labels), [...(series.get(key(x.labels)) ?? []), x.value]);
    expect(series.size).toBe(2 * CALL_OUTCOMES.length);
    for (const [k, values] of series) {
      expect(values).toHaveLength(CALL_DURATION_BUCKETS.length + 1);
      expect([...values].sort((a, b) => a - b)).toEqual(values);
      const count = samples.find((x) => x.name.endsWith('_count') && key(x.labels) === k)?.value;
      expect(values[values.length - 1]).toBe(count);
    }
    const ok = { service: 'ws/a', method: 'list', via: 'fresh', outcome: 'ok' };
    expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_bucket', { ...ok, le: '0.001' })).toBe(2);
    expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_bucket', { ...ok, le: '5' })).toBe(5);
    expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_bucket', { ...ok, le: '60' })).toBe(5);
    expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_bucket', { ...ok, le: '+Inf' })).toBe(7);
    expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_sum', ok)).toBeCloseTo(190.8015);
    const om = await scrapeText(r, 'openmetrics');
    expect(om).toMatch(/^# TYPE hypha_serve_service_call_duration_seconds histogram$/m);
    expect(om).toMatch(/^# TYPE hypha_serve_service_client_id_changes counter$/m);
    const py = path.resolve(__dirname, '..', '..', '.venv', 'ray', 'bin', 'python');
    expect(fs.existsSync(py)).toBe(true);
    const t = tmpDir();
    try {
      const parsed = execFileSync(py, ['-c', [
        'import sys',
        'from prometheus_client.openmetrics.parser import text_string_to_metric_families as p',
        'fams = {f.name: f for f in p(open(sys.argv[1], encoding="utf-8").read())}',
        'h = fams["hypha_serve_service_call_duration_seconds"]',
        'print(h.type, len(h.samples), sum(len(f.samples) for f in fams.values()))',
      ].join('\n'), t.write('om.txt', om)], { stdio: 'pipe' }).toString().trim().split(' ');
      expect(parsed.slice(0, 2)).toEqual(['histogram', String(samples.length)]);
      expect(Number(parsed[2])).toBe(parseExposition(text).length);
      execFileSync('sh', ['-c', `promtool check metrics < ${t.write('m.prom', text)}`], { stdio: 'pipe' });
      // The parser is strict: a bucket count above the next bucket's (not cumulative) is rejected.
      const broken = om.replace(/^(hypha_serve_service_call_duration_seconds_bucket\{[^\n]*le="0\.001"\} )\d+$/m, '$1' + '99');
      expect(broken).not.toBe(om);
      expect(() => execFileSync(py, ['-c', 'import sys\nfrom prometheus_client.openmetrics.parser import text_string_to_metric_families as p\n'
        + 'list(p(open(sys.argv[1], encoding="utf-8").read()))', t.write('om-bad.txt', broken)], { stdio: 'pipe' })).toThrow();
    } finally {
      t.cleanup();
    }
  });
});
