// "Exporter health": whether the exporter itself can be trusted right now: scraped, configured,
// and able to sample each upstream, how fresh its data is and why sampling fails.
import { DashboardBuilder, DashboardCursorSync, RowBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import { BigValueColorMode, BigValueTextMode } from '@grafana/grafana-foundation-sdk/common';
import { DASHBOARD_TAG, sel } from './lib/conventions';
import { packLink, rangeQuery, runbookIndexLink, runbookLinks, stateTimelinePanel, statPanel, statQuery, thresholds, timeseriesPanel, UP_DOWN, valueMap } from './lib/panels';
import { clusterVariable, datasourceVariable, instanceVariable, jobVariable } from './lib/variables';

export const UID = 'hypha-serve-exporter-health';

const X = sel();

function nowRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Now'));
  d.withPanel(
    statPanel()
      .title('Scraped by Prometheus')
      .description('Prometheus\' own `up` for each exporter target. While DOWN every other panel and alert of the pack is blind.')
      .withTarget(statQuery('A', `up{${X}}`, '{{instance}}'))
      .unit('none')
      .mappings([UP_DOWN])
      .thresholds(thresholds('red', [[1, 'green']]))
      .colorMode(BigValueColorMode.Background)
      .textMode(BigValueTextMode.ValueAndName)
      .links(runbookLinks('HyphaServeExporterDown'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Version')
      .description('Exporter version and revision per instance (hypha_serve_exporter_build_info).')
      .withTarget(statQuery('A', `max by (instance, version, revision) (hypha_serve_exporter_build_info{${X}})`, '{{version}} ({{revision}})'))
      .unit('none')
      .thresholds(thresholds('text'))
      .textMode(BigValueTextMode.Name)
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Last config reload')
      .description('Whether the last configuration (re)load succeeded. After a failed reload the exporter keeps running the previous configuration.')
      .withTarget(statQuery('A', `min by (instance) (hypha_serve_exporter_config_last_reload_successful{${X}})`, '{{instance}}'))
      .unit('none')
      .mappings([valueMap([[0, 'FAILED', 'red'], [1, 'OK', 'green']])])
      .thresholds(thresholds('red', [[1, 'green']]))
      .colorMode(BigValueColorMode.Background)
      .links(runbookLinks('HyphaServeExporterConfigReloadFailed'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Configuration age')
      .description('Time since the configuration was last loaded successfully.')
      .withTarget(statQuery('A', `time() - max by (instance) (hypha_serve_exporter_config_last_reload_success_timestamp_seconds{${X}})`, '{{instance}}'))
      .unit('s')
      .thresholds(thresholds('text'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Web config (TLS, auth)')
      .description(
        'Whether the last re-read of --web.config.file succeeded ("not used" without one). It is re-read when it or a ' +
          'certificate, key or CA file it names changes; after a failure the previous certificate and users stay in effect.',
      )
      // -1 = the exporter runs without --web.config.file (the families are absent then).
      .withTarget(statQuery('A', `min by (instance) (hypha_serve_exporter_web_config_last_reload_successful{${X}}) or on (instance) (max by (instance) (hypha_serve_exporter_build_info{${X}}) * 0 - 1)`, '{{instance}}'))
      .unit('none')
      .mappings([valueMap([[-1, 'not used', 'text'], [0, 'FAILED', 'red'], [1, 'OK', 'green']])])
      .thresholds(thresholds('red', [[1, 'green']]))
      .colorMode(BigValueColorMode.Background)
      .links(runbookLinks('HyphaServeExporterWebConfigReloadFailed'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Upstreams down')
      .description(
        'Configured upstreams the exporter failed to sample on its last attempt: Ray clusters (source ray), the Hypha registry ' +
          'connection (source hypha) and watched services (source hypha_service).',
      )
      .withTarget(statQuery('A', `sum(1 - hypha_serve_source_up{${X}})`))
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('green', [[1, 'red']]))
      .colorMode(BigValueColorMode.Background)
      .links(runbookLinks('HyphaServeSourceDown'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Stuck samplers')
      .description(
        'Upstreams whose last successful sample is older than 3 × their sampling interval + 60 s although source_up still ' +
          'says 1: the sampler itself is stuck (HyphaServeSourceStale). A down upstream is not counted here.',
      )
      .withTarget(
        statQuery(
          'A',
          `count(\n  (hypha_serve_source_sample_age_seconds{${X}} > 3 * hypha_serve_source_interval_seconds{${X}} + 60)\n  and on (job, instance, source, ray_cluster, hypha, service) (hypha_serve_source_up{${X}} == 1)\n) or vector(0)`,
        ),
      )
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('green', [[1, 'red']]))
      .colorMode(BigValueColorMode.Background)
      .links(runbookLinks('HyphaServeSourceStale'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Hypha connection generation')
      .description('How many times the exporter has (re)connected to each Hypha server since it started; it rises by one per reconnect.')
      .withTarget(statQuery('A', `max by (hypha) (hypha_serve_hypha_connection_generation{${X}})`, '{{hypha}}'))
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('text'))
      .textMode(BigValueTextMode.ValueAndName)
      .height(4)
      .span(4),
  );
}

function sourcesRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Upstream sampling'));
  d.withPanel(
    stateTimelinePanel(UP_DOWN)
      .title('Source up per upstream')
      .description('Whether each sample of each upstream succeeded. While DOWN, that upstream\'s series are absent (never stale).')
      .withTarget(rangeQuery('A', `min by (source, ray_cluster, hypha, service) (hypha_serve_source_up{${X}})`, '{{source}} {{ray_cluster}}{{hypha}} {{service}}'))
      .links(runbookLinks('HyphaServeSourceDown'))
      .height(6)
      .span(24),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Sample age')
      .description(
        'Age of the data served for each upstream: now minus its last successful sample, next to its configured sampling ' +
          'interval (hypha_serve_source_interval_seconds). Healthy, the age stays below the interval plus the sample duration. ' +
          'It grows without bound while the upstream is down, and also while source_up stays 1 if the sampler is stuck: ' +
          'HyphaServeSourceStale fires above 3 × interval + 60 s.',
      )
      .withTarget(rangeQuery('A', `max by (instance, source, ray_cluster, hypha, service) (hypha_serve_source_sample_age_seconds{${X}})`, '{{source}} {{ray_cluster}}{{hypha}} {{service}} age ({{instance}})'))
      .withTarget(rangeQuery('B', `max by (instance, source, ray_cluster, hypha, service) (hypha_serve_source_interval_seconds{${X}})`, '{{source}} {{ray_cluster}}{{hypha}} {{service}} interval ({{instance}})'))
      .unit('s')
      .min(0)
      .links(runbookLinks('HyphaServeSourceStale'))
      .height(8)
      .span(12),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Sample duration')
      .description('Duration of the last sample attempt per upstream; attempts are cut at the configured timeout.')
      .withTarget(rangeQuery('A', `max by (source, ray_cluster, hypha, service) (hypha_serve_source_sample_duration_seconds{${X}})`, '{{source}} {{ray_cluster}}{{hypha}} {{service}}'))
      .unit('s')
      .min(0)
      .height(8)
      .span(12),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Sampling errors by reason')
      .description(
        'Failed samples per rate interval by upstream and reason (timeout, connect, http_status, too_large, bad_json, schema, auth, auth_secret_changed, rpc, other). ' +
          'Empty while healthy: only reasons that occurred are drawn.',
      )
      .withTarget(rangeQuery('A', `sum by (source, ray_cluster, hypha, service, reason) (increase(hypha_serve_source_errors_total{${X}}[$__rate_interval])) > 0`, '{{source}} {{ray_cluster}}{{hypha}} {{service}}: {{reason}}'))
      .unit('short')
      .min(0)
      .links(runbookLinks('HyphaServeSourceDown'))
      .height(8)
      .span(12),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Hypha reconnects')
      .description('Reconnections of the exporter\'s Hypha client per rate interval. A steady trickle means the connection keeps dropping.')
      .withTarget(rangeQuery('A', `sum by (hypha) (increase(hypha_serve_hypha_reconnects_total{${X}}[$__rate_interval]))`, '{{hypha}}'))
      .unit('short')
      .min(0)
      .height(8)
      .span(12),
  );
}

function exporterRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Exporter'));
  d.withPanel(
    timeseriesPanel()
      .title('Config reloads')
      .description('Successful configuration loads per rate interval, and whether the last (re)load succeeded (1) or failed (0).')
      .withTarget(rangeQuery('A', `changes(hypha_serve_exporter_config_last_reload_success_timestamp_seconds{${X}}[$__rate_interval])`, '{{instance}} successful loads'))
      .withTarget(rangeQuery('B', `hypha_serve_exporter_config_last_reload_successful{${X}}`, '{{instance}} last reload ok'))
      .unit('short')
      .min(0)
      .links(runbookLinks('HyphaServeExporterConfigReloadFailed'))
      .height(8)
      .span(8),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Scrape duration and size')
      .description('How long Prometheus takes to scrape the exporter, and how many samples a scrape returns (right axis).')
      .withTarget(rangeQuery('A', `scrape_duration_seconds{${X}}`, '{{instance}} duration'))
      .withTarget(rangeQuery('B', `scrape_samples_scraped{${X}}`, '{{instance}} samples'))
      .unit('s')
      .min(0)
      .overrideByQuery('B', [
        { id: 'unit', value: 'short' },
        { id: 'custom.axisPlacement', value: 'right' },
      ])
      .links(runbookLinks('HyphaServeExporterDown'))
      .height(8)
      .span(8),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Serve API entries skipped')
      .description(
        'Applications left out by the per-cluster max_apps cap, and malformed applications, deployments or proxies skipped in ' +
          'Serve API answers, per rate interval.',
      )
      .withTarget(rangeQuery('A', `sum by (ray_cluster) (increase(hypha_serve_cluster_apps_dropped_total{${X}}[$__rate_interval]))`, '{{ray_cluster}} apps dropped (max_apps)'))
      .withTarget(rangeQuery('B', `sum by (ray_cluster) (increase(hypha_serve_cluster_malformed_entries_total{${X}}[$__rate_interval]))`, '{{ray_cluster}} malformed entries'))
      .unit('short')
      .min(0)
      .height(8)
      .span(8),
  );
}

export function build(): Dashboard {
  const d = new DashboardBuilder('Exporter health (hypha-serve-exporter)')
    .uid(UID)
    .id(null)
    .description('Is hypha-serve-exporter scraped, configured and able to sample Ray and Hypha; how fresh is its data.')
    .tags([DASHBOARD_TAG])
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
    .withVariable(instanceVariable());
  nowRow(d);
  sourcesRow(d);
  exporterRow(d);
  return d.build();
}
