// Small constructors over the SDK builders for the pieces every dashboard repeats.
import {
  DashboardLinkBuilder,
  DashboardLinkType,
  MappingType,
  ThresholdsConfigBuilder,
  ThresholdsMode,
  type Threshold,
  type ValueMapping,
} from '@grafana/grafana-foundation-sdk/dashboard';
import {
  BigValueColorMode,
  BigValueGraphMode,
  BigValueTextMode,
  LegendDisplayMode,
  LegendPlacement,
  ReduceDataOptionsBuilder,
  SortOrder,
  TooltipDisplayMode,
  VizLegendOptionsBuilder,
  VizTooltipOptionsBuilder,
} from '@grafana/grafana-foundation-sdk/common';
import { DataqueryBuilder, PromQueryFormat } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as StatPanelBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as StateTimelinePanelBuilder } from '@grafana/grafana-foundation-sdk/statetimeline';
import { PanelBuilder as TimeseriesPanelBuilder } from '@grafana/grafana-foundation-sdk/timeseries';
import {
  type AlertName,
  DASHBOARD_TAG,
  DS,
  RAY_DASHBOARD_VARIABLES,
  RAY_SERVE_DASHBOARD_UID,
  RAY_SERVE_DEPLOYMENT_DASHBOARD_UID,
  RUNBOOK_INDEX_URL,
  runbookUrl,
} from './conventions';

/** A range query for graphs and timelines. */
export function rangeQuery(refId: string, expr: string, legend = ''): DataqueryBuilder {
  const q = new DataqueryBuilder().datasource(DS).refId(refId).expr(expr).range();
  return legend === '' ? q : q.legendFormat(legend);
}

/** An instant query in table format, for table panels (one row per series). */
export function tableQuery(refId: string, expr: string): DataqueryBuilder {
  return new DataqueryBuilder().datasource(DS).refId(refId).expr(expr).instant().format(PromQueryFormat.Table);
}

/** An instant query for stat panels: the current value, not a reduction over the range. */
export function statQuery(refId: string, expr: string, legend = ''): DataqueryBuilder {
  const q = new DataqueryBuilder().datasource(DS).refId(refId).expr(expr).instant();
  return legend === '' ? q : q.legendFormat(legend);
}

/** A heatmap query: increase per bucket, one series per `le`. */
export function heatmapQuery(refId: string, expr: string): DataqueryBuilder {
  return new DataqueryBuilder().datasource(DS).refId(refId).expr(expr).range().format(PromQueryFormat.Heatmap).legendFormat('{{le}}');
}

/** Panel links to the runbook pages of the alerts a panel helps to diagnose. */
export function runbookLinks(...alerts: AlertName[]): DashboardLinkBuilder[] {
  return alerts.map((a) => new DashboardLinkBuilder(`Runbook: ${a}`).type(DashboardLinkType.Link).url(runbookUrl(a)).targetBlank(true));
}

/** The dashboard-level dropdown to the other dashboards of the pack, keeping time and variables. */
export function packLink(): DashboardLinkBuilder {
  return new DashboardLinkBuilder('Hypha Serve dashboards')
    .type(DashboardLinkType.Dashboards)
    .tags([DASHBOARD_TAG])
    .asDropdown(true)
    .includeVars(true)
    .keepTime(true);
}

const RAY_DASHBOARDS = [
  [RAY_SERVE_DASHBOARD_UID, 'Ray Serve'],
  [RAY_SERVE_DEPLOYMENT_DASHBOARD_UID, 'Ray Serve deployments'],
] as const;

/**
 * Dashboard-level links to the Serve dashboards Ray provisions (Ray's own Grafana, or ours when its
 * provisioning files are loaded too), keeping the time range and the Prometheus. Our other variables
 * have no counterpart there: the app is carried by the data links of the Ray panels (rayDataLinks).
 */
export function rayDashboardLinks(): DashboardLinkBuilder[] {
  return RAY_DASHBOARDS.map(([uid, title]) =>
    new DashboardLinkBuilder(title)
      .type(DashboardLinkType.Link)
      .icon('dashboard')
      .tooltip(`Ray's own dashboard (uid ${uid})`)
      .url(`/d/${uid}?var-${RAY_DASHBOARD_VARIABLES.datasource}=\${datasource}`)
      .keepTime(true)
      .includeVars(false)
      .targetBlank(true),
  );
}

/**
 * Per-series links from a panel over Ray's series (grouped by `application` and `ray_io_cluster`) to Ray's Serve
 * dashboards for that application and RayCluster, over the same time range and Prometheus. Off KubeRay the series
 * has no `ray_io_cluster`: the link sets `Cluster` empty, and Ray's filter `ray_io_cluster=~""` then matches the
 * series without the label, which are that cluster's.
 */
