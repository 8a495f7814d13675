// The name-and-type half of test/integration/dashboards-live.test.ts's docs check, without a live stack: every
// family an in-process exporter serves over recorded Ray answers, its type and the label names of every series,
// against docs/metrics.md (generated from the family table), and every documented family served (a family
// without series still declares itself by its HELP/TYPE headers). The Hypha side (server, registration,
// workers, watched services), which needs a real Hypha to sample, is checked over a snapshot built from
// its parts, so that its families are compared with series and not only by their headers.
import fs from 'node:fs';
import path from 'node:path';
import { newSourceHealth, Snapshot } from '../../src/snapshot/types';
import type { WatchedServiceSample } from '../../src/snapshot/services';
import { WatchState } from '../../src/sources/services/state';
import { compareWithDocs, documentedFamilies } from '../helpers/documented-families';
import { exporterWithConfig, renderSnapshot } from '../helpers/exporter';
import { parseFamilies } from '../helpers/exposition';
import { json, startUpstream } from '../helpers/http-upstream';
import { hyphaParts } from '../helpers/hypha-snapshot';
import { freePort } from '../harness/ports';

const repo = path.resolve(__dirname, '..', '..');
const documented = documentedFamilies(fs.readFileSync(path.join(repo, 'docs', 'metrics.md'), 'utf8'));
// The one stated exception (as in dashboards-live): probe calls via the cached or a fresh proxy have no holder.
const mayBeAbsent = { hypha_serve_service_call_duration_seconds: ['holder'] };

const rayDir = path.join(repo, 'test', 'fixtures', 'ray', '2.60');
const RECORDED = ['app-running.json', 'worker-scaled-to-zero.json', 'app-bad-import-deploy-failed.json', 'app-unhealthy.json'];
const recorded = (file: string): unknown => JSON.parse(fs.readFileSync(path.join(rayDir, file), 'utf8')) as unknown;

/** Families with at least one series, so that a pass says the label half was exercised, not only the headers. */
const withSeries = (text: string) => new Set([...parseFamilies(text).values()].filter((f) => f.samples.length > 0).map((f) => f.name));

