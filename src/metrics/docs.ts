import type { HyphaServerSample } from '../snapshot/hypha';
import type { RegistrationSample } from '../snapshot/registration';
import { CALL_OUTCOMES, CallSeries, CallVia, emptyHistogram, WatchedServiceSample } from '../snapshot/services';
import { newSourceHealth, RayClusterSample, ServeDeployment, Snapshot } from '../snapshot/types';
import { AnyFamily, FAMILIES, forEachSample, Scope, units } from './families';
import { processMetrics } from './process';

// Generated metrics documentation (docs/metrics.md), written by scripts/gen-metrics-docs.ts from
// the declared table; a unit test fails on drift.

const PER: Record<Scope, string> = {
  process: 'exporter', source: 'source', service: 'watched service', cluster: 'Ray cluster', app: 'app', deployment: 'deployment',
  proxy: 'Serve proxy', hypha: 'Hypha server', registration: 'expected app', worker: 'BioEngine worker',
};

// The watched service of the reference: its canary is the witness (stale since the provider
// changed, bounded by witness_max) and one configured holder, probed, addresses the live provider.
function referenceService(credential: NonNullable<WatchedServiceSample['health']['credential']>): WatchedServiceSample {
  const calls = (via: CallVia, method: string, holder?: string): CallSeries[] =>
    CALL_OUTCOMES.map((outcome) => ({ method, via, ...(holder === undefined ? {} : { holder }), outcome, histogram: emptyHistogram() }));
  const service = 'public/artifact-manager';
  return {
    service,
    health: { ...newSourceHealth('hypha_service', service, 30, undefined, 'h'), up: true, lastSuccessSeconds: 1, lastDurationSeconds: 0.1, credential },
    providers: ['b'], resolvedClientId: 'b', clientIdChangesTotal: 1, lastChangeSeconds: 1, canaryReresolvesTotal: 0,
    cached: [
      { holder: 'exporter', clientId: 'a', stale: true, staleSinceSeconds: 1, sinceSeconds: 0, serverGone: false },
      { holder: 'worker', clientId: 'b', stale: false, sinceSeconds: 1, serverGone: false },
    ],
    calls: [...calls('cached', 'list'), ...calls('fresh', 'list'), ...calls('holder', 'list_apps', 'worker')],
    lastProbes: {
      cached: { via: 'cached', method: 'list', outcome: 'timeout', seconds: 5, atSeconds: 1 },
      fresh: { via: 'fresh', method: 'list', outcome: 'ok', seconds: 0.01, atSeconds: 1, attempts: 1 },
    },
    holdersConfigured: 1, witnessMaxSeconds: 86400, witnessReleasesTotal: {},
    holderProbes: [{ holder: 'worker', method: 'list_apps', outcome: 'ok', seconds: 0.01, atSeconds: 1 }],
  };
}

