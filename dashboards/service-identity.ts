// "Service identity (artifact manager)": which Hypha client currently provides each watched
// service, which client id a fresh resolution returns and which one long-lived holders cached,
// whether a cached proxy went stale, and how calls through it compare with a fresh one.
import {
  AnnotationQueryBuilder,
  DashboardBuilder,
  DashboardCursorSync,
  RowBuilder,
  type Dashboard,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { BigValueColorMode, BigValueTextMode, VisibilityMode } from '@grafana/grafana-foundation-sdk/common';
import { HeatmapColorMode, HeatmapColorOptionsBuilder, PanelBuilder as HeatmapPanel, YAxisConfigBuilder } from '@grafana/grafana-foundation-sdk/heatmap';
import { DASHBOARD_TAG, DS, sel } from './lib/conventions';
import { heatmapQuery, packLink, rangeQuery, runbookIndexLink, runbookLinks, sourceUpPanel, stateTimelinePanel, statPanel, statQuery, thresholds, timeseriesPanel, valueMap } from './lib/panels';
import { clusterVariable, datasourceVariable, holderVariable, instanceVariable, jobVariable, serviceVariable } from './lib/variables';

export const UID = 'hypha-serve-service-identity';

const SVC = sel(['service']);
/** The watched services' own source health: source kind hypha_service, labelled with the service id. */
const WATCHED_SOURCE = sel([], 'source="hypha_service"', 'service=~"$service"');
const CALLS = 'hypha_serve_service_call_duration_seconds';

/** Presence timelines: one row per client id, a bar while that id is current. */
function presence(color: string) {
  return valueMap([[1, 'current', color]]);
}

function nowRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Now'));
  d.withPanel(
    sourceUpPanel(
      'Watched service source',
      'Whether the exporter could sample each watched service on its last attempt (hypha_serve_source_up{source="hypha_service"}, ' +
        'labelled service, and hypha = the server it is watched on). While DOWN, that service\'s series are absent and its alerts are silent; other services and ' +
        'the registration checks are not affected.',
      `min by (service) (hypha_serve_source_up{${WATCHED_SOURCE}})`,
      '{{service}}',
    ),
  );
  d.withPanel(
    statPanel()
      .title('Live providers')
      .description('Hypha clients currently providing each watched service. 0: every call fails with "Service not found".')
      .withTarget(statQuery('A', `sum by (service) (hypha_serve_service_providers{${SVC}})`, '{{service}}'))
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('red', [[1, 'green']]))
      .colorMode(BigValueColorMode.Background)
      .textMode(BigValueTextMode.ValueAndName)
      .links(runbookLinks('HyphaServiceProbeFailing'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Stale cached proxies')
      .description(
        'Holders whose cached proxy addresses a client id that is no longer among the live providers ' +
          '(hypha_serve_service_cached_stale, over the exporter replicas). Calls through such a proxy hang until they time out.',
      )
      .withTarget(statQuery('A', `sum(max by (service, holder) (hypha_serve_service_cached_stale{${sel(['service', 'holder'])}}))`))
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('green', [[1, 'red']]))
      .colorMode(BigValueColorMode.Background)
      .links(runbookLinks('HyphaServiceCachedProxyStale'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Probe success')
      .description('Whether the last probe call succeeded through the cached proxy and through a freshly resolved one.')
      .withTarget(statQuery('A', `min by (service, via) (hypha_serve_service_probe_success{${SVC}})`, '{{via}}'))
      .unit('none')
      .mappings([valueMap([[0, 'FAILING', 'red'], [1, 'OK', 'green']])])
      .thresholds(thresholds('red', [[1, 'green']]))
      .colorMode(BigValueColorMode.Background)
      .textMode(BigValueTextMode.ValueAndName)
      .links(runbookLinks('HyphaServiceCachedProbeFailing', 'HyphaServiceProbeFailing'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Client id changes, last hour')
      .description(
        'Times the provider set of each service changed in the last hour ' +
          '(recording rule service:hypha_serve_service_client_id_changes:increase1h). HyphaServiceClientIdChurn warns at 5.',
      )
      .withTarget(statQuery('A', `sum by (service) (service:hypha_serve_service_client_id_changes:increase1h{${SVC}})`, '{{service}}'))
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('green', [[1, 'yellow'], [5, 'red']]))
      .textMode(BigValueTextMode.ValueAndName)
      .links(runbookLinks('HyphaServiceClientIdChurn'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Since the last client id change')
      .description(
        'Time since the provider set of each service last changed. Empty while healthy: the exporter records a change ' +
          'only once it has seen one since it started.',
      )
      .withTarget(statQuery('A', `time() - max by (service) (hypha_serve_service_client_id_last_change_timestamp_seconds{${SVC}})`, '{{service}}'))
      .unit('s')
      .noValue('no change seen')
      .thresholds(thresholds('text'))
      .textMode(BigValueTextMode.ValueAndName)
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('p90 latency, fresh proxy (10m)')
      .description(
        '90th percentile of probe calls through a freshly resolved proxy over 10 minutes (recording rule ' +
          'service_via_quantile:hypha_serve_service_call_duration_seconds:histogram_quantile_rate10m). HyphaServiceCallLatencyHigh warns above 1 s.',
      )
      .withTarget(
        statQuery(
          'A',
          `max by (service) (service_via_quantile:hypha_serve_service_call_duration_seconds:histogram_quantile_rate10m{${SVC},quantile="0.9",via="fresh"})`,
          '{{service}}',
        ),
      )
      .unit('s')
      .thresholds(thresholds('green', [[0.5, 'yellow'], [1, 'red']]))
      .textMode(BigValueTextMode.ValueAndName)
      .links(runbookLinks('HyphaServiceCallLatencyHigh'))
      .height(4)
      .span(4),
  );
}

function identityRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Client identity'));
  d.withPanel(
    stateTimelinePanel(presence('green'))
      .title('Provider client ids')
      .description('Client ids of the live providers of each service over time: a new row is a re-registration under a new id.')
      .withTarget(rangeQuery('A', `max by (service, client_id) (hypha_serve_service_provider_info{${SVC}})`, '{{client_id}}'))
      .showValue(VisibilityMode.Never)
      .height(7)
      .span(8),
  );
  d.withPanel(
    stateTimelinePanel(presence('blue'))
      .title('Freshly resolved client id')
      .description('The client id a fresh get_service() resolution returned in each sampling cycle.')
      .withTarget(rangeQuery('A', `max by (service, client_id) (hypha_serve_service_resolved_info{${SVC}})`, '{{client_id}}'))
      .showValue(VisibilityMode.Never)
      .height(7)
      .span(8),
  );
  d.withPanel(
    stateTimelinePanel(presence('purple'))
      .title('Cached client id per holder')
      .description(
        'The client id each holder\'s long-lived proxy addresses ("exporter" is the canary proxy the exporter keeps). ' +
          'It should follow the provider rows; a holder stuck on an id that left the providers is stale.',
      )
      .withTarget(rangeQuery('A', `max by (service, holder, client_id) (hypha_serve_service_cached_info{${sel(['service', 'holder'])}})`, '{{holder}}: {{client_id}}'))
      .showValue(VisibilityMode.Never)
      .links(runbookLinks('HyphaServiceCachedProxyStale'))
      .height(7)
      .span(8),
  );
  d.withPanel(
    stateTimelinePanel(valueMap([[0, 'fresh', 'green'], [1, 'STALE', 'red']]))
      .title('Stale flag per holder')
      .description(
        'STALE while the holder\'s cached client id is not among the live providers; the exporter pages it (hypha_serve_service_cached_stale_page, ' +
          'HyphaServiceCachedProxyStale) at once when that id is a server id the Hypha server replaced (it never returns), else after 2 minutes ' +
          '(watched_services[].page_waits). ' +
          'Not for the canary while every holder is a BioEngine worker that re-resolves by itself (0.16.30 or later, ' +
          'hypha_serve_service_witness_self_healing 1): HyphaServiceCachedProxySelfHealing warns, and the exporter releases it after 5 minutes.',
      )
      .withTarget(rangeQuery('A', `max by (service, holder) (hypha_serve_service_cached_stale{${sel(['service', 'holder'])}})`, '{{holder}} ({{service}})'))
      .links(runbookLinks('HyphaServiceCachedProxyStale', 'HyphaServiceCachedProxySelfHealing'))
      .height(6)
      .span(12),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Client id churn per hour')
      .description(
        'Provider-set changes in the trailing hour, and how often the canary had to re-resolve its ' +
          'cached proxy (per hour). Each change strands proxies cached before it.',
      )
      .withTarget(rangeQuery('A', `sum by (service) (service:hypha_serve_service_client_id_changes:increase1h{${SVC}})`, '{{service}} client id changes (last 1h)'))
      .withTarget(
        rangeQuery('B', `sum by (service) (rate(hypha_serve_service_canary_reresolves_total{${SVC}}[$__rate_interval])) * 3600`, '{{service}} canary re-resolves per hour'),
      )
      .unit('short')
      .min(0)
      .links(runbookLinks('HyphaServiceClientIdChurn'))
      .height(6)
      .span(12),
  );
}

/** Before the incident: a Hypha server that changes its id on restart strands every cached proxy (issue 19). */
function serverIdRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Hypha server identity'));
  d.withPanel(
    stateTimelinePanel(presence('green'))
      .title('Hypha server id')
      .description(
        'The server id each configured Hypha server reports on the exporter\'s registry connection (hypha_serve_hypha_server_info). ' +
          'Its built-in services, the artifact manager among them, are provided by client <server_id>: a new row after a restart ' +
          'is a new client id for all of them.',
      )
      .withTarget(rangeQuery('A', `max by (hypha, server_id) (hypha_serve_hypha_server_info{${sel([])}})`, '{{hypha}}: {{server_id}}'))
      .showValue(VisibilityMode.Never)
      .links(runbookLinks('HyphaServeServerIdUnstable'))
      .height(6)
      .span(12),
  );
  d.withPanel(
    stateTimelinePanel(valueMap([[0, 'same id', 'green'], [1, 'NEW ID', 'orange']]))
      .title('Came back under another server id')
      .description(
        'NEW ID: the last time the exporter\'s connection was rebuilt the server reported another id (no fixed --server-id / ' +
          'HYPHA_SERVER_ID): every restart strands proxies cached to its built-in services (incident 2). HyphaServeServerIdUnstable ' +
          'opens a ticket after 1 minute. Empty while healthy until the exporter has seen a comeback.',
      )
      .withTarget(rangeQuery('A', `max by (hypha) (hypha_serve_hypha_server_id_changed{${sel([])}})`, '{{hypha}}'))
      .links(runbookLinks('HyphaServeServerIdUnstable'))
      .height(6)
      .span(12),
  );
}

function callsRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Calls: cached vs fresh proxy'));
  const quantile = (refId: string, q: string) =>
    rangeQuery(refId, `histogram_quantile(${q}, sum by (via, le) (rate(${CALLS}_bucket{${SVC}}[$__rate_interval])))`, `p${Number(q) * 100} {{via}}`);
  d.withPanel(
    timeseriesPanel()
      .title('Call latency quantiles, cached vs fresh')
      .description(
        'Median, 90th and 99th percentile of probe calls through the cached proxy and through a freshly resolved one. ' +
          'A stale cached proxy shows as cached calls pinned at the call timeout while fresh calls stay fast.',
      )
      .withTarget(quantile('A', '0.5'))
      .withTarget(quantile('B', '0.9'))
      .withTarget(quantile('C', '0.99'))
      .unit('s')
      .min(0)
      .links(runbookLinks('HyphaServiceCallLatencyHigh', 'HyphaServiceCachedProbeFailing'))
      .height(8)
      .span(12),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Probe outcomes by class')
      .description('Probe calls per second by path (cached, fresh) and outcome: ok, timeout, not_found, never_sent, error.')
      .withTarget(rangeQuery('A', `sum by (via, outcome) (rate(${CALLS}_count{${SVC}}[$__rate_interval]))`, '{{via}} {{outcome}}'))
      .unit('ops')
      .min(0)
      .links(runbookLinks('HyphaServiceCachedProbeFailing', 'HyphaServiceProbeFailing'))
      .height(8)
      .span(12),
  );
  const heatmap = (title: string, via: 'cached' | 'fresh', description: string) =>
    new HeatmapPanel()
      .title(title)
      .description(description)
      .datasource(DS)
      .withTarget(heatmapQuery('A', `sum by (le) (increase(${CALLS}_bucket{${SVC},via="${via}"}[$__rate_interval]))`))
      .calculate(false)
      .unit('s')
      .yAxis(new YAxisConfigBuilder().unit('s'))
      .color(new HeatmapColorOptionsBuilder().mode(HeatmapColorMode.Scheme).scheme('Oranges').fill('dark-orange').exponent(0.5).steps(64))
      .height(8)
      .span(8);
  d.withPanel(heatmap('Call latency, cached proxy', 'cached', 'Distribution of probe call durations through the long-lived (cached) proxy, per histogram bucket.'));
  d.withPanel(heatmap('Call latency, fresh proxy', 'fresh', 'Distribution of probe call durations through a freshly resolved proxy, per histogram bucket.'));
  d.withPanel(
    stateTimelinePanel(valueMap([[0, 'FAILING', 'red'], [1, 'OK', 'green']]))
      .title('Probe success by path')
      .description('Outcome of the last probe call per path over time. Cached failing while fresh succeeds is the stale-proxy symptom.')
      .withTarget(rangeQuery('A', `min by (service, via) (hypha_serve_service_probe_success{${SVC}})`, '{{via}} ({{service}})'))
      .links(runbookLinks('HyphaServiceCachedProbeFailing'))
      .height(8)
      .span(8),
  );
}

export function build(): Dashboard {
  const d = new DashboardBuilder('Service identity (artifact manager)')
    .uid(UID)
    .id(null)
    .description('Providers, fresh and cached client ids of watched Hypha services (e.g. public/artifact-manager), and calls through each.')
    .tags([DASHBOARD_TAG, 'hypha'])
    .readonly()
    .refresh('30s')
    .time({ from: 'now-3h', to: 'now' })
    .timezone('browser')
    .tooltip(DashboardCursorSync.Crosshair)
    .link(packLink())
    .link(runbookIndexLink())
    .withVariable(datasourceVariable())
    .withVariable(clusterVariable())
    .withVariable(jobVariable())
    .withVariable(instanceVariable())
    .withVariable(serviceVariable())
    .withVariable(holderVariable())
    .annotation(
      new AnnotationQueryBuilder()
        .name('Client id changes')
        .datasource(DS)
        .enable(true)
        .iconColor('orange')
        .expr(`sum by (service) (increase(hypha_serve_service_client_id_changes_total{${SVC}}[$__rate_interval])) > 0`)
        .titleFormat('{{service}}: client id changed')
        .tagKeys('service'),
    );
  nowRow(d);
  identityRow(d);
  serverIdRow(d);
  callsRow(d);
  return d.build();
}
