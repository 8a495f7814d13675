// Group hypha-serve-services: incident 2 (a cached proxy bound to a client id that is no longer a
// provider) and the watched services' probes, latency and churn. The exporter decides the pages (metric
// contract v0.4: the stale page with its per-cause waits, proof and spell; the probe pages over its probe
// window) and exports each decision; the rules add the max over HA replicas and the gap bridge.
import type { MixinConfig } from './config';
import { alert, Group, RecordingRule } from './model';
import { block, bridge, decidedOver, humanDuration, ID, labels, m, prose, queryOf, serviceUpWithin } from './promql';
import { FIRST_RELEASE_WITH_FIXES } from '../src/util/bioengine-release';

export const SERVICES = {
  latency: 'service_via_quantile:hypha_serve_service_call_duration_seconds:histogram_quantile_rate10m',
  latencyHigh: 'service:hypha_serve_service_call_latency_high:bool',
  clientIdChanges: 'service:hypha_serve_service_client_id_changes:increase1h',
  serverIdChanged: 'hypha:hypha_serve_hypha_server_id_changed:bridged',
} as const;

/**
 * The one query of the stale page's text: the holder's cause_info series (its stale id, cause and what the
 * exporter can see; the replicas that report one now, else the last ones within the bridge), the start of
 * its stale spell, and the BioEngine workers that hold the service and do not re-resolve by themselves or
 * may not (`recovery` stays_stale or unknown), each over the exporter replicas. The text tells them apart
 * by their labels: `cause`, `recovery`, or neither (the spell's start).
 */
function staleTextQuery(c: MixinConfig): string {
  const topo = [...c.topology_labels, 'job'];
  const holderIds = [...topo, 'service', 'holder'];
  const serviceIds = [...topo, 'service'];
  const sel = (names: string[], first: number, extra = '') =>
    `{${[...names.map((n, i) => `${n}=%[${first + i}]q`), ...(extra ? [extra] : [])].join(',')}}`;
  const h = sel(holderIds, 1);
  const info = `${m('hypha_serve_service_cached_stale_cause_info')}${h}`;
  const by = 'max by (holder, client_id, cause, reason, holders)';
  const cause = `${by} (${info}) or on () ${by} (last_over_time(${info}[${c.bridge}]))`;
  const since = `max by (holder) (${m('hypha_serve_service_cached_stale_since_timestamp_seconds')}${h})`;
  const workers = `max by (holder, version, recovery) (${m('hypha_serve_service_holder_info')}${sel(serviceIds, 1, 'recovery!=\\"self_healing\\"')})`;
  return `printf "${cause} or ${since} or ${workers}" ${holderIds.map((n) => `$labels.${n}`).join(' ')} | query`;
}

/**
 * The recording rules of rules/recording.yml: p50/p90/p99 of the probe calls, which the service-identity
 * dashboard plots and HyphaServiceCallLatencyHigh's text quotes (its expression reads the histogram itself).
 */
export function quantileGroup(): Group {
  return {
    name: 'hypha-serve-dashboards.rules',
    rules: ['0.5', '0.9', '0.99'].map((q): RecordingRule => ({
      record: SERVICES.latency,
      comment: q === '0.5' ? 'Per exporter replica: p50/p90/p99 of probe calls per service and path (via), over 10 minutes.' : '',
      expr: block(`
        histogram_quantile(${q},
          sum without (method, outcome) (rate(${m('hypha_serve_service_call_duration_seconds', '_bucket')}[10m])))
      `),
      labels: { quantile: q },
    })),
  };
}

