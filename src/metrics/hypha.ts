import { Registry } from 'prom-client';
import { isMissing, REGISTRATION_STATES } from '../registration/types';
import { APP_STATUSES, Snapshot } from '../snapshot/types';
import { counter, gauge, MetricsSection, setCounter, setStateSet } from './section';

// Identity of a registration is (ray_cluster, app) on a Hypha server: the expected service id is
// derived and can change while the condition holds (a worker restart), so it lives in an _info series.
const APP = ['ray_cluster', 'app', 'hypha'] as const;

/**
 * Hypha connection, per-app registration and the BioEngine workers' own view.
 * Registration gauges exist only while both the app's Ray source and the
 * Hypha source are up (and the app is not in the post-reconnect settle
 * window): an unknown is absent, never a 0.
 */
export class HyphaMetrics implements MetricsSection {
  readonly #reconnects;
  readonly #generation;
  readonly #registered;
  readonly #expected;
  readonly #state;
  readonly #since;
  readonly #mismatch;
  readonly #changes;
  readonly #workerUp;
  readonly #workerAppStatus;
  readonly #workerAppRegistered;

  constructor(r: Registry) {
    this.#reconnects = counter(r, 'hypha_serve_hypha_reconnects_total', 'Connections to the Hypha server rebuilt after the first one.', ['target']);
    this.#generation = gauge(r, 'hypha_serve_hypha_connection_generation', 'Number of the current Hypha connection (1 = the first); moves on every rebuild.', ['target']);
    this.#registered = gauge(
      r,
      'hypha_serve_app_registered',
      '1 when the Serve app\'s expected Hypha service is registered (also under another client id), 0 when not. Present only while the Ray and Hypha sources are up.',
      APP,
    );
    this.#expected = gauge(
      r,
      'hypha_serve_app_expected_service_info',
      'The Hypha service the Serve app is expected to register ("ws/client:svc", client "*" while never known); always 1.',
      [...APP, 'workspace', 'service'],
    );
    this.#state = gauge(r, 'hypha_serve_app_registration_state', 'Registration of the Serve app in Hypha, and why it is missing (state set).', [...APP, 'state']);
    this.#since = gauge(r, 'hypha_serve_app_unregistered_since_timestamp_seconds', 'Start of the current spell in which the running app has no Hypha registration (Unix seconds); present only while missing.', APP);
    this.#mismatch = gauge(r, 'hypha_serve_app_registration_client_id_mismatch', '1 when the app\'s service is registered only under a client id other than the expected one.', APP);
    this.#changes = counter(r, 'hypha_serve_app_registration_client_id_changes_total', 'Times the client id registering the app\'s service changed (e.g. proxy replicas re-registering).', APP);
    this.#workerUp = gauge(r, 'hypha_serve_worker_up', '1 when the BioEngine worker answered get_status in its last cross-check.', ['hypha', 'worker']);
    this.#workerAppStatus = gauge(
      r,
      'hypha_serve_worker_app_status',
      'App status as the BioEngine worker reports it (state set); ray_cluster is empty when the config does not tie the worker to one cluster.',
      ['hypha', 'worker', 'ray_cluster', 'app', 'status'],
    );
    this.#workerAppRegistered = gauge(
      r,
      'hypha_serve_worker_app_service_registered',
      'The BioEngine worker\'s own belief whether the app\'s service is registered; absent when the worker does not say (no released BioEngine does).',
      ['hypha', 'worker', 'ray_cluster', 'app'],
    );
  }

  rebuild(s: Snapshot): void {
    for (const m of [this.#generation, this.#registered, this.#expected, this.#state, this.#since, this.#mismatch, this.#workerUp, this.#workerAppStatus, this.#workerAppRegistered]) m.reset();
    this.#reconnects.reset();
    this.#changes.reset();
    const h = s.hypha;
    if (!h) return;
    const hypha = h.target;
    setCounter(this.#reconnects, { target: hypha }, h.reconnectsTotal);
    if (h.generation > 0) this.#generation.set({ target: hypha }, h.generation);
    for (const a of h.apps) {
      const l = { ray_cluster: a.cluster, app: a.app, hypha };
      setCounter(this.#changes, l, a.clientIdChangesTotal);
      this.#expected.set({ ...l, workspace: a.workspace, service: a.service }, 1);
      const rayUp = s.ray.get(a.cluster)?.health.up === true;
      if (!h.health.up || !rayUp || !a.settled) continue;
      this.#registered.set(l, a.registered ? 1 : 0);
      setStateSet(this.#state, l, 'state', REGISTRATION_STATES, a.state);
      this.#mismatch.set(l, a.clientIdMismatch ? 1 : 0);
      if (isMissing(a.state) && a.unregisteredSinceSeconds !== undefined) this.#since.set(l, a.unregisteredSinceSeconds);
    }
    if (!h.health.up) return;
    for (const w of h.workers) {
      this.#workerUp.set({ hypha, worker: w.worker }, w.up ? 1 : 0);
      if (!w.up) continue;
      for (const app of w.apps) {
        const wl = { hypha, worker: w.worker, ray_cluster: w.rayCluster ?? '', app: app.app };
        setStateSet(this.#workerAppStatus, wl, 'status', APP_STATUSES, app.status);
        if (app.serviceRegistered !== undefined) this.#workerAppRegistered.set(wl, app.serviceRegistered ? 1 : 0);
      }
    }
  }
}