export function rayDataLinks(): DashboardLinkBuilder[] {
  return RAY_DASHBOARDS.map(([uid, title]) =>
    new DashboardLinkBuilder(`${title}: \${__field.labels.application}`)
      .type(DashboardLinkType.Link)
      .url(
        `/d/${uid}?\${__url_time_range}&var-${RAY_DASHBOARD_VARIABLES.datasource}=\${datasource}` +
          `&var-${RAY_DASHBOARD_VARIABLES.application}=\${__field.labels.application}` +
          `&var-${RAY_DASHBOARD_VARIABLES.cluster}=\${__field.labels.ray_io_cluster}`,
      )
      .targetBlank(true),
  );
}

export function runbookIndexLink(): DashboardLinkBuilder {
  return new DashboardLinkBuilder('Runbooks')
    .type(DashboardLinkType.Link)
    .icon('doc')
    .url(RUNBOOK_INDEX_URL)
    .targetBlank(true);
}

/** Value → text and colour; `[value, text, color]` triples. */
export function valueMap(entries: ReadonlyArray<readonly [number, string, string]>): ValueMapping {
  const options: Record<string, { text: string; color: string; index: number }> = {};
  entries.forEach(([value, text, color], index) => {
    options[String(value)] = { text, color, index };
  });
  return { type: MappingType.ValueToText, options };
}

/** Absolute thresholds from a base colour and `[from, color]` steps. */
export function thresholds(base: string, steps: ReadonlyArray<readonly [number, string]> = []): ThresholdsConfigBuilder {
  const all: Threshold[] = [{ value: null, color: base }, ...steps.map(([value, color]) => ({ value, color }))];
  return new ThresholdsConfigBuilder().mode(ThresholdsMode.Absolute).steps(all);
}

export const UP_DOWN = valueMap([
  [0, 'DOWN', 'red'],
  [1, 'UP', 'green'],
]);

/** A stat panel showing the current value of instant queries (no sparkline: there is no range). */
export function statPanel(): StatPanelBuilder {
  return new StatPanelBuilder()
    .datasource(DS)
    .graphMode(BigValueGraphMode.None)
    .reduceOptions(new ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false));
}

/**
 * UP/DOWN per source of hypha_serve_source_up, linked to the source alerts: the same panel on every
 * dashboard that depends on a source, with its own selection and text.
 */
export function sourceUpPanel(title: string, description: string, expr: string, legend: string): StatPanelBuilder {
  return statPanel()
    .title(title)
    .description(description)
    .withTarget(statQuery('A', expr, legend))
    .unit('none')
    .mappings([valueMap([[0, 'DOWN', 'red'], [1, 'UP', 'green']])])
    .thresholds(thresholds('red', [[1, 'green']]))
    .colorMode(BigValueColorMode.Background)
    .textMode(BigValueTextMode.ValueAndName)
    .links(runbookLinks('HyphaServeSourceDown', 'HyphaServeSourceStale'))
    .height(4)
    .span(4);
}

/** Legend as a table on the right with the last and the maximum value. */
export function legendTable(): VizLegendOptionsBuilder {
  return new VizLegendOptionsBuilder().displayMode(LegendDisplayMode.Table).placement(LegendPlacement.Right).showLegend(true).calcs(['lastNotNull', 'max']);
}

/** Legend as a list under the panel (for state timelines: the colours of the states). */
export function legendList(): VizLegendOptionsBuilder {
  return new VizLegendOptionsBuilder().displayMode(LegendDisplayMode.List).placement(LegendPlacement.Bottom).showLegend(true);
}

/**
 * A graph with a visible legend and a tooltip listing every series (the SDK's defaults hide the
 * legend, unlike Grafana's own).
 */
export function timeseriesPanel(): TimeseriesPanelBuilder {
  return new TimeseriesPanelBuilder()
    .datasource(DS)
    .legend(legendTable())
    .tooltip(new VizTooltipOptionsBuilder().mode(TooltipDisplayMode.Multi).sort(SortOrder.Descending));
}

/**
 * A state timeline with the legend of its states shown: every value is a
 * state code, named and coloured by the mapping (the thresholds play no part).
 */
export function stateTimelinePanel(states: ValueMapping): StateTimelinePanelBuilder {
  return new StateTimelinePanelBuilder()
    .datasource(DS)
    .legend(legendList())
    .tooltip(new VizTooltipOptionsBuilder().mode(TooltipDisplayMode.Single).sort(SortOrder.None))
    .unit('none')
    .mappings([states])
    .thresholds(thresholds('text'));
}
