// "Serve ⇄ Hypha overview": for each Serve application, what Ray says, what the Hypha registry
// says and what the BioEngine worker says, side by side; the counts an on-call person checks
// first; and timelines to see since when.
import { DashboardBuilder, DashboardCursorSync, RowBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import { BigValueColorMode, BigValueTextMode, StackingMode, TableCellDisplayMode, StackingConfigBuilder } from '@grafana/grafana-foundation-sdk/common';
import { PanelBuilder as TablePanel } from '@grafana/grafana-foundation-sdk/table';
import { APP_STATUSES, DASHBOARD_TAG, DEPLOYMENT_STATUSES, DS, raySel, REGISTRATION_STATES, sel, stateCode } from './lib/conventions';
import { packLink, rangeQuery, rayDashboardLinks, rayDataLinks, runbookIndexLink, runbookLinks, sourceUpPanel, stateTimelinePanel, statPanel, statQuery, tableQuery, thresholds, timeseriesPanel, valueMap } from './lib/panels';
import { appVariable, rayClusterVariable, clusterVariable, datasourceVariable, instanceVariable, jobVariable, workspaceVariable } from './lib/variables';

export const UID = 'hypha-serve-overview';

const APP = sel(['ray_cluster', 'app']);
/** hypha_serve_app_expected_service_info is the only registration series with a workspace label. */
const REG = sel(['ray_cluster', 'app', 'workspace']);
/**
 * Worker series carry ray_cluster only when the worker can be attributed to one cluster; an
 * unattributed worker (label absent) stays visible whichever clusters are selected.
 */
const WORKER_APP = sel(['app'], 'ray_cluster=~"$ray_cluster|"');
/** Ray's own request counters, per application (and RayCluster on KubeRay: ray_io_cluster). */
const RAY_BY = 'application, ray_io_cluster';
const rayRate = (metric: string) => `sum by (${RAY_BY}) (rate(${metric}{${raySel()}}[$__rate_interval]))`;
/** Identity of a registration: the same app on two exporter replicas (HA) is one row. */
const REG_BY = 'ray_cluster, app';

const APP_STATUS_MAP = valueMap([
  [0, 'other', 'text'],
  [1, 'NOT_STARTED', 'text'],
  [2, 'DEPLOYING', 'blue'],
  [3, 'DEPLOY_FAILED', 'red'],
  [4, 'RUNNING', 'green'],
  [5, 'UNHEALTHY', 'orange'],
  [6, 'DELETING', 'purple'],
]);

const DEPLOYMENT_STATUS_MAP = valueMap([
  [0, 'other', 'text'],
  [1, 'UPDATING', 'blue'],
  [2, 'HEALTHY', 'green'],
  [3, 'UNHEALTHY', 'orange'],
  [4, 'DEPLOY_FAILED', 'red'],
  [5, 'UPSCALING', 'super-light-green'],
  [6, 'DOWNSCALING', 'super-light-green'],
]);

/** Display text and colour of each registration state; the codes follow REGISTRATION_STATES. */
const REGISTRATION_DISPLAY: Record<(typeof REGISTRATION_STATES)[number], [string, string]> = {
  registered: ['registered', 'green'],
  not_running: ['not running yet (not due)', 'blue'],
  missing_scaled_to_zero: ['missing: deregistered at zero', 'orange'],
  missing_never_registered: ['missing: never registered', 'red'],
  missing_crashed: ['missing: crashed', 'red'],
  missing_after_reconnect: ['missing: not back after Hypha reconnect', 'red'],
  missing_history_unknown: ['missing: history unknown', 'red'],
  missing_other: ['missing: other', 'red'],
};
const REGISTRATION_MAP = valueMap([
  [0, 'other', 'text'],
  ...REGISTRATION_STATES.map((st, i): [number, string, string] => [i + 1, ...REGISTRATION_DISPLAY[st]]),
]);

const YES_NO_BAD_NO = valueMap([
  [0, 'no', 'red'],
  [1, 'yes', 'green'],
]);

function summaryRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Now'));
  d.withPanel(
    statPanel()
      .title('Apps RUNNING but not registered')
      .description(
        'Serve applications that Ray reports RUNNING while their expected Hypha service is absent from the registry ' +
          '(hypha_serve_app_registered 0; one per ray_cluster and app, however many exporter replicas report it). ' +
          'Callers get "Service not found" although Ray and the worker look healthy; HyphaServeAppRunningNotRegistered pages after 5 minutes. ' +
          'No value while the Ray or the Hypha source is down: the answer is unknown then.',
      )
      .withTarget(
        statQuery(
          'A',
          `sum(\n  max by (${REG_BY}) (\n    (hypha_serve_app_status{${APP},status="RUNNING"} == 1)\n    * on (job, instance, ${REG_BY}) (1 - hypha_serve_app_registered{${APP}})\n  )\n)`,
        ),
      )
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('green', [[1, 'red']]))
      .colorMode(BigValueColorMode.Background)
      .links(runbookLinks('HyphaServeAppRunningNotRegistered'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Deployments scaled to zero')
      .description(
        'Deployments idle at zero replicas by design (autoscaling min_replicas 0, target 0, status healthy). ' +
          'Their application stays RUNNING and must stay registered in Hypha: a call wakes them (a plain Serve app also through ' +
          'a ready HTTP proxy; a BioEngine app only through its Hypha service or a deployment handle, never over HTTP).',
      )
      .withTarget(statQuery('A', `sum(hypha_serve_deployment_scaled_to_zero{${APP}})`))
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('blue'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Apps DEPLOY_FAILED or UNHEALTHY')
      .description('Serve applications whose status is DEPLOY_FAILED or UNHEALTHY; HyphaServeAppUnhealthy warns after 10 minutes.')
      .withTarget(statQuery('A', `sum(hypha_serve_app_status{${APP},status=~"DEPLOY_FAILED|UNHEALTHY"})`))
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('green', [[1, 'red']]))
      .colorMode(BigValueColorMode.Background)
      .links(runbookLinks('HyphaServeAppUnhealthy'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    statPanel()
      .title('Serve proxies ready')
      .description(
        'Serve HTTP proxies answering 200 on /-/healthz, of all proxies. Only the head-node proxy is kept ready at zero replicas ' +
          '(Ray PR #47002), so it can take the request that wakes a scaled-to-zero app; a worker-node proxy answers 503 until an ' +
          'ingress deployment it routes to has had replicas (then it stays ready), and while it is drained.',
      )
      .withTarget(statQuery('A', `sum(hypha_serve_proxy_ready{${sel(['ray_cluster'])}})`, 'ready'))
      .withTarget(statQuery('B', `count(hypha_serve_proxy_ready{${sel(['ray_cluster'])}})`, 'proxies'))
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('blue'))
      .textMode(BigValueTextMode.ValueAndName)
      .links(runbookLinks('HyphaServeNoProxyCanWakeApps', 'HyphaServeAllProxiesUnready'))
      .height(4)
      .span(4),
  );
  d.withPanel(
    sourceUpPanel(
      'Upstream sources',
      'Whether the exporter could sample each upstream on its last attempt: source ray (label ray_cluster), hypha ' +
        '(the Hypha registry connection, label hypha) and hypha_service (a watched service, labels service and hypha). While one is down, only the series derived ' +
        'from it are absent, and the panels built on them are blank rather than wrong.',
      `min by (source, ray_cluster, hypha, service) (hypha_serve_source_up{${sel()}})`,
      '{{source}} {{ray_cluster}}{{hypha}} {{service}}',
    ),
  );
  d.withPanel(
    statPanel()
      .title('Apps by Serve status')
      .description('Number of Serve applications per status, as reported by the Serve REST API of each cluster.')
      .withTarget(statQuery('A', `count by (status) (hypha_serve_app_status{${APP}} == 1)`, '{{status}}'))
      .unit('short')
      .decimals(0)
      .thresholds(thresholds('text'))
      .textMode(BigValueTextMode.ValueAndName)
      .height(4)
      .span(4),
  );
}

function applicationsRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Applications'));
  d.withPanel(
    new TablePanel()
      .title('Applications')
      .description(
        'One row per Serve application: Serve status, whether Ray has a status message for it, deployments, replicas ' +
          '(summed over its deployments: RUNNING, target, min, max, deployments scaled to zero), the Hypha service it should ' +
          'register (hypha_serve_app_expected_service_info; `*` as client while the worker\'s client id was never known) and ' +
          'whether the registry has it, the registration state (its cause when missing), how long it has been missing, and the ' +
          'status a BioEngine worker reports for it. "Unregistered for" is empty while every app is registered.',
      )
      .datasource(DS)
      .withTarget(tableQuery('A', `max by (ray_cluster, app, status) (hypha_serve_app_status{${APP}} == 1)`))
      .withTarget(tableQuery('B', `count by (ray_cluster, app) (hypha_serve_deployment_target_replicas{${APP}})`))
      .withTarget(tableQuery('C', `sum by (ray_cluster, app) (hypha_serve_deployment_replicas{${APP},state="RUNNING"})`))
      .withTarget(tableQuery('D', `sum by (ray_cluster, app) (hypha_serve_deployment_target_replicas{${APP}})`))
      .withTarget(tableQuery('E', `sum by (ray_cluster, app) (hypha_serve_deployment_min_replicas{${APP}})`))
      .withTarget(tableQuery('F', `sum by (ray_cluster, app) (hypha_serve_deployment_max_replicas{${APP}})`))
      .withTarget(tableQuery('G', `sum by (ray_cluster, app) (hypha_serve_deployment_scaled_to_zero{${APP}})`))
      .withTarget(tableQuery('H', `max by (${REG_BY}) (hypha_serve_app_registered{${APP}})`))
      .withTarget(tableQuery('M', `max by (${REG_BY}, workspace, service) (hypha_serve_app_expected_service_info{${REG}})`))
      .withTarget(tableQuery('I', `max by (ray_cluster, app, state) (hypha_serve_app_registration_state{${APP}} == 1)`))
      .withTarget(tableQuery('J', `time() - max by (ray_cluster, app) (hypha_serve_app_unregistered_since_timestamp_seconds{${APP}})`))
      .withTarget(
        tableQuery(
          'K',
          `max by (ray_cluster, app, worker, worker_status) (\n  label_replace(hypha_serve_worker_app_status{${WORKER_APP}} == 1, "worker_status", "$1", "status", "(.*)")\n)`,
        ),
      )
      .withTarget(tableQuery('L', `max by (ray_cluster, app) (hypha_serve_app_message_present{${APP}})`))
      .withTransformation({ id: 'merge', options: {} })
      .withTransformation({
        id: 'organize',
        options: {
          excludeByName: { Time: true, 'Value #A': true, 'Value #I': true, 'Value #K': true, 'Value #M': true },
          indexByName: {
            ray_cluster: 0, app: 1, status: 2, 'Value #L': 3, 'Value #B': 4, 'Value #C': 5, 'Value #D': 6, 'Value #E': 7,
            'Value #F': 8, 'Value #G': 9, workspace: 10, service: 11, 'Value #H': 12, state: 13, 'Value #J': 14,
            worker: 15, worker_status: 16,
          },
          renameByName: {
            ray_cluster: 'Ray cluster',
            status: 'Serve status',
            'Value #L': 'Message',
            'Value #B': 'Deployments',
            'Value #C': 'Running',
            'Value #D': 'Target',
            'Value #E': 'Min',
            'Value #F': 'Max',
            'Value #G': 'At zero',
            service: 'Hypha service',
            'Value #H': 'Registered',
            state: 'Registration',
            'Value #J': 'Unregistered for',
            worker: 'Worker',
            worker_status: "Worker's status",
          },
        },
      })
      .unit('short')
      .decimals(0)
      .cellOptions({ type: TableCellDisplayMode.Auto })
      .overrideByName('Unregistered for', [
        { id: 'unit', value: 's' },
        { id: 'custom.cellOptions', value: { type: TableCellDisplayMode.ColorText } },
        { id: 'thresholds', value: { mode: 'absolute', steps: [{ value: null, color: 'orange' }, { value: 300, color: 'red' }] } },
      ])
      .overrideByName('Registered', [
        { id: 'mappings', value: [YES_NO_BAD_NO] },
        { id: 'custom.cellOptions', value: { type: TableCellDisplayMode.ColorText } },
      ])
      .overrideByName('Message', [
        { id: 'mappings', value: [valueMap([[0, '', 'text'], [1, 'yes (see Ray)', 'orange']])] },
        { id: 'custom.cellOptions', value: { type: TableCellDisplayMode.ColorText } },
      ])
      .overrideByName('Serve status', [
        {
          id: 'mappings',
          value: [
            {
              type: 'value',
              options: {
                RUNNING: { text: 'RUNNING', color: 'green', index: 0 },
                DEPLOYING: { text: 'DEPLOYING', color: 'blue', index: 1 },
                DEPLOY_FAILED: { text: 'DEPLOY_FAILED', color: 'red', index: 2 },
                UNHEALTHY: { text: 'UNHEALTHY', color: 'orange', index: 3 },
              },
            },
          ],
        },
        { id: 'custom.cellOptions', value: { type: TableCellDisplayMode.ColorText } },
      ])
      .links(runbookLinks('HyphaServeAppRunningNotRegistered', 'HyphaServeAppUnhealthy', 'HyphaServeWorkerAppRunningNotRegistered'))
      .height(9)
      .span(24),
  );
  d.withPanel(
    new TablePanel()
      .title('Apps needing attention')
      .description(
        'Only the applications that need a look: Serve status other than RUNNING, a Hypha registration that is missing ' +
          '(with its cause), or a status message from Ray (read it on the Ray dashboard or the exporter\'s status page). ' +
          'Empty while healthy.',
      )
      .datasource(DS)
      .withTarget(tableQuery('A', `max by (ray_cluster, app, status) (hypha_serve_app_status{${APP},status!="RUNNING"} == 1)`))
      .withTarget(tableQuery('B', `max by (ray_cluster, app, state) (hypha_serve_app_registration_state{${APP},state=~"missing_.+"} == 1)`))
      .withTarget(tableQuery('C', `max by (ray_cluster, app) (hypha_serve_app_message_present{${APP}} == 1)`))
      .withTransformation({ id: 'merge', options: {} })
      .withTransformation({
        id: 'organize',
        options: {
          excludeByName: { Time: true, 'Value #A': true, 'Value #B': true },
          renameByName: { status: 'Serve status', state: 'Registration', 'Value #C': 'Ray message' },
        },
      })
      .unit('short')
      .overrideByName('Ray message', [{ id: 'mappings', value: [valueMap([[1, 'yes', 'orange']])] }])
      .links(runbookLinks('HyphaServeAppUnhealthy', 'HyphaServeAppRunningNotRegistered'))
      .height(6)
      .span(12),
  );
  d.withPanel(
    new TablePanel()
      .title("BioEngine workers' view")
      .description(
        'What each BioEngine worker reports per application (status, and whether it believes the service is registered) next ' +
          'to what the Hypha registry has, joined on Ray cluster and app. A worker saying RUNNING while "Registry has it" is no ' +
          'is incident 1. "Worker says registered" stays empty with every released BioEngine: none reports service_registered. ' +
          'A worker that cannot be attributed to one Ray cluster shows without one, on a row of its own.',
      )
      .datasource(DS)
      .withTarget(
        tableQuery(
          'A',
          `max by (ray_cluster, worker, app, worker_status) (\n  label_replace(hypha_serve_worker_app_status{${WORKER_APP}} == 1, "worker_status", "$1", "status", "(.*)")\n)`,
        ),
      )
      .withTarget(tableQuery('B', `max by (ray_cluster, worker, app) (hypha_serve_worker_app_service_registered{${WORKER_APP}})`))
      .withTarget(tableQuery('C', `max by (${REG_BY}) (hypha_serve_app_registered{${APP}})`))
      .withTarget(tableQuery('D', `max by (${REG_BY}, service) (hypha_serve_app_expected_service_info{${REG}})`))
      .withTransformation({ id: 'merge', options: {} })
      .withTransformation({
        id: 'organize',
        options: {
          excludeByName: { Time: true, 'Value #A': true, 'Value #D': true },
          renameByName: {
            ray_cluster: 'Ray cluster',
            worker: 'Worker',
            worker_status: "Worker's status",
            'Value #B': 'Worker says registered',
            service: 'Hypha service',
            'Value #C': 'Registry has it',
          },
        },
      })
      .unit('short')
      .overrideByName('Worker says registered', [{ id: 'mappings', value: [valueMap([[0, 'no', 'orange'], [1, 'yes', 'green']])] }])
      .overrideByName('Registry has it', [
        { id: 'mappings', value: [YES_NO_BAD_NO] },
        { id: 'custom.cellOptions', value: { type: TableCellDisplayMode.ColorText } },
      ])
      .links(runbookLinks('HyphaServeWorkerAppRunningNotRegistered'))
      .height(6)
      .span(12),
  );
  d.withPanel(
    new TablePanel()
      .title('Deployments')
      .description(
        'One row per Serve deployment: status, RUNNING replicas, replicas on their way (STARTING, UPDATING, RECOVERING, ' +
          'PENDING_MIGRATION), target, min and max, whether it autoscales and whether it is idle at zero by design.',
      )
      .datasource(DS)
      .withTarget(tableQuery('A', `max by (ray_cluster, app, deployment, status) (hypha_serve_deployment_status{${APP}} == 1)`))
      .withTarget(tableQuery('B', `sum by (ray_cluster, app, deployment) (hypha_serve_deployment_replicas{${APP},state="RUNNING"})`))
      .withTarget(
        tableQuery('C', `sum by (ray_cluster, app, deployment) (hypha_serve_deployment_replicas{${APP},state=~"STARTING|UPDATING|RECOVERING|PENDING_MIGRATION"})`),
      )
      .withTarget(tableQuery('D', `max by (ray_cluster, app, deployment) (hypha_serve_deployment_target_replicas{${APP}})`))
      .withTarget(tableQuery('E', `max by (ray_cluster, app, deployment) (hypha_serve_deployment_min_replicas{${APP}})`))
      .withTarget(tableQuery('F', `max by (ray_cluster, app, deployment) (hypha_serve_deployment_max_replicas{${APP}})`))
      .withTarget(tableQuery('G', `max by (ray_cluster, app, deployment) (hypha_serve_deployment_autoscaling{${APP}})`))
      .withTarget(tableQuery('H', `max by (ray_cluster, app, deployment) (hypha_serve_deployment_scaled_to_zero{${APP}})`))
      .withTransformation({ id: 'merge', options: {} })
      .withTransformation({
        id: 'organize',
        options: {
          excludeByName: { Time: true, 'Value #A': true },
          renameByName: {
            status: 'Status',
            'Value #B': 'Running',
            'Value #C': 'On their way',
            'Value #D': 'Target',
            'Value #E': 'Min',
            'Value #F': 'Max',
            'Value #G': 'Autoscaling',
            'Value #H': 'At zero',
          },
        },
      })
      .unit('short')
      .decimals(0)
      .overrideByName('Autoscaling', [{ id: 'mappings', value: [valueMap([[0, 'no', 'text'], [1, 'yes', 'text']])] }])
      .overrideByName('At zero', [{ id: 'mappings', value: [valueMap([[0, 'no', 'text'], [1, 'yes (idle)', 'blue']])] }])
      .links(runbookLinks('HyphaServeDeploymentReplicasMismatch'))
      .height(8)
      .span(24),
  );
}

/**
 * Ray Serve's own HTTP request and error rates per application, under the registration timeline: an app
 * that Ray serves while Hypha has no service for it, or one whose callers fail. Ray's series come from
 * Ray's metrics port (another scrape job), so they are matched by the topology and by app = application.
 */
function rayTrafficPanels(d: DashboardBuilder): void {
  d.withPanel(
    timeseriesPanel()
      .title('HTTP requests per second (Ray Serve)')
      .description(
        "Ray Serve's own count of HTTP requests per application (ray_serve_num_http_requests_total, counted by the Serve " +
          "proxies), from Ray's metrics port: the Prometheus must scrape Ray too. A BioEngine app is called through " +
          'Hypha, not over Serve HTTP, and has none. Click a series for Ray\'s Serve dashboards of that application.',
      )
      .withTarget(rangeQuery('A', rayRate('ray_serve_num_http_requests_total'), '{{application}} {{ray_io_cluster}}'))
      .unit('reqps')
      .dataLinks(rayDataLinks())
      .height(8)
      .span(12),
  );
  d.withPanel(
    timeseriesPanel()
      .title('HTTP errors per second (Ray Serve)')
      .description(
        "Ray Serve's own count of errored HTTP responses per application (ray_serve_num_http_error_requests_total: " +
          'status 4xx/5xx as the proxy counts them), 0 for an application that had requests and no errors. Ray ' +
          'creates the error series at the first error. Click a series for Ray\'s Serve dashboards of that application.',
      )
      .withTarget(
        rangeQuery(
          'A',
          `${rayRate('ray_serve_num_http_error_requests_total')}\nor\n0 * ${rayRate('ray_serve_num_http_requests_total')}`,
          '{{application}} {{ray_io_cluster}}',
        ),
      )
      .unit('reqps')
      .dataLinks(rayDataLinks())
      .height(8)
      .span(12),
  );
}

function timelinesRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Timelines'));
  d.withPanel(
    stateTimelinePanel(APP_STATUS_MAP)
      .title('Serve application status')
      .description('Status of each Serve application over time, as reported by the Serve REST API.')
      .withTarget(rangeQuery('A', stateCode('hypha_serve_app_status', APP, 'status', APP_STATUSES, ['ray_cluster', 'app']), '{{app}} ({{ray_cluster}})'))
      .links(runbookLinks('HyphaServeAppUnhealthy'))
      .height(8)
      .span(12),
  );
  d.withPanel(
    stateTimelinePanel(REGISTRATION_MAP)
      .title('Hypha registration state')
      .description(
        "Registration of each application's expected Hypha service over time: registered; not running yet (Serve still " +
          'deploying or deleting it, not due); or missing with the cause the exporter can tell: deregistered at zero, never ' +
          'registered, crashed, not back after a Hypha reconnect, history unknown (already missing when the exporter started), ' +
          'other. Gaps: the Ray or Hypha source was down, or a registration is settling after a Hypha reconnect.',
      )
      .withTarget(
        rangeQuery('A', stateCode('hypha_serve_app_registration_state', APP, 'state', REGISTRATION_STATES, ['ray_cluster', 'app']), '{{app}} ({{ray_cluster}})'),
      )
      .links(runbookLinks('HyphaServeAppRunningNotRegistered'))
      .height(8)
      .span(12),
  );
  rayTrafficPanels(d);
  d.withPanel(
    stateTimelinePanel(DEPLOYMENT_STATUS_MAP)
      .title('Serve deployment status')
      .description('Status of each Serve deployment over time. UPSCALING/DOWNSCALING are normal autoscaling, not faults.')
      .withTarget(
        rangeQuery(
          'A',
          stateCode('hypha_serve_deployment_status', APP, 'status', DEPLOYMENT_STATUSES, ['ray_cluster', 'app', 'deployment']),
          '{{app}}/{{deployment}} ({{ray_cluster}})',
        ),
      )
      .height(8)
      .span(12),
  );
  d.withPanel(
    stateTimelinePanel(
      valueMap([
        [0, 'worker: not ready', 'orange'],
        [1, 'worker: ready', 'green'],
        [2, 'head: NOT READY', 'red'],
        [3, 'head: ready', 'green'],
      ]),
    )
      .title('Serve proxy readiness per node')
      .description(
        'Whether each node\'s Serve HTTP proxy answers 200 on /-/healthz. A worker-node proxy answers 503 until an ingress ' +
          'deployment it routes to has had replicas, and while drained (orange, expected); the head-node proxy must stay ready (red when not).',
      )
      .withTarget(
        rangeQuery(
          'A',
          `max by (ray_cluster, node_ip, node_id) (\n  hypha_serve_proxy_ready{${sel(['ray_cluster'])}} + 2 * hypha_serve_proxy_head{${sel(['ray_cluster'])}}\n)`,
          '{{node_ip}} ({{ray_cluster}})',
        ),
      )
      .links(runbookLinks('HyphaServeNoProxyCanWakeApps', 'HyphaServeAllProxiesUnready'))
      .height(8)
      .span(12),
  );
}

function replicasRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Replicas'));
  d.withPanel(
    timeseriesPanel()
      .title('RUNNING replicas and target')
      .description('RUNNING replicas and the replica count Serve targets, per deployment. The target drops to 0 when an app scales to zero.')
      .withTarget(rangeQuery('A', `sum by (ray_cluster, app, deployment) (hypha_serve_deployment_replicas{${APP},state="RUNNING"})`, '{{app}}/{{deployment}} running'))
      .withTarget(rangeQuery('B', `max by (ray_cluster, app, deployment) (hypha_serve_deployment_target_replicas{${APP}})`, '{{app}}/{{deployment}} target'))
      .unit('short')
      .decimals(0)
      .min(0)
      .height(8)
      .span(8),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Replicas short of target')
      .description(
        'Target minus RUNNING replicas per deployment (negative: surplus while downscaling). Short while scaling is normal; ' +
          'HyphaServeDeploymentReplicasMismatch warns when it lasts 15 minutes with a constant, non-zero target.',
      )
      .withTarget(
        rangeQuery(
          'A',
          `max by (ray_cluster, app, deployment) (hypha_serve_deployment_target_replicas{${APP}})\n- max by (ray_cluster, app, deployment) (\n    sum by (job, instance, ray_cluster, app, deployment) (hypha_serve_deployment_replicas{${APP},state="RUNNING"})\n  )`,
          '{{app}}/{{deployment}} ({{ray_cluster}})',
        ),
      )
      .unit('short')
      .decimals(0)
      .links(runbookLinks('HyphaServeDeploymentReplicasMismatch'))
      .height(8)
      .span(8),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Replicas by state')
      .description('All replicas of the selected applications by replica state, stacked.')
      .withTarget(rangeQuery('A', `sum by (state) (hypha_serve_deployment_replicas{${APP}})`, '{{state}}'))
      .unit('short')
      .decimals(0)
      .min(0)
      .stacking(new StackingConfigBuilder().mode(StackingMode.Normal))
      .fillOpacity(30)
      .height(8)
      .span(8),
  );
}

function registrationRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Hypha registration'));
  d.withPanel(
    timeseriesPanel()
      .title('Unregistered for')
      .description('How long each application\'s expected Hypha service has been missing from the registry. Empty while every app is registered.')
      .withTarget(rangeQuery('A', `time() - hypha_serve_app_unregistered_since_timestamp_seconds{${APP}}`, '{{app}} ({{ray_cluster}})'))
      .unit('s')
      .min(0)
      .links(runbookLinks('HyphaServeAppRunningNotRegistered'))
      .height(8)
      .span(8),
  );
  d.withPanel(
    stateTimelinePanel(valueMap([[0, 'same client', 'green'], [1, 'other client', 'orange']]))
      .title('Registered under another client id')
      .description(
        "1 while an application's service is registered, but by a different Hypha client than the one the exporter last saw: " +
          'the provider re-registered, and proxies cached before that are stale.',
      )
      .withTarget(rangeQuery('A', `max by (ray_cluster, app) (hypha_serve_app_registration_client_id_mismatch{${APP}})`, '{{app}} ({{ray_cluster}})'))
      .height(8)
      .span(8),
  );
  d.withPanel(
    timeseriesPanel()
      .title('Registration client id changes')
      .description('How often each application\'s service came back under a new Hypha client id (per rate interval).')
      .withTarget(
        rangeQuery('A', `sum by (ray_cluster, app) (increase(hypha_serve_app_registration_client_id_changes_total{${APP}}[$__rate_interval]))`, '{{app}} ({{ray_cluster}})'),
      )
      .unit('short')
      .min(0)
      .links(runbookLinks('HyphaServiceClientIdChurn'))
      .height(8)
      .span(8),
  );
}

