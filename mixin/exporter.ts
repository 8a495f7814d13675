// Group hypha-serve-exporter: the exporter's own health and its view of its upstreams.
import type { MixinConfig } from './config';
import { alert, Group } from './model';
import { block, humanDuration, ID, labels, m, prose, queryOf } from './promql';

export const EXPORTER = {
  sourceUp: 'source:hypha_serve_source_up:bridged',
  sourceStale: 'instance_source:hypha_serve_source_sample_age_seconds:stale',
} as const;

/** An upstream's name in alert text, from the label that names it (a watched service with its Hypha server). */
const UPSTREAM = '{{ with $labels.service }}{{ . }}{{ with $labels.hypha }} on {{ . }}{{ end }}{{ else }}{{ $labels.ray_cluster }}{{ $labels.hypha }}{{ end }}';

export function exporterGroup(c: MixinConfig): Group {
  const E = EXPORTER;
  const l = labels(c);
  const B = c.bridge;
  const human = (n: Parameters<typeof alert>[1]) => humanDuration(c.alerts[n].for);
  const src = l.of(...ID.source);
  return {
    name: 'hypha-serve-exporter',
    rules: [
      {
        record: E.sourceUp,
        comment:
          `Per upstream, over the exporter replicas: 1 = a replica sampled it successfully (its last value within ${B}), 0 = ` +
          'none could; an upstream is named by the label its derived series carry (ray_cluster, hypha or service, with the ' +
          'hypha of a watched service), so Alertmanager inhibits exactly those.',
        expr: `max by (${src}) (last_over_time(${m('hypha_serve_source_up')}[${B}]))\n`,
      },
      alert(c, 'HyphaServeSourceDown', {
        comment: 'A fact about the upstream: fires when no replica can sample it. One successful sample clears it.',
        expr: `${E.sourceUp} == 0\n`,
        annotations: {
          summary: 'The exporter cannot sample one of its upstreams.',
          description: prose(`
            No hypha-serve-exporter replica of job {{ $labels.job }} has sampled {{ $labels.source }} source
            ${UPSTREAM} successfully for ${human('HyphaServeSourceDown')} (failures by reason over the last 10
            minutes:
            {{ $auth := false }}{{ range $i, $s := ${queryOf(c, m('hypha_serve_source_errors_total'), ID.source, { wrap: (s) => `max by (reason) (increase(${s}[10m])) > 0` })} | sortByLabel "reason" }}{{ if $i }}, {{ end }}{{ $s.Labels.reason }} {{ printf "%.0f" $s.Value }}{{ if eq $s.Labels.reason "auth_secret_changed" }}{{ $auth = true }}{{ end }}{{ else }}none recorded{{ end }}).
            Alerts derived from this source cannot fire until it is back; their last known state was held for
            ${humanDuration(B)}.{{ if $auth }} Hypha refused a token it had accepted before (auth_secret_changed): the server
            likely restarted with a new JWT secret (HYPHA_JWT_SECRET unset), so every token it issued is invalid, the BioEngine
            proxies' tokens too. Give the exporter a new token, redeploy the apps through the BioEngine worker and set
            HYPHA_JWT_SECRET on the server.{{ end }}
          `),
        },
      }),
      {
        record: E.sourceStale,
        comment:
          'Per exporter process and upstream: the age of the last successful sample when the source is up and that is older ' +
          'than 3 sampling intervals plus a minute (a stuck sampler: every derived series is frozen), 0 when fresh; absent ' +
          'while the source is down.',
        expr: block(`
            (${m('hypha_serve_source_sample_age_seconds')} > bool 3 * ${m('hypha_serve_source_interval_seconds')} + 60)
          * ${m('hypha_serve_source_sample_age_seconds')}
          * on (${l.of('instance', ...ID.source)})
            (${m('hypha_serve_source_up')} == 1)
        `),
      },
      alert(c, 'HyphaServeSourceStale', {
        comment: 'Per exporter process: each replica\'s sampler is its own.',
        expr: `${E.sourceStale} > 0\n`,
        annotations: {
          summary: 'The exporter serves an upstream\'s data without sampling it anew.',
          description: prose(`
            hypha-serve-exporter {{ $labels.instance }} reports {{ $labels.source }} source ${UPSTREAM} as up, but
            its last successful sample is {{ $value | humanizeDuration }} old, more than 3 sampling intervals
            {{- with ${queryOf(c, m('hypha_serve_source_interval_seconds'), ['instance', ...ID.source])} }} ({{ . | first | value | humanizeDuration }} each){{ end }}
            plus a minute. Its sampler is stuck: every series derived from this source is frozen at that sample, and no
            alert about it can change state until the exporter is restarted.
          `),
        },
      }),
      alert(c, 'HyphaServeExporterDown', {
        comment:
          'Per target: each replica of an HA pair is its own target. Two branches in two lines: a target that fails its ' +
          'scrapes (up == 0, with its job, instance and namespace), or no target at all (absent() yields one series with the ' +
          'selector\'s equality matchers as labels: none for the default job=~ selector; the chart adds its release ' +
          'namespace, and a selector with namespace="..." or job="..." gives them, so a namespaced route receives the page).',
        expr: `up{${c.exporter_selector}} == 0\n  or absent(up{${c.exporter_selector}})\n`,
        annotations: {
          summary: 'The hypha-serve-exporter target is down or missing from Prometheus.',
          description: prose(`
            {{ if $labels.instance }}Prometheus has failed to scrape hypha-serve-exporter target {{ $labels.instance }} (job
            {{ $labels.job }}{{ with $labels.namespace }}, namespace {{ . }}{{ end }}) for ${human('HyphaServeExporterDown')}.{{ else }}Prometheus has had no target matching
            {${c.exporter_selector.replace(/"/g, "'")}}{{ with $labels.namespace }} in namespace {{ . }}{{ end }} for ${human('HyphaServeExporterDown')}.{{ end }} Every hypha-serve alert
            that needs {{ if $labels.instance }}this replica{{ else }}the exporter{{ end }} is blind until it is back.
          `),
        },
      }),
      alert(c, 'HyphaServeExporterConfigReloadFailed', {
        comment: 'Per exporter process; a scrape gap does not reset it.',
        expr: `last_over_time(${m('hypha_serve_exporter_config_last_reload_successful')}[${B}]) == 0\n`,
        annotations: {
          summary: 'The exporter rejected its new configuration.',
          description: prose(`
            The last configuration reload of hypha-serve-exporter {{ $labels.instance }} failed; it keeps running with the
            previous configuration, last loaded
            {{ with ${queryOf(c, m('hypha_serve_exporter_config_last_reload_success_timestamp_seconds'), ['instance'])} }}{{ . | first | value | humanizeTimestamp }}{{ else }}at an unknown time{{ end }}.
          `),
        },
      }),
      alert(c, 'HyphaServeExporterWebConfigReloadFailed', {
        comment:
          'Per exporter process; a scrape gap does not reset it. The web config is re-read when it or a file it names ' +
          'changes (a renewed certificate, a new password); a broken new version keeps the old one in effect.',
        expr: `last_over_time(${m('hypha_serve_exporter_web_config_last_reload_successful')}[${B}]) == 0\n`,
        annotations: {
          summary: 'The exporter rejected its new web configuration (TLS or basic auth).',
          description: prose(`
            The last re-read of the web config (--web.config.file) of hypha-serve-exporter {{ $labels.instance }} failed;
            it keeps serving with the previous TLS certificate and users, last loaded
            {{ with ${queryOf(c, m('hypha_serve_exporter_web_config_last_reload_success_timestamp_seconds'), ['instance'])} }}{{ . | first | value | humanizeTimestamp }}{{ else }}at an unknown time{{ end }}.
            A renewed certificate is not served until the file loads again, so the old one may expire.
          `),
        },
      }),
    ],
  };
}
