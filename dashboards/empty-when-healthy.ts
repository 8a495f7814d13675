// Side table of the panel queries that return nothing while everything is healthy, and the
// fault that makes them return data. The live test (test/integration/dashboards-live.test.ts)
// requires every other query to return data in a healthy state, and each of these to return
// data once its fault is induced in the same run; docs/dashboards.md lists them for operators.

/** A fault the live test induces (FAULT_SCENARIOS says how). */
export type FaultScenario = 'deploy-failed' | 'ray-source-down' | 'app-unregistered' | 'service-reregistered';

export const FAULT_SCENARIOS: Record<FaultScenario, string> = {
  'deploy-failed': 'a Serve application ends DEPLOY_FAILED (test/ray-apps/bad-import.yaml)',
  'ray-source-down': "the Ray dashboard (the Serve REST API) stops answering",
  'app-unregistered': 'a RUNNING Serve application has no service in the Hypha registry (a BioEngine 0.16.1 proxy deregisters when its Model idles at min_replicas 0)',
  'service-reregistered': 'a watched service re-registers under a new client id (Hypha restarts under a new server id: public/artifact-manager)',
};

export interface EmptyWhenHealthy {
  /** Dashboard uid. */
  dashboard: string;
  /** Panel title, or `annotation:<name>` for an annotation query. */
  panel: string;
  /** The queries of that panel that are empty while healthy. */
  refIds: string[];
  scenario: FaultScenario;
}

export const EMPTY_WHEN_HEALTHY: readonly EmptyWhenHealthy[] = [
  { dashboard: 'hypha-serve-overview', panel: 'Applications', refIds: ['J'], scenario: 'app-unregistered' },
  { dashboard: 'hypha-serve-overview', panel: 'Apps needing attention', refIds: ['A', 'C'], scenario: 'deploy-failed' },
  { dashboard: 'hypha-serve-overview', panel: 'Apps needing attention', refIds: ['B'], scenario: 'app-unregistered' },
  { dashboard: 'hypha-serve-overview', panel: 'Unregistered for', refIds: ['A'], scenario: 'app-unregistered' },
  { dashboard: 'hypha-serve-service-identity', panel: 'Since the last client id change', refIds: ['A'], scenario: 'service-reregistered' },
  { dashboard: 'hypha-serve-service-identity', panel: 'annotation:Client id changes', refIds: ['Anno'], scenario: 'service-reregistered' },
  // Absent until the exporter saw the server come back at all; the fault restarts Hypha under a new id.
  { dashboard: 'hypha-serve-service-identity', panel: 'Came back under another server id', refIds: ['A'], scenario: 'service-reregistered' },
  { dashboard: 'hypha-serve-exporter-health', panel: 'Sampling errors by reason', refIds: ['A'], scenario: 'ray-source-down' },
];

/** The side-table entry covering one query, if any. */
export function emptyWhenHealthy(dashboard: string, panel: string, refId: string): EmptyWhenHealthy | undefined {
  return EMPTY_WHEN_HEALTHY.find((e) => e.dashboard === dashboard && e.panel === panel && e.refIds.includes(refId));
}