// A typical unit of each scope: one app with three deployments (two fixed, one autoscaling at
// zero), one proxy, one registration in a missing state, one worker reporting one app, and one
// watched service (referenceService).
function referenceSnapshot(): Snapshot {
  const replicas = { STARTING: 0, UPDATING: 0, RECOVERING: 0, RUNNING: 1, STOPPING: 0, PENDING_MIGRATION: 0 };
  const dep = (name: string, auto: boolean): ServeDeployment => ({
    name, status: 'HEALTHY', messagePresent: false, replicas: auto ? { ...replicas, RUNNING: 0 } : replicas, targetReplicas: auto ? 0 : 1,
    minReplicas: auto ? 0 : 1, maxReplicas: auto ? 4 : 1, autoscaling: auto, scaledToZero: auto,
  });
  const credential = { file: '/run/secrets/token', lastReadSeconds: 1, readErrorsTotal: 0, changesTotal: 0 };
  const health = { ...newSourceHealth('ray', 'c', 15), up: true, lastSuccessSeconds: 1, lastDurationSeconds: 0.1, credential };
  const ray: RayClusterSample = {
    cluster: 'c', health, appsDroppedTotal: 0, malformedTotal: 0,
    state: {
      apps: [{
        name: 'a', status: 'RUNNING', messagePresent: false, message: '', routePrefix: '/a', source: 'declarative', lastDeployedSeconds: 1,
        deployments: [dep('A', false), dep('B', false), dep('C', true)],
      }],
      proxies: [{ nodeId: 'n', nodeIp: '10.0.0.1', status: 'HEALTHY', head: true, ready: true }],
      appsDropped: 0,
    },
  };
  const hypha: HyphaServerSample = {
    target: 'h', health: { ...newSourceHealth('hypha', 'h', 30), up: true, lastSuccessSeconds: 1, lastDurationSeconds: 0.1, credential },
    reconnectsTotal: 0, generation: 1, listedSeconds: 1, connectionsListed: 1, registry: new Map(), workers: [], malformedTotal: 0,
  };
  const registration: RegistrationSample = {
    apps: [{
      cluster: 'c', app: 'a', hypha: 'h', workspace: 'w', service: 'w/x:a', registered: false, state: 'missing_scaled_to_zero', unregisteredSinceSeconds: 1,
      clientIdMismatch: false, clientIdChangesTotal: 0, settled: true,
    }],
    workers: [{
      worker: 'w/x:bioengine-worker', hypha: 'h', workspace: 'w', clientId: 'x', up: true, rayCluster: 'c',
      apps: [{ app: 'a', status: 'RUNNING', serviceRegistered: true }],
    }],
  };
  const service = referenceService(credential);
  return { version: 1, ray: new Map([['c', ray]]), hypha: new Map([['h', hypha]]), registration, services: new Map([[service.service, service]]) };
}

export interface FamilyDoc {
  name: string;
  type: string;
  labels: string[];
  meaning: string;
  stability: string;
  /** Series per unit of `per` in the reference snapshot (table families only). */
  series?: number;
  per: string;
}

/** The standard process_* and nodejs_* families (prom-client's default collectors, src/metrics/process.ts). */
function processFamilies(): FamilyDoc[] {
  return processMetrics().getMetricsAsArray().map((m) => {
    const x = m as unknown as { name: string; help: string; type: string; labelNames?: string[] };
    const labels = [...(x.labelNames ?? [])];
    const series = labels.length === 0 && x.type !== 'histogram' ? 1 : undefined;
    return { name: x.name, type: String(x.type), labels, meaning: x.help, stability: 'stable', series, per: 'exporter' };
  });
}

/** Samples one unit of the family's scope yields in the reference snapshot, on average over its units. */
function seriesPerUnit(f: AnyFamily, ref: Snapshot): number {
  let samples = 0;
  let n = 0;
  for (const u of units(ref, f.scope, 2)) {
    n++;
    forEachSample(f, u.arg, () => samples++);
  }
  return samples / n;
}

/** A table family's one text: its help, then what the docs add to it. */
export function familyMeaning(f: AnyFamily): string {
  return f.doc === undefined ? f.help : `${f.help} ${f.doc}`;
}

/** Every family served: the table's, then the standard collectors'. */
export function familyDocs(): FamilyDoc[] {
  const ref = referenceSnapshot();
  const table = FAMILIES.map((f: AnyFamily): FamilyDoc => ({
    name: f.name, type: f.type, labels: [...f.labels], meaning: familyMeaning(f), stability: f.stability, series: seriesPerUnit(f, ref), per: PER[f.scope],
  }));
  return [...table, ...processFamilies()];
}

/** Series one app adds, from the table: its app, deployment and registration families. */
export function seriesPerApp(docs: FamilyDoc[], deployments: number): { ray: number; registration: number } {
  const sum = (per: string) => docs.filter((d) => d.per === per).reduce((n, d) => n + (d.series ?? 0), 0);
  return { ray: sum('app') + deployments * sum('deployment'), registration: sum('expected app') };
}