/** Warnings before an incident: tickets, not pages. */
function beforeIncidentRow(d: DashboardBuilder): void {
  d.withRow(new RowBuilder('Before the incident'));
  d.withPanel(
    new TablePanel()
      .title('Will the app be deregistered when it idles at zero?')
      .description(
        'Each BioEngine application registered in Hypha now, as the exporter decides it ' +
          '(hypha_serve_app_will_deregister_at_zero): "yes" when its ProxyDeployment runs a BioEngine release up to ' +
          '0.16.2 (hypha_serve_app_bioengine_gate deregisters_at_zero) and one of its deployments autoscales with ' +
          'min_replicas 0: when that deployment idles to zero replicas, the proxy deregisters the service and only a ' +
          'call through the missing service would bring it back (incident 1a). Fix: upgrade the worker to BioEngine ' +
          '0.16.30 or later and redeploy the app; min_replicas >= 1 is a stop-gap (the Deployments table shows min ' +
          'and max). HyphaServeAppWillDeregisterAtZero warns after 1 minute on every "yes".',
      )
      .datasource(DS)
      .withTarget(tableQuery('A', `max by (${REG_BY}, hypha) (hypha_serve_app_will_deregister_at_zero{${APP}})`))
      .withTransformation({
        id: 'organize',
        options: {
          excludeByName: { Time: true },
          renameByName: { ray_cluster: 'Ray cluster', app: 'App', hypha: 'Hypha server', Value: 'Deregistered at zero' },
        },
      })
      .overrideByName('Deregistered at zero', [{ id: 'mappings', value: [valueMap([[0, 'no', 'green'], [1, 'yes: upgrade BioEngine', 'orange']])] }])
      .unit('short')
      .links(runbookLinks('HyphaServeAppWillDeregisterAtZero'))
      .height(6)
      .span(24),
  );
}

export function build(): Dashboard {
  const d = new DashboardBuilder('Serve ⇄ Hypha overview')
    .uid(UID)
    .id(null)
    .description('Ray Serve applications next to their Hypha service registrations: what runs, what callers can reach, since when.')
    .tags([DASHBOARD_TAG, 'ray-serve', 'hypha'])
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
    .withVariable(rayClusterVariable())
    .withVariable(appVariable())
    .withVariable(workspaceVariable());
  for (const l of rayDashboardLinks()) d.link(l);
  summaryRow(d);
  applicationsRow(d);
  timelinesRow(d);
  replicasRow(d);
  registrationRow(d);
  beforeIncidentRow(d);
  return d.build();
}
