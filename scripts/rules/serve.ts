// Group hypha-serve-serve: Ray Serve apps, deployments and proxies; and the recording rules only
// dashboards read (rules/recording.yml).
import type { MixinConfig } from './config';
import { alert, Group } from './model';
import { block, bridge, humanDuration, ID, indent, labels, m, noProxyReady, prose, queryOf } from './promql';

export const SERVE = {
  scaledToZero: 'ray_cluster:hypha_serve_deployment_scaled_to_zero:sum',
  runningReplicas: 'ray_cluster:hypha_serve_deployment_replicas_running:sum',
  targetMinusRunning: 'ray_cluster_app_deployment:hypha_serve_deployment_replicas:target_minus_running',
  unhealthy: 'ray_cluster_app:hypha_serve_app_unhealthy:bool',
  unhealthyBridged: 'ray_cluster_app:hypha_serve_app_unhealthy:bridged',
  replicasShort: 'ray_cluster_app_deployment:hypha_serve_deployment_replicas_short:bool',
  replicasShortBridged: 'ray_cluster_app_deployment:hypha_serve_deployment_replicas_short:bridged',
  noProxyCanWake: 'ray_cluster:hypha_serve_proxy_none_ready_apps_at_zero:bool',
  noProxyCanWakeBridged: 'ray_cluster:hypha_serve_proxy_none_ready_apps_at_zero:bridged',
  allProxiesUnready: 'ray_cluster:hypha_serve_proxy_none_ready_replicas_running:bool',
  allProxiesUnreadyBridged: 'ray_cluster:hypha_serve_proxy_none_ready_replicas_running:bridged',
} as const;

/** Recording rules no alert reads: for dashboards (rules/recording.yml). */
export const DASHBOARD = {
  proxyReady: 'ray_cluster:hypha_serve_proxy_ready:sum',
  noProxyReady: 'ray_cluster:hypha_serve_proxy_none_ready:bool',
} as const;

export function dashboardGroup(c: MixinConfig): Group {
  return {
    name: 'hypha-serve-dashboards.rules',
    rules: [
      {
        record: DASHBOARD.proxyReady,
        comment: 'Per exporter replica: Serve proxies answering /-/healthz with 200, per Ray cluster.',
        expr: `sum without (node_id, node_ip) (${m('hypha_serve_proxy_ready')})\n`,
      },
      {
        record: DASHBOARD.noProxyReady,
        comment:
          'Per exporter replica: 1 = no Serve proxy of the cluster is ready: every probed proxy unready, or Ray lists no proxy ' +
          'at all (the head proxy included); 0 = one is ready; absent when readiness is not probed (proxy_probe disabled) or ' +
          'Ray not sampled.',
        expr: noProxyReady(labels(c)),
      },
    ],
  };
}

