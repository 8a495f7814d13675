// Group hypha-serve-serve: Ray Serve apps, deployments and proxies. Issue 37: every alert reads at most
// one recorded level and its expr is at most 2 lines. The exporter decides the two proxy pages (hypha_serve_cluster_no_proxy_can_wake_apps,
// hypha_serve_cluster_all_proxies_unready, computed as the old :bool rules were) and the unhealthy app is a
// state-set member: those alerts read the exporter's series with only the max over replicas and the gap bridge
// (promql.ts decidedOver, as the registration group does), no recorded level, so vmalert, which reads a
// recorded series an evaluation after it is written, pages at the same evaluation as Prometheus. The replicas
// mismatch needs a 10-minute window and a join: one recorded level, bridged straight from the exporter series.
import type { MixinConfig } from './config';
import { alert, Group } from './model';
import { bridgedFact, decidedOver, humanDuration, ID, labels, m, prose, queryOf, queryOfEach } from './promql';

export const SERVE = {
  replicasShortBridged: 'ray_cluster_app_deployment:hypha_serve_deployment_replicas_short:bridged',
} as const;

export function serveGroup(c: MixinConfig): Group {
  const S = SERVE;
  const l = labels(c);
  const human = (n: Parameters<typeof alert>[1]) => humanDuration(c.alerts[n].for);
  const replica = l.of('instance', ...ID.deployment);
  const target = m('hypha_serve_deployment_target_replicas');
  const running = `${m('hypha_serve_deployment_replicas')}{state="RUNNING"}`;
  return {
    name: 'hypha-serve-serve',
    rules: [
      alert(c, 'HyphaServeAppUnhealthy', {
        comment:
          'Identity (ray_cluster, app): the status (DEPLOY_FAILED or UNHEALTHY) may change while the app stays broken, so it is ' +
          `in the text. The status state set read straight, over the exporter replicas (max) and bridged for ${c.bridge}: no ` +
          'recorded level (the per-replica :bool and its :bridged, two levels, are gone), so vmalert pages at the same ' +
          'evaluation as Prometheus. Absent while the app\'s Ray cluster is not sampled (beyond the bridge): unknown never pages.',
        expr: decidedOver(c, `${m('hypha_serve_app_status')}{status=~"DEPLOY_FAILED|UNHEALTHY"}`, ID.app.slice(0, 2)),
        annotations: {
          summary: 'Ray Serve app is DEPLOY_FAILED or UNHEALTHY.',
          description: prose(`
            Ray Serve app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} is
            {{ range $i, $s := ${queryOf(c, m('hypha_serve_app_status'), ID.app.slice(0, 2), { matchers: 'status=~"DEPLOY_FAILED|UNHEALTHY"', wrap: (s) => `max by (status) (last_over_time(${s}[${c.bridge}])) == 1` })} | sortByLabel "status" }}{{ if $i }} or {{ end }}{{ $s.Labels.status }}{{ else }}DEPLOY_FAILED or UNHEALTHY{{ end }}
            and has been DEPLOY_FAILED or UNHEALTHY for more than ${human('HyphaServeAppUnhealthy')}; Serve's status message
            is on the exporter's status page and in \`hypha-serve-exporter check\`.
          `),
        },
      }),
      {
        record: S.replicasShortBridged,
        comment:
          'Per deployment, over the exporter replicas and bridged: 1 = fewer RUNNING replicas than the target (a target above ' +
          'RUNNING is above zero, so an idle scale-to-zero deployment, target 0, never counts) and the target has not changed ' +
          'for 10 minutes (not a scale-up in progress); 0 otherwise. "Not changed" is max = min over the window, not changes() ' +
          '== 0: MetricsQL\'s changes() counts a series\' first sample as a change. Computed from the exporter series in one ' +
          `level: the replicas that serve them now (max), else each series' last value within the bridge (${c.bridge}); the ` +
          '10-minute window reaches over a gap by itself. (Before: target_minus_running, then a per-replica :bool, then this ' +
          'bridge of it: three levels.)',
        expr: bridgedFact(c, ID.deployment, (v) => `
            (${v(target)} - on (${replica}) ${v(running)} > bool 0)
          * on (${replica})
            (max_over_time(${target}[10m]) - min_over_time(${target}[10m]) == bool 0)
        `),
      },
      alert(c, 'HyphaServeDeploymentReplicasMismatch', {
        comment: 'Never at an idle zero (target 0), never during a scale-up (target changed within 10 minutes).',
        expr: `${S.replicasShortBridged} == 1\n`,
        annotations: {
          summary: 'Serve deployment has fewer RUNNING replicas than its target.',
          description: prose(`
            Deployment {{ $labels.deployment }} of app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} has been
            {{ with ${queryOfEach(c, ID.deployment, (sel) => `max(${sel(target)} - ignoring (state) ${sel(m('hypha_serve_deployment_replicas'), 'state="RUNNING"')})`)} }}{{ . | first | value }}{{ else }}some{{ end }}
            RUNNING replica(s) short of its target for ${human('HyphaServeDeploymentReplicasMismatch')} while the target stayed
            constant.
          `),
        },
      }),
      alert(c, 'HyphaServeNoProxyCanWakeApps', {
        comment:
          'The exporter\'s decision (hypha_serve_cluster_no_proxy_can_wake_apps: deployments idle at zero and no Serve proxy ' +
          'ready, every probed proxy unready or Ray listing none, the head proxy included; absent while Ray is not sampled or ' +
          `no proxy is probed), over the exporter replicas (max) and bridged for ${c.bridge}; no recorded level. Only the ` +
          'head-node proxy is guaranteed ready at zero (Ray PR #47002, proxy_router.py); a worker-node proxy is ready once an ' +
          'ingress deployment it routes to had replicas (a latch), and 503 while drained. Fires with the head proxy unready ' +
          'and also when Ray lists no head proxy at all.',
        expr: decidedOver(c, m('hypha_serve_cluster_no_proxy_can_wake_apps'), ID.cluster),
        annotations: {
          summary: 'Apps are scaled to zero and no Serve proxy is ready to wake them.',
          description: prose(`
            {{ with ${queryOf(c, m('hypha_serve_deployment_scaled_to_zero'), ID.cluster, { wrap: (s) => `max(sum without (app, deployment) (${s}))` })} }}{{ . | first | value }}{{ else }}Some{{ end }}
            deployment(s) on Ray cluster {{ $labels.ray_cluster }} are idle at zero replicas, and for
            ${human('HyphaServeNoProxyCanWakeApps')} no Serve proxy has answered /-/healthz (or Ray lists no head-node proxy).
            The head-node proxy is the only one Ray keeps ready at zero replicas (Ray PR #47002); a worker-node proxy is
            ready only once an ingress deployment it routes to has had replicas, and not while it is drained. HTTP
            requests to apps whose ingress deployment is at zero fail and cannot wake them until a proxy is ready.
            BioEngine apps are not affected: HTTP never wakes them (their ProxyDeployment has no __call__).
          `),
        },
      }),
      alert(c, 'HyphaServeAllProxiesUnready', {
        comment:
          'Apps that have replicas are unreachable over HTTP: nothing routes to them. The exporter\'s decision ' +
          '(hypha_serve_cluster_all_proxies_unready: deployments with RUNNING replicas and no Serve proxy ready; absent while ' +
          `Ray is not sampled or no proxy is probed), over the exporter replicas (max) and bridged for ${c.bridge}; no recorded level.`,
        expr: decidedOver(c, m('hypha_serve_cluster_all_proxies_unready'), ID.cluster),
        annotations: {
          summary: 'Every Serve proxy of a Ray cluster is unready while apps there have RUNNING replicas.',
          description: prose(`
            No Serve proxy of Ray cluster {{ $labels.ray_cluster }} has answered /-/healthz for
            ${human('HyphaServeAllProxiesUnready')}, while its deployments have
            {{ with ${queryOf(c, m('hypha_serve_deployment_replicas'), ID.cluster, { matchers: 'state="RUNNING"', wrap: (s) => `max(sum without (app, deployment, state) (${s}))` })} }}{{ . | first | value }}{{ else }}some{{ end }}
            RUNNING replica(s). HTTP requests to every app on the cluster fail; calls through deployment handles (BioEngine's
            Hypha services) may still work.
          `),
        },
      }),
    ],
  };
}
