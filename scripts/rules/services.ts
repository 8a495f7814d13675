// Group hypha-serve-services: incident 2 (a cached proxy bound to a client id that is no longer a
// provider) and the watched services' probes, latency and churn.
import type { MixinConfig } from './config';
import { alert, Group } from './model';
import { block, bridge, humanDuration, ID, labels, m, prose, queryOf, SERVICE_UP, serviceUpWithin } from './promql';
import { pageRules } from './waits';
import { CANARY_HOLDER } from '../../src/snapshot/services';
import { FIRST_RELEASE_WITH_FIXES } from '../../src/util/bioengine-release';

export const SERVICES = {
  cachedStale: 'service_holder:hypha_serve_service_cached_stale:max',
  cachedStaleBridged: 'service_holder:hypha_serve_service_cached_stale:bridged',
  serverGoneBridged: 'service_holder:hypha_serve_service_cached_server_gone:bridged',
  serverGoneHeld: 'service_holder:hypha_serve_service_cached_server_gone:held',
  page: 'service_holder:hypha_serve_service_cached_stale:page',
  context: 'service_holder:hypha_serve_service_cached_stale:context',
  cachedProbeFailing: 'service:hypha_serve_service_cached_probe_failing:bool',
  probeFailing: 'service:hypha_serve_service_probe_failing:bool',
  latency: 'service_via_quantile:hypha_serve_service_call_duration_seconds:histogram_quantile_rate10m',
  latencyHigh: 'service:hypha_serve_service_call_latency_high:bool',
  clientIdChanges: 'service:hypha_serve_service_client_id_changes:increase1h',
  serverIdChanged: 'hypha:hypha_serve_hypha_server_id_changed:bridged',
  selfHealing: 'service:hypha_serve_service_witness_self_healing:bridged',
} as const;

/**
 * One query for the stale page's text: its context series (no `recovery` label) or-ed with the BioEngine
 * workers that hold the service and do not re-resolve by themselves or may not (`recovery` stays_stale or
 * unknown), over the exporter replicas. The text tells them apart by `recovery`.
 */
function staleTextQuery(c: MixinConfig, context: string): string {
  const topo = [...c.topology_labels, 'job'];
  const sel = (names: string[], extra = '') => `{${[...names.map((n) => `${n}=%q`), ...(extra ? [extra] : [])].join(',')}}`;
  const args = (names: string[]) => names.map((n) => `$labels.${n}`).join(' ');
  const ctxIds = [...topo, 'service', 'holder'];
  const workerIds = [...topo, 'service'];
  const workers = `max by (holder, version, recovery) (${m('hypha_serve_service_holder_info')}${sel(workerIds, 'recovery!=\\"self_healing\\"')})`;
  return `printf "${context}${sel(ctxIds)} or ${workers}" ${args(ctxIds)} ${args(workerIds)} | query`;
}

