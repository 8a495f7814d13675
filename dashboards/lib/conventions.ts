// What every dashboard of the pack shares: the datasource contract, runbook addresses,
// the selector every query starts from, and the tag that links the dashboards together.
import type { DataSourceRef } from '@grafana/grafana-foundation-sdk/common';

/** uid of the Prometheus datasource in dashboards/provisioning/datasources/; the variable's default. */
export const DATASOURCE_UID = 'hypha-serve-prometheus';
export const DATASOURCE_NAME = 'Prometheus (hypha-serve)';

/** Panels and queries point at the `datasource` variable, so any Prometheus can be picked. */
export const DS: DataSourceRef = { type: 'prometheus', uid: '${datasource}' };

/** Same base as the alerts' runbook_url (the directory of docs/runbooks), so a page and a panel open the same runbook. */
export const RUNBOOK_BASE = 'https://github.com/aicell-lab/hypha-serve-exporter/blob/main/docs/runbooks';

export const DASHBOARD_TAG = 'hypha-serve';

/** Alerts in rules/alerts.yml; each has its page docs/runbooks/<AlertName>.md. */
export type AlertName =
  | 'HyphaServeAppRunningNotRegistered'
  | 'HyphaServeWorkerAppRunningNotRegistered'
  | 'HyphaServeAppWillDeregisterAtZero'
  | 'HyphaServiceCachedProxyStale'
  | 'HyphaServiceCachedProxySelfHealing'
  | 'HyphaServiceCachedProbeFailing'
  | 'HyphaServiceProbeFailing'
  | 'HyphaServiceCallLatencyHigh'
  | 'HyphaServiceClientIdChurn'
  | 'HyphaServeServerIdUnstable'
  | 'HyphaServeAppUnhealthy'
  | 'HyphaServeDeploymentReplicasMismatch'
  | 'HyphaServeNoProxyCanWakeApps'
  | 'HyphaServeAllProxiesUnready'
  | 'HyphaServeSourceDown'
  | 'HyphaServeSourceStale'
  | 'HyphaServeExporterDown'
  | 'HyphaServeExporterConfigReloadFailed'
  | 'HyphaServeExporterWebConfigReloadFailed';

/** An alert's runbook page. */
export function runbookUrl(alert: AlertName): string {
  return `${RUNBOOK_BASE}/${alert}.md`;
}

/** The runbooks' index: the shared preamble and a link to every alert's page. */
export const RUNBOOK_INDEX_URL = `${RUNBOOK_BASE}/README.md`;

/** Template variables a query may filter on, besides cluster, job and instance. */
export type FilterVar = 'ray_cluster' | 'app' | 'workspace' | 'service' | 'holder';

/**
 * The topology label: `cluster`, as kubernetes-mixin, Thanos and Mimir name the Prometheus/Kubernetes
 * cluster a series was scraped in (an external or target label, never one the exporter sets). A single
 * Prometheus has no such label, so its variable's All is `.*`, which also matches a series without it;
 * every other variable's All is `.+`. The Ray cluster is a different thing: the label `ray_cluster`.
 */
export const TOPOLOGY_LABEL = 'cluster';

/** The allValue of a template variable (see TOPOLOGY_LABEL). */
export function allValueOf(variable: string): string {
  return variable === TOPOLOGY_LABEL ? '.*' : '.+';
}

/**
 * The label matchers for cluster, job and instance (always) plus the given template variables, e.g.
 * sel(['ray_cluster', 'app']) → cluster=~"$cluster",job=~"$job",instance=~"$instance",ray_cluster=~"$ray_cluster",app=~"$app".
 * Extra literal matchers follow, e.g. sel(['ray_cluster'], 'status="RUNNING"').
 */
export function sel(vars: readonly FilterVar[] = [], ...literal: string[]): string {
  return ['cluster=~"$cluster"', 'job=~"$job"', 'instance=~"$instance"', ...vars.map((v) => `${v}=~"$${v}"`), ...literal].join(',');
}

/**
 * Ray Serve's own request counters (Ray 2.60, ray/serve/_private/request_ingress_metrics.py: tags route,
 * method, application, status_code; the error counter error_code instead of status_code; exported with
 * the ray_ prefix and, as counters, _total). Ray's metrics are scraped from Ray, not from the exporter:
 * they carry neither the exporter's job and instance nor its ray_cluster, so they are selected by the
 * topology label and the app variable mapped onto Ray's `application` label. On KubeRay they also carry
 * `ray_io_cluster` (the RayCluster's name), the label Ray's own dashboards filter on.
 */
export const RAY_SERVE_SERIES = ['ray_serve_num_http_requests_total', 'ray_serve_num_http_error_requests_total'] as const;

/** The matchers of a query over Ray's own series (RAY_SERVE_SERIES). */
export function raySel(): string {
  return 'cluster=~"$cluster",application=~"$app"';
}

/**
 * Uids of the Serve dashboards Ray generates into its session's Grafana provisioning directory, and the
 * names of their variables (Ray 2.60: ray/dashboard/modules/metrics/dashboards/serve_dashboard_panels.py,
 * default_uid="rayServeDashboard"; serve_deployment_dashboard_panels.py, default_uid="rayServeDeploymentDashboard";
 * variables datasource, Application and Cluster (label ray_io_cluster) in serve_grafana_dashboard_base.json
 * and serve_deployment_grafana_dashboard_base.json). test/unit/dashboards.test.ts checks them against the
 * installed Ray.
 */
export const RAY_SERVE_DASHBOARD_UID = 'rayServeDashboard';
export const RAY_SERVE_DEPLOYMENT_DASHBOARD_UID = 'rayServeDeploymentDashboard';
export const RAY_DASHBOARD_VARIABLES = { datasource: 'datasource', application: 'Application', cluster: 'Cluster' } as const;

/**
 * An expression whose value is the 1-based position of the active state of a 0/1 state set
 * (0 when the exporter reports a state this list does not know), one series per `by` group:
 * state timelines then show one row per object instead of one per object and state.
 */
export function stateCode(metric: string, selector: string, label: string, states: readonly string[], by: readonly string[]): string {
  const terms = states.map((s, i) => `${metric}{${selector},${label}="${s}"} * ${i + 1}`);
  return `sum by (${by.join(', ')}) (\n    ${terms.join('\n  or\n    ')}\n)`;
}

export { APP_STATUSES, DEPLOYMENT_STATUSES } from '../../src/snapshot/ray';
export { REGISTRATION_STATES } from '../../src/snapshot/registration';
