// Template variables, following grafana/dashboard-linter: one `datasource` variable labelled
// "Data Source"; the topology variable cluster, then job and instance (then the narrower ones), each
// filtering on the ones before it, as multi-value Prometheus query variables with All = ".+" (cluster:
// ".*", see TOPOLOGY_LABEL), refreshed on time-range change so vanished targets drop out.
import {
  DatasourceVariableBuilder,
  QueryVariableBuilder,
  VariableRefresh,
  VariableSort,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { allValueOf, DATASOURCE_NAME, DATASOURCE_UID, DS, sel, TOPOLOGY_LABEL } from './conventions';

export function datasourceVariable(): DatasourceVariableBuilder {
  return new DatasourceVariableBuilder('datasource')
    .label('Data Source')
    .description('Prometheus that scrapes hypha-serve-exporter and loads rules/recording.yml.')
    .type('prometheus')
    .current({ selected: true, text: DATASOURCE_NAME, value: DATASOURCE_UID });
}

function labelVariable(name: string, label: string, query: string, description: string): QueryVariableBuilder {
  return new QueryVariableBuilder(name)
    .label(label)
    .description(description)
    .datasource(DS)
    .query(query)
    .definition(query)
    .refresh(VariableRefresh.OnTimeRangeChanged)
    .sort(VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue(allValueOf(name))
    .current({ selected: true, text: ['All'], value: ['$__all'] });
}

export function clusterVariable(): QueryVariableBuilder {
  return labelVariable(
    TOPOLOGY_LABEL,
    'cluster',
    `label_values(hypha_serve_exporter_build_info, ${TOPOLOGY_LABEL})`,
    'Prometheus/Kubernetes cluster (the multi-cluster label of Thanos, Mimir, kubernetes-mixin); empty with a single Prometheus, where All matches every series.',
  );
}

export function jobVariable(): QueryVariableBuilder {
  return labelVariable('job', 'job', 'label_values(hypha_serve_exporter_build_info{cluster=~"$cluster"}, job)', 'Prometheus job(s) scraping the exporter.');
}

export function instanceVariable(): QueryVariableBuilder {
  return labelVariable(
    'instance',
    'instance',
    'label_values(hypha_serve_exporter_build_info{cluster=~"$cluster",job=~"$job"}, instance)',
    'Exporter instance(s); two instances watching the same Ray cluster are an HA pair.',
  );
}

export function rayClusterVariable(): QueryVariableBuilder {
  // Serve proxies exist as long as Serve runs, apps or not.
  return labelVariable(
    'ray_cluster',
    'Ray cluster',
    `label_values(hypha_serve_proxy_status{${sel()}}, ray_cluster)`,
    'Ray cluster(s), as named in the exporter configuration (label ray_cluster).',
  );
}

export function appVariable(): QueryVariableBuilder {
  return labelVariable('app', 'app', `label_values(hypha_serve_app_info{${sel(['ray_cluster'])}}, app)`, 'Ray Serve application(s).');
}

export function workspaceVariable(): QueryVariableBuilder {
  return labelVariable(
    'workspace',
    'workspace',
    `label_values(hypha_serve_app_expected_service_info{${sel(['ray_cluster', 'app'])}}, workspace)`,
    'Hypha workspace(s) the apps are expected to register their services in.',
  );
}

export function serviceVariable(): QueryVariableBuilder {
  return labelVariable(
    'service',
    'service',
    `label_values(hypha_serve_service_providers{${sel()}}, service)`,
    'Watched Hypha service(s), e.g. public/artifact-manager.',
  );
}

export function holderVariable(): QueryVariableBuilder {
  return labelVariable(
    'holder',
    'holder',
    `label_values(hypha_serve_service_cached_info{${sel(['service'])}}, holder)`,
    'Holders of a cached service proxy: "exporter" (the canary) or a configured client.',
  );
}
