// Group hypha-serve-worker: the BioEngine worker's view of incident 1 (a worker says an app is RUNNING
// while the registry has no service for it). The exporter decides it (metric contract v0.4); the rule
// adds the max over HA replicas and the gap bridge, as the registration group does.
import type { MixinConfig } from './config';
import { alert, Group } from './model';
import { decidedOver, humanDuration, ID, m, prose } from './promql';

/**
 * The workers that say the app is RUNNING, for the `worker` annotation: one query over the exporter's
 * worker series of the app (the worker's client id changes at every restart, so it is text, not identity).
 */
function workerQuery(c: MixinConfig): string {
  const names = [...c.topology_labels, 'job', ...ID.app];
  const sel = `${m('hypha_serve_worker_app_status')}{${names.map((n) => `${n}=%q`).join(',')},status=\\"RUNNING\\"}`;
  return `printf "max by (worker) (${sel} == 1)" ${names.map((n) => `$labels.${n}`).join(' ')} | query`;
}

export function workerGroup(c: MixinConfig): Group {
  const worker = `{{ range $i, $w := ${workerQuery(c)} | sortByLabel "worker" }}{{ if $i }}, {{ end }}{{ $w.Labels.worker }}` +
    '{{ else }}none answers now: it left the Hypha registry or has not answered since; a restarted worker is asked at its next cross-check{{ end }}';
  return {
    name: 'hypha-serve-worker',
    rules: [
      alert(c, 'HyphaServeWorkerAppRunningNotRegistered', {
        comment:
          'The operator\'s view of incident 1: the exporter\'s decision (hypha_serve_worker_app_running_not_registered_page: a ' +
          'BioEngine worker tied to the app\'s cluster has said RUNNING for hypha_registration.page_waits.worker while the ' +
          'registry has nothing; a restarting worker\'s last word stands for 5 min), over the exporter replicas and bridged for ' +
          `${c.bridge}. Identity of the app: the worker's client id changes at every worker restart, so it is in the text ` +
          '(annotation worker), and a restart neither splits nor restarts the page.',
        expr: decidedOver(c, m('hypha_serve_worker_app_running_not_registered_page'), ID.app),
        annotations: {
          summary: 'BioEngine worker reports an app RUNNING that has no Hypha service.',
          worker,
          description: prose(`
            A BioEngine worker reports app {{ $labels.app }} of Ray cluster {{ $labels.ray_cluster }} as RUNNING, but Hypha
            server {{ $labels.hypha }} has had no service for it for longer than the exporter's worker wait
            (hypha_registration.page_waits.worker, ${humanDuration('5m')} by default). Anyone trusting the worker's status sees a
            healthy app that callers cannot reach (the worker annotation names the workers that say so;
            HyphaServeAppRunningNotRegistered names the expected service and the cause).
          `),
        },
      }),
    ],
  };
}