export function serveGroup(c: MixinConfig): Group {
  const S = SERVE;
  const l = labels(c);
  const human = (n: Parameters<typeof alert>[1]) => humanDuration(c.alerts[n].for);
  const noneReady = indent(noProxyReady(l), 14);
  return {
    name: 'hypha-serve-serve',
    rules: [
      {
        record: S.unhealthy,
        comment: 'Per exporter replica: 1 = the app is DEPLOY_FAILED or UNHEALTHY, 0 = another status; absent while its Ray cluster is not sampled.',
        expr: `max without (status) (${m('hypha_serve_app_status')}{status=~"DEPLOY_FAILED|UNHEALTHY"})\n`,
      },
      {
        record: S.unhealthyBridged,
        comment: 'Per app, over the exporter replicas and bridged.',
        expr: bridge(c, S.unhealthy, ID.app.slice(0, 2)),
      },
      alert(c, 'HyphaServeAppUnhealthy', {
        comment: 'Identity (ray_cluster, app): the status (DEPLOY_FAILED or UNHEALTHY) may change while the app stays broken, so it is in the text.',
        expr: `${S.unhealthyBridged} == 1\n`,
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
        record: S.targetMinusRunning,
        comment: 'Per exporter replica: RUNNING replicas short of the target (negative = surplus while downscaling); dashboards plot it.',
        expr: block(`
          ${m('hypha_serve_deployment_target_replicas')}
          - on (${l.of('instance', ...ID.deployment)})
          ${m('hypha_serve_deployment_replicas')}{state="RUNNING"}
        `),
      },
      {
        record: S.replicasShort,
        comment:
          'Per exporter replica: 1 = fewer RUNNING replicas than a target that is above zero (an idle scale-to-zero deployment ' +
          'has target 0) and has not changed for 10 minutes (not a scale-up in progress); 0 otherwise. "Not changed" is max = min ' +
          'over the window, not changes() == 0: MetricsQL\'s changes() counts a series\' first sample as a change.',
        expr: block(`
            (${S.targetMinusRunning} > bool 0)
          * on (${l.of('instance', ...ID.deployment)}) (${m('hypha_serve_deployment_target_replicas')} > bool 0)
          * on (${l.of('instance', ...ID.deployment)})
            (max_over_time(${m('hypha_serve_deployment_target_replicas')}[10m]) - min_over_time(${m('hypha_serve_deployment_target_replicas')}[10m]) == bool 0)
        `),
      },
      {
        record: S.replicasShortBridged,
        comment: 'Per deployment, over the exporter replicas and bridged.',
        expr: bridge(c, S.replicasShort, ID.deployment),
      },
      alert(c, 'HyphaServeDeploymentReplicasMismatch', {
        comment: 'Never at an idle zero (target 0), never during a scale-up (target changed within 10 minutes).',
        expr: `${S.replicasShortBridged} == 1\n`,
        annotations: {
          summary: 'Serve deployment has fewer RUNNING replicas than its target.',
          description: prose(`
            Deployment {{ $labels.deployment }} of app {{ $labels.app }} on Ray cluster {{ $labels.ray_cluster }} has been
            {{ with ${queryOf(c, S.targetMinusRunning, ID.deployment, { wrap: (s) => `max(${s})` })} }}{{ . | first | value }}{{ else }}some{{ end }}
            RUNNING replica(s) short of its target for ${human('HyphaServeDeploymentReplicasMismatch')} while the target stayed
            constant.
          `),
        },
      }),
      {
        record: S.scaledToZero,
        comment: 'Per exporter replica: deployments idle at zero replicas by design, per Ray cluster.',
        expr: `sum without (app, deployment) (${m('hypha_serve_deployment_scaled_to_zero')})\n`,
      },
      {
        record: S.runningReplicas,
        comment: 'Per exporter replica: RUNNING replicas of all deployments, per Ray cluster.',
        expr: `sum without (app, deployment, state) (${m('hypha_serve_deployment_replicas')}{state="RUNNING"})\n`,
      },
      {
        record: S.noProxyCanWake,
        comment:
          'Per exporter replica: 1 = deployments idle at zero and no proxy ready to take the request that wakes them, 0 ' +
          'otherwise. Only the head-node proxy is guaranteed ready at zero (Ray PR #47002, proxy_router.py); a worker-node ' +
          'proxy is ready once an ingress deployment it routes to had replicas (a latch), and 503 while drained.',
        expr: block(`
            (${S.scaledToZero} > bool 0)
          * on (${l.of('instance', 'ray_cluster')}) group_left ()
            (
${noneReady}
            )
        `),
      },
      {
        record: S.noProxyCanWakeBridged,
        comment: 'Per Ray cluster, over the exporter replicas and bridged.',
        expr: bridge(c, S.noProxyCanWake, ID.cluster),
      },
      alert(c, 'HyphaServeNoProxyCanWakeApps', {
        comment: 'Fires with the head proxy unready and also when Ray lists no head proxy (no proxy_head == 1 series) at all.',
        expr: `${S.noProxyCanWakeBridged} == 1\n`,
        annotations: {
          summary: 'Apps are scaled to zero and no Serve proxy is ready to wake them.',
          description: prose(`
            {{ with ${queryOf(c, S.scaledToZero, ID.cluster, { wrap: (s) => `max(${s})` })} }}{{ . | first | value }}{{ else }}Some{{ end }}
            deployment(s) on Ray cluster {{ $labels.ray_cluster }} are idle at zero replicas, and for
            ${human('HyphaServeNoProxyCanWakeApps')} no Serve proxy has answered /-/healthz (or Ray lists no head-node proxy).
            The head-node proxy is the only one Ray keeps ready at zero replicas (Ray PR #47002); a worker-node proxy is
            ready only once an ingress deployment it routes to has had replicas, and not while it is drained. HTTP
            requests to apps whose ingress deployment is at zero fail and cannot wake them until a proxy is ready.
            BioEngine apps are not affected: HTTP never wakes them (their ProxyDeployment has no __call__).
          `),
        },
      }),
      {
        record: S.allProxiesUnready,
        comment: 'Per exporter replica: 1 = deployments still have RUNNING replicas and no Serve proxy of the cluster is ready to route to them, 0 otherwise.',
        expr: block(`
            (${S.runningReplicas} > bool 0)
          * on (${l.of('instance', 'ray_cluster')}) group_left ()
            (
${noneReady}
            )
        `),
      },
      {
        record: S.allProxiesUnreadyBridged,
        comment: 'Per Ray cluster, over the exporter replicas and bridged.',
        expr: bridge(c, S.allProxiesUnready, ID.cluster),
      },
      alert(c, 'HyphaServeAllProxiesUnready', {
        comment: 'Apps that have replicas are unreachable over HTTP: nothing routes to them.',
        expr: `${S.allProxiesUnreadyBridged} == 1\n`,
        annotations: {
          summary: 'Every Serve proxy of a Ray cluster is unready while apps there have RUNNING replicas.',
          description: prose(`
            No Serve proxy of Ray cluster {{ $labels.ray_cluster }} has answered /-/healthz for
            ${human('HyphaServeAllProxiesUnready')}, while its deployments have
            {{ with ${queryOf(c, S.runningReplicas, ID.cluster, { wrap: (s) => `max(${s})` })} }}{{ . | first | value }}{{ else }}some{{ end }}
            RUNNING replica(s). HTTP requests to every app on the cluster fail; calls through deployment handles (BioEngine's
            Hypha services) may still work.
          `),
        },
      }),
    ],
  };
}
