import { Registry } from 'prom-client';
import { APP_STATUSES, DEPLOYMENT_STATUSES, PROXY_STATUSES, Snapshot } from '../snapshot/types';
import { counter, gauge, MetricsSection, setCounter, setStateSet } from './section';

// `ray_cluster`, not `cluster`: multi-cluster Prometheus setups use `cluster` as an external label.
const APP = ['ray_cluster', 'app'] as const;
const DEP = ['ray_cluster', 'app', 'deployment'] as const;
const PROXY = ['ray_cluster', 'node_id', 'node_ip'] as const;

/** Ray Serve application, deployment and proxy state. */
export class RayMetrics implements MetricsSection {
  readonly #appStatus;
  readonly #appInfo;
  readonly #appDeployed;
  readonly #appMessage;
  readonly #depStatus;
  readonly #depReplicas;
  readonly #depTarget;
  readonly #depMin;
  readonly #depMax;
  readonly #depZero;
  readonly #depAuto;
  readonly #proxyReady;
  readonly #proxyHead;
  readonly #proxyStatus;
  readonly #dropped;
  readonly #malformed;

  constructor(r: Registry) {
    this.#appStatus = gauge(r, 'hypha_serve_app_status', 'Ray Serve application status (state set: 1 for the current status).', [...APP, 'status']);
    this.#appInfo = gauge(r, 'hypha_serve_app_info', 'Ray Serve application facts; always 1.', [...APP, 'route_prefix', 'source']);
    this.#appDeployed = gauge(r, 'hypha_serve_app_deployed_timestamp_seconds', 'When the application was last deployed (Unix seconds).', APP);
    this.#appMessage = gauge(r, 'hypha_serve_app_message_present', '1 when Ray Serve reports a non-empty status message for the application.', APP);
    this.#depStatus = gauge(r, 'hypha_serve_deployment_status', 'Ray Serve deployment status (state set).', [...DEP, 'status']);
    this.#depReplicas = gauge(r, 'hypha_serve_deployment_replicas', 'Replicas of the deployment per replica state (explicit zeros).', [...DEP, 'state']);
    this.#depTarget = gauge(r, 'hypha_serve_deployment_target_replicas', 'Replica count Ray Serve is currently targeting.', DEP);
    this.#depMin = gauge(r, 'hypha_serve_deployment_min_replicas', 'Lower replica bound (autoscaling min_replicas, or the fixed num_replicas).', DEP);
    this.#depMax = gauge(r, 'hypha_serve_deployment_max_replicas', 'Upper replica bound (autoscaling max_replicas, or the fixed num_replicas).', DEP);
    this.#depZero = gauge(r, 'hypha_serve_deployment_scaled_to_zero', '1 when the deployment is idle at zero by design (autoscaling allows 0, target 0, no RUNNING replica, serviceable status).', DEP);
    this.#depAuto = gauge(r, 'hypha_serve_deployment_autoscaling', '1 when the deployment has an autoscaling config.', DEP);
    this.#proxyReady = gauge(r, 'hypha_serve_proxy_ready', '1 when the Serve HTTP proxy answers 200 on /-/healthz.', PROXY);
    this.#proxyHead = gauge(r, 'hypha_serve_proxy_head', '1 for the proxy on the controller (head) node, the one that can wake scaled-to-zero apps.', PROXY);
    this.#proxyStatus = gauge(r, 'hypha_serve_proxy_status', 'Controller view of the Serve proxy actor (state set).', [...PROXY, 'status']);
    this.#dropped = counter(r, 'hypha_serve_cluster_apps_dropped_total', 'Applications left out by the per-cluster max_apps cap, summed over samples.', ['ray_cluster']);
    this.#malformed = counter(r, 'hypha_serve_cluster_malformed_entries_total', 'Malformed apps, deployments or proxies skipped in Serve API answers.', ['ray_cluster']);
  }

  rebuild(s: Snapshot): void {
    for (const m of [this.#appStatus, this.#appInfo, this.#appDeployed, this.#appMessage, this.#depStatus, this.#depReplicas,
      this.#depTarget, this.#depMin, this.#depMax, this.#depZero, this.#depAuto, this.#proxyReady, this.#proxyHead, this.#proxyStatus]) {
      m.reset();
    }
    this.#dropped.reset();
    this.#malformed.reset();
    for (const sample of s.ray.values()) {
      const ray_cluster = sample.cluster;
      setCounter(this.#dropped, { ray_cluster }, sample.appsDroppedTotal);
      setCounter(this.#malformed, { ray_cluster }, sample.malformedTotal);
      if (!sample.state) continue;
      for (const app of sample.state.apps) {
        const a = { ray_cluster, app: app.name };
        setStateSet(this.#appStatus, a, 'status', APP_STATUSES, app.status);
        this.#appInfo.set({ ...a, route_prefix: app.routePrefix ?? '', source: app.source ?? '' }, 1);
        if (app.lastDeployedSeconds !== undefined) this.#appDeployed.set(a, app.lastDeployedSeconds);
        this.#appMessage.set(a, app.messagePresent ? 1 : 0);
        for (const d of app.deployments) {
          const dl = { ...a, deployment: d.name };
          setStateSet(this.#depStatus, dl, 'status', DEPLOYMENT_STATUSES, d.status);
          for (const [state, n] of Object.entries(d.replicas)) this.#depReplicas.set({ ...dl, state }, n);
          if (d.targetReplicas !== undefined) this.#depTarget.set(dl, d.targetReplicas);
          if (d.minReplicas !== undefined) this.#depMin.set(dl, d.minReplicas);
          if (d.maxReplicas !== undefined) this.#depMax.set(dl, d.maxReplicas);
          this.#depZero.set(dl, d.scaledToZero ? 1 : 0);
          this.#depAuto.set(dl, d.autoscaling ? 1 : 0);
        }
      }
      for (const p of sample.state.proxies) {
        const pl = { ray_cluster, node_id: p.nodeId, node_ip: p.nodeIp };
        if (p.ready !== undefined) this.#proxyReady.set(pl, p.ready ? 1 : 0);
        this.#proxyHead.set(pl, p.head ? 1 : 0);
        setStateSet(this.#proxyStatus, pl, 'status', PROXY_STATUSES, p.status);
      }
    }
  }
}
