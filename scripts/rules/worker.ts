// Group hypha-serve-worker: the BioEngine worker's view of incident 1 (a worker says an app is RUNNING
// while the registry has no service for it). A group of its own, not part of hypha-serve-registration: it
// reads no series that group records (its fact is recorded here, in order, from the exporter's series),
// and Prometheus evaluates groups concurrently, so at 1,000 paging apps neither group's evaluation holds
// up the other's (docs/alerts.md "Cost").
import type { MixinConfig } from './config';
import { alert, Group } from './model';
import { block, bridge, humanDuration, ID, labels, m, prose, queryOf, registrationGuards } from './promql';

export const WORKER = {
  notRegistered: 'ray_cluster_app:hypha_serve_app_not_registered:bool',
  workerRunningNotRegistered: 'ray_cluster_app_worker:hypha_serve_worker_app_running_not_registered:bool',
  workerAppRunningNotRegistered: 'ray_cluster_app:hypha_serve_worker_app_running_not_registered:bool',
  workerAppRunningNotRegisteredBridged: 'ray_cluster_app:hypha_serve_worker_app_running_not_registered:bridged',
} as const;

export function workerGroup(c: MixinConfig): Group {
  const R = WORKER;
  const l = labels(c);
  const B = c.bridge;
  const state = m('hypha_serve_app_registration_state');
  const worker = `{{ range $i, $w := ${queryOf(c, R.workerRunningNotRegistered, ID.app, { wrap: (s) => `max by (worker) (${s} == 1)` })} | sortByLabel "worker" }}{{ if $i }}, {{ end }}{{ $w.Labels.worker }}` +
    '{{ else }}none answers now: it left the Hypha registry or has not answered since; a restarted worker is asked at its next cross-check{{ end }}';
  return {
    name: 'hypha-serve-worker',
    rules: [
      {
        record: R.notRegistered,
        comment: 'Per exporter replica: the registry has no service for the app (a missing_* state): 1; registered or not_running: 0; unknown: absent.',
        expr: block(`
          max without (state) (${state}{state=~"missing_.*"})
          ${registrationGuards(l).replace(/\n/g, '\n          ')}
        `),
      },
      {
        record: R.workerRunningNotRegistered,
        comment:
          'Per exporter replica and worker: the BioEngine worker says RUNNING (and registered, where it says at all) while the ' +
          'registry has no service for the same (ray_cluster, app): 1, else 0. A worker not attributed to a cluster has ' +
          'ray_cluster="" and joins nothing.',
        expr: block(`
          (
              max without (status) (${m('hypha_serve_worker_app_status')}{status="RUNNING"})
            * on (${l.of('instance', 'hypha', 'worker')}) group_left ()
              (${m('hypha_serve_worker_up')} == 1)
          )
          * on (${l.of('instance', 'hypha', 'worker', 'ray_cluster', 'app')}) group_left ()
            (
                (${m('hypha_serve_worker_app_service_registered')} != bool 0)
              or
                (max without (status) (${m('hypha_serve_worker_app_status')}) * 0 + 1)
            )
          * on (${l.of('instance', ...ID.app)}) group_left ()
            ${R.notRegistered}
        `),
      },
      {
        record: R.workerAppRunningNotRegistered,
        comment:
          'Per exporter replica, the worker alert\'s fact with the identity of the app (a worker restart changes the ' +
          'worker\'s client id, not the app). 1/0 from the workers that answer now; while none answers (a restarting worker, ' +
          'a departed one: the exporter ends a departed worker\'s series at once) it is 0 when the registry side knows no ' +
          'service is missing (registered again, or not running), else absent: a restart is a gap, not an end.',
        expr: block(`
            max without (worker) (${R.workerRunningNotRegistered})
          or
            (
                (${R.notRegistered} == 0)
              and on (${l.of('instance', ...ID.app)})
                max without (worker) (last_over_time(${R.workerRunningNotRegistered}[${B}]))
            )
        `),
      },
      {
        record: R.workerAppRunningNotRegisteredBridged,
        comment: 'The worker alert\'s fact per app, over the exporter replicas and bridged.',
        expr: bridge(c, R.workerAppRunningNotRegistered, ID.app),
      },
      alert(c, 'HyphaServeWorkerAppRunningNotRegistered', {
        comment:
          'The operator\'s view of incident 1: a BioEngine worker says RUNNING while the registry has nothing for the same ' +
          '(ray_cluster, app). Identity of the app: the worker\'s client id changes at every worker restart, so it is in ' +
          'the text (annotation worker), and a restart neither splits nor restarts the page.',
        expr: `${R.workerAppRunningNotRegisteredBridged} == 1\n`,
        annotations: {
          summary: 'BioEngine worker reports an app RUNNING that has no Hypha service.',
          worker,
          description: prose(`
            A BioEngine worker reports app {{ $labels.app }} of Ray cluster {{ $labels.ray_cluster }} as RUNNING, but Hypha
            server {{ $labels.hypha }} has had no service for it for more than
            ${humanDuration(c.alerts.HyphaServeWorkerAppRunningNotRegistered.for)}. Anyone trusting the worker's status sees a
            healthy app that callers cannot reach (the worker annotation names the workers that say so;
            HyphaServeAppRunningNotRegistered names the expected service and the cause).
          `),
        },
      }),
    ],
  };
}
