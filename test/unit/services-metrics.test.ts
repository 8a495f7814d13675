import { execFileSync } from 'node:child_process';
import { newSourceHealth, Snapshot } from '../../src/snapshot/types';
import { WatchedServiceSample } from '../../src/snapshot/services';
import { CycleEvents, HolderReading, RegistryObservation, WatchState } from '../../src/sources/services/state';
import type { ProbeResult } from '../../src/snapshot/services';
import { renderSnapshot, seriesCount, seriesValue } from '../helpers/exporter';
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
    canary: st.canary,
    knownProviders: st.knownProviders,
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