export function servicesGroup(c: MixinConfig): Group {
  const S = SERVICES;
  const l = labels(c);
  const B = c.bridge;
  const latencyThreshold = c.thresholds.call_latency_p90_seconds;
  const churnThreshold = c.thresholds.client_id_changes_per_hour;
  const selfHealingRelease = '5 minutes';
  const window = 'watched_services[].probe_window, 3 minutes by default';
  return {
    name: 'hypha-serve-services',
    rules: [
      alert(c, 'HyphaServiceCachedProxyStale', {
        comment:
          'The exporter\'s decision (hypha_serve_service_cached_stale_page: the per-cause waits of its ' +
          'watched_services[].page_waits, the proof that a stale id is a replaced server id, the page held while the id stays ' +
          `stale, never for the canary of a self-healing witness), over the exporter replicas and bridged for ${B}. The canary is ` +
          'a witness: it stays stale until the old client id is live again, every configured holder agrees with the providers, ' +
          'or canary.witness_max passes. Identity (service, holder): the cause changes while the page holds, so it is in the ' +
          'text only (hypha_serve_service_cached_stale_cause_info).',
        expr: decidedOver(c, m('hypha_serve_service_cached_stale_page'), ID.holder),
        annotations: {
          summary: 'A cached Hypha service proxy points at a client that is no longer a provider.',
          description: prose(`
            {{ $all := ${staleTextQuery(c)} }}{{ $ctx := 0 }}{{ $since := 0 }}{{ range $all }}{{ if .Labels.cause }}{{ $ctx = . }}{{ else if not .Labels.recovery }}{{ $since = . }}{{ end }}{{ end }}
            {{- if eq $labels.holder "exporter" }}The exporter's canary, a
            proxy to {{ $labels.service }} that it resolved earlier and keeps as a witness,{{ else }}Holder {{ $labels.holder }}{{ end }}
            caches client id {{ with $ctx }}{{ .Labels.client_id }}{{ else }}(unknown){{ end }} for
            {{ $labels.service }}, which has not been among its live providers {{- with $since }} since {{ .Value | humanizeTimestamp }}{{ end }}
            {{- with $ctx }}{{ if eq .Labels.cause "server_gone" }}; that id is a Hypha server id the server replaced when it came
            back under another id, so it never returns (a server without a fixed --server-id){{ end }}{{ end }}. Calls through such a
            proxy hang until they time out while fresh resolutions work (the live providers are on the status page and in
            \`hypha-serve-exporter check\`). What the exporter can know: {{ with $ctx }}{{ if eq .Labels.holders "none" }}no holder is
            configured or discovered for this service, so its own canary is the only witness it has{{ else if eq .Labels.holders
            "workers" }}its own canary and the BioEngine workers it discovered{{ else }}its own canary and the holders it is
            configured to read or probe{{ end }}{{ else }}its own canary and the holders it knows{{ end }}{{ $n := 0 }}{{ range $all |
            sortByLabel "holder" }}{{ if .Labels.recovery }}{{ if eq $n 0 }}; of those workers, these do not re-resolve a stale
            proxy by themselves (BioEngine before ${FIRST_RELEASE_WITH_FIXES}: upgrade them) or may not (a version it cannot place):
            {{ else }}, {{ end }}{{ $n = 1 }}{{ .Labels.holder }} ({{ with .Labels.version }}BioEngine {{ . }}{{ else }}version
            unknown{{ end }}, {{ .Labels.recovery }}){{ end }}{{ end }}. What it cannot know: every other long-lived client
            (BioEngine workers, notebooks, services) that resolved {{ $labels.service }} before its providers last changed and has
            not re-resolved since is stuck the same way, and stays stuck after this alert resolves (for the canary: when its old
            client id is live again, every configured holder agrees with the providers, or canary.witness_max passes): restart
            or re-resolve them.
          `),
        },
      }),
      alert(c, 'HyphaServiceCachedProxySelfHealing', {
        comment:
          'Incident 2 without a stuck client: the exporter\'s canary is stale, but every holder it knows is a BioEngine worker ' +
          `that re-resolves by itself (hypha_serve_service_witness_self_healing), so HyphaServiceCachedProxyStale does not page for ` +
          `it and the exporter ends the witness by itself (canary.self_healing_release, ${selfHealingRelease}); over the exporter ` +
          `replicas and bridged for ${B}.`,
        expr: decidedOver(c, m('hypha_serve_service_witness_self_healing'), ID.service),
        annotations: {
          summary: 'A watched Hypha service re-registered; every BioEngine worker that held it re-resolves by itself.',
          description: prose(`
            The exporter's canary, a proxy to {{ $labels.service }} that it resolved earlier and keeps as a witness, is bound to a
            client id that is no longer among the live providers: the service re-registered under a new client id. Every
            long-lived client the exporter knows of is a BioEngine worker that re-resolves its proxy by itself
            (${FIRST_RELEASE_WITH_FIXES} or later):
            {{ range $i, $w := ${queryOf(c, m('hypha_serve_service_holder_info'), ID.service, { wrap: (s) => `max by (holder, version) (last_over_time(${s}[${B}]))` })} | sortByLabel "holder" }}{{ if $i }}, {{ end }}{{ $w.Labels.holder }} (BioEngine {{ $w.Labels.version }}){{ else }}(none reported){{ end }}.
            Each had at most one call fail against the old id: the next call re-resolves and is retried. Nothing needs doing;
            the exporter ends this witness by itself within ${selfHealingRelease} (canary.self_healing_release), and this alert with
            it. An older or unknown worker among the holders would page HyphaServiceCachedProxyStale instead.
          `),
        },
      }),
      alert(c, 'HyphaServiceCachedProbeFailing', {
        comment:
          'The exporter\'s decision (hypha_serve_service_cached_probe_failing: no cached-path success within its probe window ' +
          'while a fresh one succeeded; a window, not one sample: fresh resolution picks a provider at random, and a killed server ' +
          `stays listed for about a minute), over the exporter replicas and bridged for ${B}: one replica that sees it is enough.`,
        expr: decidedOver(c, m('hypha_serve_service_cached_probe_failing'), ID.service),
        annotations: {
          summary: 'Calls through a cached Hypha service proxy fail while fresh ones succeed.',
          description: prose(`
            No probe call to {{ $labels.service }} through the long-lived (cached) proxy has succeeded within the exporter's probe
            window (${window}), while calls through a freshly resolved proxy did succeed in that time; this has held for
            ${humanDuration(c.alerts.HyphaServiceCachedProbeFailing.for)}. Cached-path outcomes over the last 5 minutes:
            {{ range $i, $s := ${queryOf(c, m('hypha_serve_service_call_duration_seconds', '_count'), ID.service, { matchers: 'via="cached"', wrap: (s) => `max by (outcome) (increase(${s}[5m])) > 0` })} | sortByLabel "outcome" }}{{ if $i }}, {{ end }}{{ $s.Labels.outcome }} {{ printf "%.0f" $s.Value }}{{ else }}none recorded{{ end }}.
            This is the symptom of a stale cached proxy.
          `),
        },
      }),
      alert(c, 'HyphaServiceProbeFailing', {
        comment:
          'The exporter\'s decision (hypha_serve_service_probe_failing: no success on any path within its probe window), over ' +
          `the exporter replicas and bridged for ${B}. One success on either path (a live provider picked) clears it.`,
        expr: decidedOver(c, m('hypha_serve_service_probe_failing'), ID.service),
        annotations: {
          summary: 'A watched Hypha service fails its probe on every path.',
          description: prose(`
            No probe call to {{ $labels.service }}, through the cached or a freshly resolved proxy, has succeeded within the
            exporter's probe window (${window}), and this has held for ${humanDuration(c.alerts.HyphaServiceProbeFailing.for)}
            while the exporter reaches the Hypha server. Live providers:
            {{ with ${queryOf(c, m('hypha_serve_service_providers'), ID.service, { wrap: (s) => `max(${s})` })} }}{{ . | first | value }}{{ else }}unknown{{ end }}.
          `),
        },
      }),
      {
        record: S.latencyHigh,
        comment:
          `Per exporter replica: 1 = the p90 of fresh-path probe calls over 10 minutes is above ${latencyThreshold}s ` +
          '(thresholds.call_latency_p90_seconds), 0 = not; the 10-minute rate rides over gaps, so this is absent only after the ' +
          'service\'s source has been down for the whole bridge. From the histogram itself, not from the quantile records ' +
          '(which the dashboards read), so the alert reads one recorded level.',
        expr: block(`
            (histogram_quantile(0.9, sum without (method, outcome) (rate(${m('hypha_serve_service_call_duration_seconds', '_bucket')}{via="fresh"}[10m]))) > bool ${latencyThreshold})
          * on (${l.of('instance', 'service')}) group_left ()
            ${serviceUpWithin(B)}
        `),
      },
      alert(c, 'HyphaServiceCallLatencyHigh', {
        comment: 'Over the exporter replicas.',
        expr: `max by (${l.of(...ID.service, 'via')}) (${S.latencyHigh}) == 1\n`,
        annotations: {
          summary: 'Calls to a watched Hypha service are slow.',
          description: prose(`
            The 90th percentile of probe calls to {{ $labels.service }} through a freshly resolved proxy has been above
            ${latencyThreshold}s over 10 minutes
            {{- with ${queryOf(c, S.latency, ID.service, { matchers: 'quantile="0.9",via="fresh"', wrap: (s) => `max(${s})` })} }} ({{ . | first | value | humanizeDuration }} now){{ end }}
            for ${humanDuration(c.alerts.HyphaServiceCallLatencyHigh.for)}. Artifact-backed operations (deploy_app, list_apps,
            get_app_manifest) slow down with it.
          `),
        },
      }),
      {
        record: S.clientIdChanges,
        comment: 'Per exporter replica: provider-set changes of a watched service over the last hour.',
        expr: `increase(${m('hypha_serve_service_client_id_changes_total')}[1h])\n`,
      },
      alert(c, 'HyphaServiceClientIdChurn', {
        comment: `A Hypha restart without a fixed server id counts one or two provider-set changes; ${churnThreshold} in an hour is a service that keeps re-registering.`,
        expr: `max by (${l.of(...ID.service)}) (${S.clientIdChanges}) >= ${churnThreshold}\n`,
        annotations: {
          summary: 'A watched Hypha service keeps re-registering under new client ids.',
          description: prose(`
            The set of client ids providing {{ $labels.service }} changed {{ printf "%.0f" $value }} times in the last hour
            (threshold ${churnThreshold}). Every change strands proxies that long-lived clients cached before it.
          `),
        },
      }),
      {
        record: S.serverIdChanged,
        comment:
          'Per Hypha server, over the exporter replicas and bridged: 1 = the registry connection saw the server come back ' +
          'under another server id, 0 = under the same one.',
        expr: bridge(c, m('hypha_serve_hypha_server_id_changed'), ID.hypha),
      },
      alert(c, 'HyphaServeServerIdUnstable', {
        comment:
          'A ticket before incident 2: the Hypha server\'s built-in services are provided by client <server_id> ' +
          '(hypha/core/store.py), so every restart under a new id strands every proxy cached to them. Cleared when the ' +
          'server comes back under the same id.',
        expr: `${S.serverIdChanged} == 1\n`,
        annotations: {
          summary: 'The Hypha server has no stable server id: each restart strands cached proxies to its built-in services.',
          description: prose(`
            Hypha server {{ $labels.hypha }} came back under another server id
            {{- with ${queryOf(c, m('hypha_serve_hypha_server_info'), ID.hypha, { wrap: (s) => `max by (server_id) (${s})` })} }} ({{ . | first | label "server_id" }} now){{ end }}.
            Its built-in services, the artifact manager among them, are provided by client <server_id>, so every restart
            like this one strands every proxy that long-lived clients (BioEngine workers) cached to them: their calls hang
            until they re-resolve (incident 2). Start the server with a fixed --server-id (or HYPHA_SERVER_ID); with several
            instances on one Redis each needs its own, and a second instance with a live id refuses to start, so a rolling
            update must stop the old pod first.
          `),
        },
      }),
    ],
  };
}