describe('served families and their types and labels as docs/metrics.md says', () => {
  it('docs/metrics.md documents families at all', () => {
    expect(documented.size).toBeGreaterThan(40);
  });

  it('an in-process exporter over recorded Ray answers, with its Hypha server unreachable', async () => {
    const ray = await startUpstream(json(recorded(RECORDED[0])));
    const hyphaPort = await freePort();
    const h = exporterWithConfig([
      'ray_clusters:',
      `  - {name: rec, dashboard_url: "${ray.url}", interval: 1h, proxy_probe: {enabled: false}}`,
      'hypha:',
      `  name: main`,
      `  server_url: http://127.0.0.1:${hyphaPort}`,
      // A sample of an unreachable Hypha waits for its deadline: short ones keep the test short.
      'hypha_registration:',
      '  interval: 1h',
      '  timeout: 200ms',
      '  clusters:',
      '    - cluster: rec',
      '      bioengine: {workspace: bio}',
      'watched_services:',
      '  - {service: public/artifact-manager, interval: 1h, timeout: 200ms}',
      '',
    ].join('\n'), { logArtifact: 'metrics-served-docs' });
    try {
      h.exporter.start();
      await h.exporter.settled();
      const seen = new Set<string>();
      for (const file of RECORDED) {
        ray.set(json(recorded(file)));
        await h.exporter.sampleAll();
        const text = await h.scrape();
        expect(compareWithDocs(parseFamilies(text), documented, mayBeAbsent)).toEqual([]);
        for (const f of withSeries(text)) seen.add(f);
      }
      // The Ray families and the health of all three sources were compared with series.
      for (const f of ['hypha_serve_app_status', 'hypha_serve_deployment_replicas', 'hypha_serve_proxy_status', 'hypha_serve_source_errors_total']) {
        expect(seen).toContain(f);
      }
      const text = await h.scrape();
      const up = [...(parseFamilies(text).get('hypha_serve_source_up')?.samples ?? [])].map((s) => `${s.labels.source}/${s.labels.ray_cluster}/${s.labels.hypha}/${s.labels.service}`).sort();
      expect(up).toEqual(['hypha//main/', 'hypha_service//main/public/artifact-manager', 'ray/rec//']);
    } finally {
      await h.close();
      await ray.close();
    }
  }, 30_000);

  it('the Hypha side over a snapshot of its parts: server, registration, workers and a watched service with holders', async () => {
    const st = new WatchState({ enabled: true }, 'list');
    const A = { fullId: 'public/srv-a:artifact-manager', clientId: 'srv-a' };
    const B = { fullId: 'public/srv-b:artifact-manager', clientId: 'srv-b' };
    st.adoptCanaryIfNone(A, 10);
    st.applyRegistry({ nowSeconds: 10, providers: ['srv-a'], resolved: A });
    st.applyCalls({ nowSeconds: 10, probes: [], holders: [] });
    st.applyRegistry({ nowSeconds: 20, providers: ['srv-b'], resolved: B });
    st.applyCalls({
      nowSeconds: 20,
      probes: [{ via: 'cached', method: 'list', outcome: 'timeout', seconds: 5.001, atSeconds: 20 }, { via: 'fresh', method: 'list', outcome: 'ok', seconds: 0.004, atSeconds: 20 }],
      holders: [{ name: 'kth-worker', clientId: 'srv-a' }],
    });
    const service: WatchedServiceSample = {
      service: 'public/artifact-manager', health: { ...newSourceHealth('hypha_service', 'public/artifact-manager'), up: true },
      providers: st.providers, resolvedClientId: 'srv-b', cached: st.cached, clientIdChangesTotal: st.changesTotal,
      lastChangeSeconds: st.lastChangeSeconds, canaryReresolvesTotal: st.reresolvesTotal, calls: st.calls, lastProbes: st.lastProbes,
      holdersConfigured: 1, witnessMaxSeconds: 600, witnessReleasesTotal: st.releasesTotal, holderProbes: st.holderProbes,
    };
    const ray = { ...newSourceHealth('ray', 'rec', 15), up: true, lastSuccessSeconds: 1790000000 };
    const reg = {
      cluster: 'rec', app: 'two-step', workspace: 'bio', service: 'bio/w-a-1234abcd:two-step', registered: false, state: 'missing_scaled_to_zero' as const,
      unregisteredSinceSeconds: 1000, clientIdMismatch: false, clientIdChangesTotal: 2, settled: true,
    };
    const snap: Snapshot = {
      version: 1,
      ray: new Map([['rec', { cluster: 'rec', health: ray, state: { apps: [], proxies: [], appsDropped: 0 }, appsDroppedTotal: 0, malformedTotal: 0 }]]),
      services: new Map([[service.service, service]]),
      ...hyphaParts({
        target: 'main', health: { ...newSourceHealth('hypha', 'main', 30), up: true, lastSuccessSeconds: 1790000001 }, reconnectsTotal: 1, generation: 2,
        apps: [reg],
        workers: [{ worker: 'bio/w-a:bioengine-worker', workspace: 'bio', clientId: 'w-a', up: true, rayCluster: 'rec', apps: [{ app: 'two-step', status: 'RUNNING', serviceRegistered: false }] }],
      }),
    };
    const text = await renderSnapshot(snap);
    expect(compareWithDocs(parseFamilies(text), documented, mayBeAbsent)).toEqual([]);
    const seen = withSeries(text);
    for (const f of [
      'hypha_serve_hypha_reconnects_total', 'hypha_serve_app_registration_state', 'hypha_serve_app_expected_service_info', 'hypha_serve_worker_app_status',
      'hypha_serve_worker_app_service_registered', 'hypha_serve_service_cached_info', 'hypha_serve_service_call_duration_seconds',
    ]) expect(seen).toContain(f);
  });

  it('can fail: a family missing from the docs, a documented label the series lacks', async () => {
    const text = await renderSnapshot({ version: 1, ray: new Map() });
    const fewer = new Map(documented);
    fewer.delete('hypha_serve_source_up');
    const relabelled = new Map(documented);
    relabelled.set('hypha_serve_exporter_build_info', { name: 'hypha_serve_exporter_build_info', type: 'gauge', labels: ['nodejs', 'revision', 'variant', 'version'] });
    expect(compareWithDocs(parseFamilies(text), fewer, mayBeAbsent)).toEqual(['hypha_serve_source_up: served (gauge) but not documented']);
    expect(compareWithDocs(parseFamilies(text), relabelled, mayBeAbsent)).toEqual([
      'hypha_serve_exporter_build_info: served with labels {nodejs,revision,version}, documented {nodejs,revision,variant,version}',
    ]);
  });
});
