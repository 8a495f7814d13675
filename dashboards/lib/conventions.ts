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

/** Template variables a query may filter on, besides job and instance. */
export type FilterVar = 'ray_cluster' | 'app' | 'workspace' | 'service' | 'holder';

/**
 * The label matchers for job and instance (always) plus the given template variables, e.g.
 * sel(['ray_cluster', 'app']) → job=~"$job",instance=~"$instance",ray_cluster=~"$ray_cluster",app=~"$app".
 * Extra literal matchers follow, e.g. sel(['ray_cluster'], 'status="RUNNING"'). The Ray cluster label is
 * `ray_cluster`, not `cluster`: multi-cluster Prometheus setups (kubernetes-mixin, Thanos, Mimir) use
 * `cluster` as the external label of the Prometheus/Kubernetes cluster.
 */
export function sel(vars: readonly FilterVar[] = [], ...literal: string[]): string {
  return ['job=~"$job"', 'instance=~"$instance"', ...vars.map((v) => `${v}=~"$${v}"`), ...literal].join(',');
}

/**
 * An expression whose value is the 1-based position of the active state of a 0/1 state set
 * (0 when the exporter reports a state this list does not know), one series per `by` group:
 * state timelines then show one row per object instead of one per object and state.
 */
export function stateCode(metric: string, selector: string, label: string, states: readonly string[], by: readonly string[]): string {
  const terms = states.map((s, i) => `${metric}{${selector},${label}="${s}"} * ${i + 1}`);
  return `sum by (${by.join(', ')}) (\n    ${terms.join('\n  or\n    ')}\n)`;
}

export const APP_STATES = ['NOT_STARTED', 'DEPLOYING', 'DEPLOY_FAILED', 'RUNNING', 'UNHEALTHY', 'DELETING'] as const;
export const DEPLOYMENT_STATES = ['UPDATING', 'HEALTHY', 'UNHEALTHY', 'DEPLOY_FAILED', 'UPSCALING', 'DOWNSCALING'] as const;
export { REGISTRATION_STATES } from '../../src/snapshot/registration';
