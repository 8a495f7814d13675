// Group hypha-serve-registration: incident 1 (a Serve app RUNNING whose Hypha service is not
// registered) and the warning before it. The exporter decides both (metric contract v0.4: per-cause
// waits, proofs, the page held through the spell, persisted across restarts) and exports each decision
// as a 0/1 series per app, absent while unknown; the rules add only what a single exporter cannot do:
// the max over HA replicas and the gap bridge. No recorded level: vmalert, which reads a recorded series
// only an evaluation after it is written, pages at the same evaluation as Prometheus. The worker's view
// of the same incident is group hypha-serve-worker (worker.ts).
import type { MixinConfig } from './config';
import { alert, Group } from './model';
import { decidedOver, humanDuration, ID, labels, m, prose } from './promql';

/** The labels a cause_info series is listed by in the annotations (its per-replica labels aggregated away). */
const CAUSE_LABELS = 'cause, reason, gate, proven, service';


/**
 * The one query of a registration annotation: the app's cause_info series, one per distinct
 * (cause, reason, gate, proven, service) over the replicas; the replicas that report one now, else
 * (`or on ()`: only when none does) the last ones within the bridge. The selector is written twice,
 * its values given once (printf's explicit argument indexes, `%[1]q`).
 */
function causeQuery(c: MixinConfig): string {
  const names = [...c.topology_labels, 'job', ...ID.app];
  const sel = `${m('hypha_serve_app_not_registered_cause_info')}{${names.map((n, i) => `${n}=%[${i + 1}]q`).join(',')}}`;
  const expr = `max by (${CAUSE_LABELS}) (${sel}) or on () max by (${CAUSE_LABELS}) (last_over_time(${sel}[${c.bridge}]))`;
  return `printf "${expr}" ${names.map((n) => `$labels.${n}`).join(' ')} | query`;
}

export function registrationGroup(c: MixinConfig): Group {
  const causes = `${causeQuery(c)} | sortByLabel "cause"`;
  return {
    name: 'hypha-serve-registration',
    rules: [
      alert(c, 'HyphaServeAppRunningNotRegistered', {
        comment:
          'The exporter\'s decision (hypha_serve_app_running_not_registered_page: per-cause waits in its ' +
          'hypha_registration.page_waits, proofs, the page held while the app stays RUNNING and missing), over the ' +
          `exporter replicas (max) and bridged for ${c.bridge}. Identity (${ID.app.join(', ')}): the cause and the ` +
          'expected service change while the page holds, so they are in the text only (hypha_serve_app_not_registered_cause_info).',
        expr: decidedOver(c, m('hypha_serve_app_running_not_registered_page'), ID.app),
        annotations: {
          summary: 'Serve app is RUNNING but its Hypha service is not registered.',
          cause: `{{ range $i, $c := ${causes} }}{{ if $i }}, {{ end }}{{ $c.Labels.cause }}{{ else }}unknown{{ end }}`,
          description: prose(`
            {{ $c := ${causes} }}Ray Serve app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} is RUNNING, but its
            expected Hypha service {{ with $c }}{{ . | first | label "service" }}{{ else }}(unknown){{ end }} is not registered
            on Hypha server {{ $labels.hypha }}. Cause: {{ range $i, $x := $c }}{{ if $i }}; {{ end }}{{ $x.Labels.cause }}:
            {{ $x.Labels.reason }}{{ if $x.Labels.gate }} (BioEngine gate: {{ $x.Labels.gate }}){{ end }}{{ if eq $x.Labels.proven "true" }}.
            Its proxy (BioEngine up to 0.16.2) will not register it by itself: a deployment it gates on is idle at zero and
            only a call through the missing service would wake it. First remedy: upgrade the BioEngine worker to 0.16.30 or
            later and redeploy the app{{ end }}{{ else }}unknown (no cause reported in the last ${humanDuration(c.bridge)}){{ end }}. Callers
            get "Service not found" while Ray and the worker look healthy.
          `),
        },
      }),
      alert(c, 'HyphaServeAppWillDeregisterAtZero', {
        comment:
          'A warning before incident 1a, not a page: the exporter\'s decision (hypha_serve_app_will_deregister_at_zero: ' +
          'registered, its proxy on the gate that deregisters at zero, a gated deployment autoscaling with min_replicas 0), ' +
          `over the exporter replicas and bridged for ${c.bridge}.`,
        expr: decidedOver(c, m('hypha_serve_app_will_deregister_at_zero'), ID.app),
        annotations: {
          summary: 'BioEngine app will lose its Hypha service when it idles to zero replicas.',
          description: prose(`
            Ray Serve app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} is registered on Hypha server
            {{ $labels.hypha }}{{ $d := ${deregisterQuery(c)} | sortByLabel "deployment" }}{{ with $d }} as {{ . | first | label "service" }}{{ end }}
            through a BioEngine ProxyDeployment that runs a release up to 0.16.2, which deregisters an app idling at zero
            replicas, and its deployment(s) {{ range $i, $x := $d }}{{ if $i }}, {{ end }}{{ $x.Labels.deployment }}{{ else }}(unknown){{ end }}
            autoscale with min_replicas 0. When such a deployment idles to zero (after its downscale delay), the proxy
            deregisters the service and registers it again only once a replica runs, which only a call through the missing
            service would start: callers then get "Service not found" (HyphaServeAppRunningNotRegistered, cause
            missing_scaled_to_zero). First upgrade the worker to BioEngine 0.16.30 or later (an app idle at zero then stays
            registered) and redeploy the app; only as a stop-gap set min_replicas: 1.
          `),
        },
      }),
    ],
  };
}

/** The warning's one query: the app's deployments at min_replicas 0, each with the app's expected service id. */
function deregisterQuery(c: MixinConfig): string {
  const l = labels(c);
  const names = [...c.topology_labels, 'job', 'ray_cluster', 'app'];
  const sel = (series: string, extra: string[]) => `${series}{${[...names, ...extra].map((n) => `${n}=%q`).join(',')}}`;
  const expr = `max by (deployment, service) ((${sel(m('hypha_serve_deployment_min_replicas'), [])} == 0) ` +
    `* on (${l.of('instance', 'ray_cluster', 'app')}) group_left (service) ${sel(m('hypha_serve_app_expected_service_info'), ['hypha'])})`;
  const args = [...names, ...names, 'hypha'].map((n) => `$labels.${n}`).join(' ');
  return `printf "${expr}" ${args} | query`;
}