export function metricsMarkdown(): string {
  const docs = familyDocs();
  const perApp = seriesPerApp(docs, 3);
  const n = (name: string) => docs.find((d) => d.name === name)?.series ?? 0;
  const perDep = docs.filter((d) => d.per === 'deployment').reduce((n, d) => n + (d.series ?? 0), 0);
  const rows = docs.map((d) => {
    const row = `| \`${d.name}\` | ${d.type} | ${d.labels.join(', ')} | ${d.series ?? '—'} per ${d.per} | ${d.stability} | ${d.meaning} |`;
    return row.replace('|  |', '| |');
  });
  const total = perApp.ray + perApp.registration;
  return [
    '# Metrics',
    '',
    '<!-- Generated by scripts/gen-metrics-docs.ts from src/metrics/families.ts (npm run build && node dist/scripts/gen-metrics-docs.js); '
      + 'test/unit/metrics-docs.test.ts fails when it drifts. -->',
    '',
    'Every family the exporter serves on `/metrics`. The exporter\'s own families are one declared table',
    '(`src/metrics/families.ts`: name, type, help, labels, stability, meaning and the function that yields the samples),',
    'rendered by one renderer; the standard `process_*` and `nodejs_*` families are prom-client\'s default collectors (less',
    'the three `nodejs_active_*_total` gauges, whose suffix fails `promtool check metrics`). A histogram\'s labels are listed',
    'without `le`, which its `_bucket` series add; its `_sum` and `_count` series carry the listed labels. The hand-made',
    '`hypha_serve_exporter_{start_time_seconds,resident_memory_bytes,heap_used_bytes,cpu_seconds_total}` are deprecated',
    'aliases of `process_start_time_seconds`, `process_resident_memory_bytes`, `nodejs_heap_size_used_bytes` and',
    '`process_cpu_seconds_total`, served through 0.2.x and removed in the next release.',
    '',
    '## Series per app',
    '',
    '"Series" below counts the samples one unit yields in a typical state (state sets count every state, histograms every',
    '`_bucket`, `_sum` and `_count` sample). One Serve app with',
    `three deployments adds **${perApp.ray}** Ray series (${perDep} per deployment) and, with Hypha registration configured,`,
    `**${perApp.registration}** registration series: ${total} in all, so 1,000 such apps are about ${(total * 1000).toLocaleString('en-US')} series.`,
    `The per-state families are the bulk: \`hypha_serve_deployment_status\` (${n('hypha_serve_deployment_status')} per deployment),`,
    `\`hypha_serve_deployment_replicas\` (${n('hypha_serve_deployment_replicas')}), \`hypha_serve_app_status\` (${n('hypha_serve_app_status')} per app) `
      + `and \`hypha_serve_app_registration_state\` (${n('hypha_serve_app_registration_state')}).`,
    '',
    '## Dropping families: `--metric-allowlist` / `--metric-denylist`',
    '',
    'As in kube-state-metrics: a comma-separated list of regular expressions, each matched against the whole family',
    'name (anchored). With an allowlist only matching families are served; a denylist drops matching families and wins',
    'over the allowlist. A lab with thousands of apps that alerts on `hypha_serve_deployment_replicas` but not on the',
    `deployment state set can run \`--metric-denylist=hypha_serve_deployment_status\` (−${n('hypha_serve_deployment_status')} series per deployment).`,
    'Dropping a family the alert rules or dashboards use silences them: check `rules/` first.',
    '',
    '## Formats and compression',
    '',
    '`GET /metrics` answers in the Prometheus text format 0.0.4, or in OpenMetrics 1.0.0 when the `Accept` header',
    'prefers `application/openmetrics-text` (Prometheus does by default). `Accept-Encoding: gzip` gets a gzip body',
    '(a stream of two gzip members: the per-scrape exporter/source series, then the cached rest; every gzip reader,',
    "Go's included, reads all members). The body is rebuilt only for the units (watched service, Ray cluster, app,",
    'deployment, proxy, Hypha server, registration, worker) whose data changed since the last sample; a scrape with no new',
    'sample serves the cached text and gzip.',
    '',
    '## Families',
    '',
    '| metric | type | labels | series | stability | meaning |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