export function servicesGroup(c: MixinConfig): Group {
  const S = SERVICES;
  const l = labels(c);
  const holder = l.of(...ID.holder);
  const B = c.bridge;
  const W = c.probe_window;
  const waits = c.cause_waits.HyphaServiceCachedProxyStale;
  const uncertain = humanDuration(waits.uncertain);
  const latencyThreshold = c.thresholds.call_latency_p90_seconds;
  const churnThreshold = c.thresholds.client_id_changes_per_hour;
  const perService = (series: string, ...keep: string[]) => `max by (${l.of(...ID.service, ...keep)}) (${series}) == 1\n`;
  const selfHealingRelease = '5 minutes';
  return {
    name: 'hypha-serve-services',
    rules: [
      {
        record: S.selfHealing,
        comment:
          'Per service, over the exporter replicas and bridged: 1 = the canary is the witness (stale) and every holder the exporter ' +
          'knows is a BioEngine worker that re-resolves by itself (0.16.30 or later, no holder configured): the exporter ends that ' +
          `witness by itself (canary.self_healing_release, ${selfHealingRelease}), so it warns instead of paging.`,
        expr: bridge(c, m('hypha_serve_service_witness_self_healing'), ID.service),
      },
      {
        record: S.cachedStale,
        comment:
          'Per exporter replica, incident 2: 1 = the client id this holder caches is not among the live providers (right with ' +
          'one provider or many), from the _info series OR-ed with the exporter\'s gauge; absent while the service\'s own source is down.',
        expr: block(`
          max without (client_id) (
              (
                ${m('hypha_serve_service_cached_info')}
                unless on (${l.of('instance', 'service', 'client_id')})
                ${m('hypha_serve_service_provider_info')}
              )
            or
              (${m('hypha_serve_service_cached_info')} * 0)
            or
              ${m('hypha_serve_service_cached_stale')}
          )
          * on (${l.of('instance', 'service')}) group_left () ${SERVICE_UP}
        `),
      },
      ...pageRules(c, {
        fact: S.cachedStale,
        factBridged: S.cachedStaleBridged,
        factComment: `Incident 2's fact per (service, holder), over the exporter replicas and bridged (the last value within ${B} in a gap).`,
        proofMetric: m('hypha_serve_service_cached_server_gone'),
        proofBridged: S.serverGoneBridged,
        proofHeld: S.serverGoneHeld,
        proofComment:
          'The proof of incident 2, bridged: 1 = the stale id is a Hypha server id the server replaced when it came back under ' +
          'another id (hypha store.py), so it never returns.',
        page: S.page,
        pageComment:
          `HyphaServiceCachedProxyStale's condition: 1 = the bridged fact holds and either it has held for ${waits.uncertain} ` +
          `(cause_waits.uncertain) or the stale id was proven gone within the last ${waits.uncertain}, and it is not the canary of a ` +
          'self-healing witness; 0 = the fact holds without either, the witness is self-healing (bridged), or the fact does not ' +
          'hold; absent while unknown for longer than the bridge.',
        id: ID.holder,
        waits,
        exempt: `label_replace(${S.selfHealing} == 1, "holder", "${CANARY_HOLDER}", "", "")`,
      }),
      {
        record: S.context,
        comment:
          'What the page says, per (service, holder): labels client_id (the id the holder caches and no live provider has; ' +
          'in a gap the last cached id; "(unknown)" when unread), server_gone ("true" when that id is a replaced server id) ' +
          'and holders ("none" when no holder is configured, so the canary is the only witness); value: when the holder went ' +
          'stale (Unix seconds), -1 when unknown. Each factor after the first is 1 but for its label (the "none" one is ' +
          'holders_configured == 0, plus 1), so the product is that value.',
        expr: block(`
            topk by (${holder}) (1,
                max by (${holder}, client_id) (
                  ${m('hypha_serve_service_cached_info')} unless on (${l.of('instance', 'service', 'client_id')}) ${m('hypha_serve_service_provider_info')}
                )
              or on (${holder})
                max by (${holder}, client_id) (last_over_time(${m('hypha_serve_service_cached_info')}[${B}]))
              or on (${holder})
                label_replace(${S.cachedStaleBridged}, "client_id", "(unknown)", "", "")
            )
          * on (${holder}) group_left ()
            (
                min by (${holder}) (last_over_time(${m('hypha_serve_service_cached_stale_since_timestamp_seconds')}[${B}]))
              or on (${holder})
                ${S.cachedStaleBridged} * 0 - 1
            )
          * on (${holder}) group_left (server_gone)
            (
                label_replace(${S.serverGoneBridged} == 1, "server_gone", "true", "", "")
              or on (${holder})
                label_replace(${S.cachedStaleBridged}, "server_gone", "false", "", "")
            )
          * on (${l.of(...ID.service)}) group_left (holders)
            (
                label_replace(max by (${l.of(...ID.service)}) (last_over_time(${m('hypha_serve_service_holders_configured')}[${B}])) == 0, "holders", "none", "", "") + 1
              or on (${l.of(...ID.service)})
                label_replace(max by (${l.of(...ID.service)}) (${S.cachedStaleBridged}), "holders", "some", "", "")
            )
        `),
      },
      alert(c, 'HyphaServiceCachedProxyStale', {
        comment:
          'The exporter\'s canary is a witness: it stays stale until the old client id is live again, every configured ' +
          'holder agrees with the providers, or canary.witness_max passes. The text says what the exporter cannot see. ' +
          `Per-cause wait: ${S.page}.`,
        expr: `${S.page} == 1\n`,
        annotations: {
          summary: 'A cached Hypha service proxy points at a client that is no longer a provider.',
          description: prose(`
            {{ $all := ${staleTextQuery(c, S.context)} }}{{ $ctx := 0 }}{{ range $all }}{{ if not .Labels.recovery }}{{ $ctx = . }}{{ end }}{{ end }}
            {{- if eq $labels.holder "exporter" }}The exporter's canary, a
            proxy to {{ $labels.service }} that it resolved earlier and keeps as a witness,{{ else }}Holder {{ $labels.holder }}{{ end }}
            caches client id {{ with $ctx }}{{ .Labels.client_id }}{{ else }}(unknown){{ end }} for
            {{ $labels.service }}, which has not been among its live providers {{- with $ctx }}{{ if ge .Value 0.0 }}
            since {{ .Value | humanizeTimestamp }}{{ else if ne .Labels.server_gone "true" }} for
            ${uncertain}{{ end }}{{ if eq .Labels.server_gone "true" }}; that id is a Hypha server id the server
            replaced when it came back under another id, so it never returns (a server without a fixed --server-id){{ end }}{{ else }}
            for ${uncertain}{{ end }}. Calls through such a proxy hang until they time out while fresh resolutions work (the live
            providers are on the status page and in \`hypha-serve-exporter check\`). What the exporter can know:
            {{ with $ctx }}{{ if eq .Labels.holders "none" }}no holder is configured for this service, so its own canary is
            the only witness it has{{ else }}its own canary and the holders it is configured to read or probe{{ end }}{{ else }}its own
            canary and the holders it is configured to read or probe{{ end }}{{ $n := 0 }}{{ range $all | sortByLabel "holder" }}{{ if
            .Labels.recovery }}{{ if eq $n 0 }}; of the BioEngine workers it discovered, these do not re-resolve a stale proxy by
            themselves (BioEngine before ${FIRST_RELEASE_WITH_FIXES}) or may not (a version it cannot place): {{ else }}, {{ end }}{{ $n = 1 }}{{ .Labels.holder }}
            ({{ with .Labels.version }}BioEngine {{ . }}{{ else }}version unknown{{ end }}, {{ .Labels.recovery }}){{ end }}{{ end }}. What it
            cannot know: every other long-lived client (BioEngine workers, notebooks, services) that resolved {{ $labels.service }}
            before its providers last changed and has not re-resolved since is stuck the same way, and stays stuck after this
            alert resolves (for the canary: when its old client id is live again, every configured holder agrees with the
            providers, or canary.witness_max passes): restart or re-resolve them.
          `),
        },
      }),
      alert(c, 'HyphaServiceCachedProxySelfHealing', {
        comment:
          'Incident 2 without a stuck client: the canary is stale, but every holder the exporter knows re-resolves by itself, so ' +
          'HyphaServiceCachedProxyStale does not page for it; the exporter ends the witness by itself.',
        expr: `${S.selfHealing} == 1\n`,
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
      {
        record: S.cachedProbeFailing,
        comment:
          `Per exporter replica: 1 = no probe call through the cached proxy succeeded within ${W} while one through a fresh ` +
          `proxy did; 0 = otherwise; absent while the service's source has been down for the whole bridge. Judged over ${W}, ` +
          'not one sample: fresh resolution picks a provider at random, and a killed server stays listed for about a minute.',
        expr: block(`
            (max_over_time(${m('hypha_serve_service_probe_success')}{via="cached"}[${W}]) == bool 0)
          * on (${l.of('instance', 'service')}) group_left ()
            (max_over_time(${m('hypha_serve_service_probe_success')}{via="fresh"}[${W}]) == bool 1)
          * on (${l.of('instance', 'service')}) group_left ()
            ${serviceUpWithin(B)}
        `),
      },
      alert(c, 'HyphaServiceCachedProbeFailing', {
        comment: `Over the exporter replicas: one replica that sees the cached path fail while the fresh path works is enough.`,
        expr: perService(S.cachedProbeFailing, 'via'),
        annotations: {
          summary: 'Calls through a cached Hypha service proxy fail while fresh ones succeed.',
          description: prose(`
            No probe call to {{ $labels.service }} through the long-lived (cached) proxy has succeeded for
            ${humanDuration(W)}, while calls through a freshly resolved proxy did succeed in that time; this has held for
            ${humanDuration(c.alerts.HyphaServiceCachedProbeFailing.for)}. Cached-path outcomes over the last ${humanDuration(W)}:
            {{ range $i, $s := ${queryOf(c, m('hypha_serve_service_call_duration_seconds', '_count'), ID.service, { matchers: 'via="cached"', wrap: (s) => `max by (outcome) (increase(${s}[${W}])) > 0` })} | sortByLabel "outcome" }}{{ if $i }}, {{ end }}{{ $s.Labels.outcome }} {{ printf "%.0f" $s.Value }}{{ else }}none recorded{{ end }}.
            This is the symptom of a stale cached proxy.
          `),
        },
      }),
      {
        record: S.probeFailing,
        comment: `Per exporter replica: 1 = no probe call on any path succeeded within ${W}; 0 = one did; absent while the service's source has been down for the whole bridge.`,
        expr: block(`
            (max by (${l.of('instance', 'service')}) (max_over_time(${m('hypha_serve_service_probe_success')}[${W}])) == bool 0)
          * on (${l.of('instance', 'service')}) group_left ()
            ${serviceUpWithin(B)}
        `),
      },
      alert(c, 'HyphaServiceProbeFailing', {
        comment: 'One success on either path (a live provider picked) clears it.',
        expr: perService(S.probeFailing),
        annotations: {
          summary: 'A watched Hypha service fails its probe on every path.',
          description: prose(`
            No probe call to {{ $labels.service }}, through the cached or a freshly resolved proxy, has succeeded for
            ${humanDuration(W)}, and this has held for ${humanDuration(c.alerts.HyphaServiceProbeFailing.for)} while the exporter
            reaches the Hypha server. Live providers:
            {{ with ${queryOf(c, m('hypha_serve_service_providers'), ID.service, { wrap: (s) => `max(${s})` })} }}{{ . | first | value }}{{ else }}unknown{{ end }}.
          `),
        },
      }),
      ...['0.5', '0.9', '0.99'].map((q) => ({
        record: S.latency,
        comment: q === '0.5' ? 'Per exporter replica: p50/p90/p99 of probe calls per service and path (via), over 10 minutes.' : '',
        expr: block(`
          histogram_quantile(${q},
            sum without (method, outcome) (rate(${m('hypha_serve_service_call_duration_seconds', '_bucket')}[10m])))
        `),
        labels: { quantile: q },
      })),
      {
        record: S.latencyHigh,
        comment:
          `Per exporter replica: 1 = the p90 of fresh-path probe calls over 10 minutes is above ${latencyThreshold}s ` +
          '(thresholds.call_latency_p90_seconds), 0 = not; the 10-minute rate rides over gaps, so this is absent only after the ' +
          'service\'s source has been down for the whole bridge.',
        expr: block(`
            (${S.latency}{quantile="0.9", via="fresh"} > bool ${latencyThreshold})
          * on (${l.of('instance', 'service')}) group_left ()
            ${serviceUpWithin(B)}
        `),
      },
      alert(c, 'HyphaServiceCallLatencyHigh', {
        comment: 'Over the exporter replicas.',
        expr: perService(S.latencyHigh, 'quantile', 'via'),
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
