import type { Logger } from '../../log';
import type { HyphaServerConfig } from '../../config/load';
import { ClusterMapping, defaultClusterMapping, HyphaRegistrationConfig } from '../../config/hypha-schema';
import { CauseConfirmation } from '../../registration/confirm';
import { expectedService, ExpectedService, mappedWorkspaces, WorkerDirectory } from '../../registration/expected';
import { withHypha } from '../../registration/snapshot';
import { matchProviders, ProviderIndex, RegistrationTracker, settlingAfterReconnect } from '../../registration/tracker';
import type { AppRegistration, HyphaSample, WorkerSample } from '../../registration/types';
import { BIOENGINE_WORKER_TYPE, clusterOfWorker, parseWorkerApps, parseWorkerStatus } from '../../registration/workers';
import type { SnapshotStore } from '../../snapshot/store';
import { failedHealth, newSourceHealth, SampleErrorReason, Snapshot, SourceHealth } from '../../snapshot/types';
import { errorMessage } from '../../util/errors';
import { Poller, Source } from '../poller';
import { HyphaClient, HyphaConnection } from './client';
import { HyphaError, sampleReason, toHyphaError } from './errors';
import { RegistryView } from './registry-view';
import { HyphaEvent, HyphaEventType, parseServiceId } from './types';

export const HYPHA_SOURCE_KIND = 'hypha' as const;

/** How long a lost registration may wait for a Serve sample that can explain it (see CauseConfirmation). */
const CAUSE_CONFIRM_MAX_MS = 3000;

/** Events that change the registry view; client_disconnected stands for all of a client's services. */
const REGISTRY_EVENTS: readonly HyphaEventType[] = ['service_added', 'service_removed', 'service_updated', 'client_disconnected'];

export interface HyphaSourceOptions {
  server: HyphaServerConfig;
  registration: HyphaRegistrationConfig;
  /** Configured Ray cluster names (clusters without an explicit mapping get the default). */
  rayClusters: readonly string[];
}

/**
 * The Hypha registry as seen by the exporter, and each expected Serve app's
 * registration. One connection (rebuilt whenever it turns suspect); per cycle
 * one listServices per workspace; events patch the view in between and
 * trigger a re-evaluation at once. BioEngine workers are asked on their own,
 * slower cycle. Evaluation also runs whenever the Ray part of the snapshot
 * changes, so the registration state follows both upstreams.
 */
export class HyphaSource implements Source {
  readonly kind = HYPHA_SOURCE_KIND;
  readonly #client: HyphaClient;
  readonly #poller: Poller;
  readonly #workerPoller: Poller;
  readonly #registry = new RegistryView();
  readonly #tracker = new RegistrationTracker();
  readonly #mappings: Map<string, ClusterMapping>;
  readonly #startedSeconds = Date.now() / 1000;
  get #connectTimeoutMs(): number {
    return Math.max(this.opts.registration.timeoutMs, 5000);
  }
  readonly #eventsTotal: Record<string, number> = {};
  #health: SourceHealth;
  #conn: HyphaConnection | undefined;
  /** When the current connection's first full listing completed (0 = not yet). */
  #listedSeconds = 0;
  #connectionsListed = 0;
  #apps: AppRegistration[] = [];
  #workers: WorkerSample[] = [];
  #lastRay: Snapshot['ray'] | undefined;
  #evalQueued = false;
  readonly #confirm = new CauseConfirmation(CAUSE_CONFIRM_MAX_MS, (cluster) => this.store.requestFresh('ray', cluster), () => this.#evaluate());
  #stopped = false;
  #unsubscribeStore: (() => void) | undefined;
  /** Reconnects counted by a predecessor this source replaced (a reload): the counter continues. */
  #inheritedReconnects = 0;

  constructor(
    private readonly opts: HyphaSourceOptions,
    private readonly store: SnapshotStore,
    private readonly log: Logger,
  ) {
    // A source restarted by a reload continues its predecessor: health, the published evaluation
    // and the tracker's history (missing spells, ever registered), so a reload is not an outage.
    const inherited = store.get().hypha;
    const previous = inherited?.target === opts.server.name ? inherited : undefined;
    this.#health = newSourceHealth(HYPHA_SOURCE_KIND, opts.server.name, opts.registration.intervalMs / 1000, previous?.health);
    if (previous) {
      this.#apps = previous.apps.filter((a) => opts.rayClusters.includes(a.cluster));
      this.#workers = previous.workers;
      this.#tracker.seed(this.#apps);
      this.#inheritedReconnects = previous.reconnectsTotal;
      Object.assign(this.#eventsTotal, previous.eventsTotal);
    } else {
      const restored = store.get().restored?.registration;
      if (restored) this.#tracker.restore(restored);
    }
    this.#mappings = new Map(opts.rayClusters.map((c) => [c, opts.registration.clusters.find((m) => m.cluster === c) ?? defaultClusterMapping(c)]));
    this.#client = new HyphaClient({
      serverUrl: opts.server.serverUrl,
      workspace: opts.server.workspace,
      token: opts.server.token,
      callTimeoutMs: opts.registration.timeoutMs,
      connectTimeoutMs: this.#connectTimeoutMs,
      events: REGISTRY_EVENTS,
      logger: log,
    });
    this.#client.on({
      connected: (conn) => this.#onConnected(conn),
      disconnected: (reason) => this.#onDisconnected(reason),
      event: (e) => this.#onEvent(e),
    });
    const bug = (what: string) => (e: unknown) => this.log.error({ err: errorMessage(e) }, `hypha ${what} bug`);
    this.#poller = new Poller(opts.registration.intervalMs, () => this.#sample(), bug('sampler'));
    this.#workerPoller = new Poller(opts.registration.workers.intervalMs, () => this.#sampleWorkers(), bug('worker sampler'));
  }

  get target(): string {
    return this.opts.server.name;
  }

  /** The live client (tests and the watched-services source may share facts from it). */
  get client(): HyphaClient {
    return this.#client;
  }

  start(): void {
    this.#stopped = false;
    this.#unsubscribeStore = this.store.onChange((s) => {
      if (s.ray !== this.#lastRay) this.#queueEvaluate();
    });
    this.#publish();
    this.#client.start();
    this.#poller.start();
    this.#workerPoller.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribeStore?.();
    this.#confirm.clear();
    await Promise.all([this.#poller.stop(), this.#workerPoller.stop()]);
    await this.#client.stop();
  }

  forget(): void {
    this.store.update((s) => withHypha(s, undefined));
  }

  async sampleNow(): Promise<void> {
    await this.#poller.runOnce();
  }

  // ---------------------------------------------------------------- connection

  #onConnected(conn: HyphaConnection): void {
    this.#conn = conn;
    this.#registry.invalidate();
    this.#listedSeconds = 0;
    // List at once rather than at the next tick: recovery time is one listing, not one interval.
    // A cycle still running on the old connection fails; then list again on this one.
    void this.#poller.runOnce().then(() => {
      if (this.#conn === conn && this.#listedSeconds === 0 && !this.#stopped) return this.#poller.runOnce();
      return undefined;
    }).then(() => this.#workerPoller.runOnce());
  }

  #onDisconnected(reason: string): void {
    this.#conn = undefined;
    this.#registry.invalidate();
    this.#listedSeconds = 0;
    this.#recordFailure(new HyphaError('connect', 'connection', `connection lost: ${reason}`), undefined);
  }

  #onEvent(e: HyphaEvent): void {
    if (!this.#conn || e.generation !== this.#conn.generation) return;
    this.#eventsTotal[e.type] = (this.#eventsTotal[e.type] ?? 0) + 1;
    if (this.#registry.apply(e)) this.#evaluate();
  }

  // ---------------------------------------------------------------- sampling

  #workspaces(conn: HyphaConnection): string[] {
    return [...new Set([...mappedWorkspaces([...this.#mappings.values()], conn.workspace), ...this.opts.registration.workspaces])];
  }

  async #sample(): Promise<void> {
    const started = performance.now();
    let conn = this.#client.connection;
    if (!conn && this.#client.lastError === undefined) {
      // The first connection is still being made: that is startup, not an error to count.
      conn = await this.#client.waitUntilUp(this.#connectTimeoutMs).catch(() => undefined);
    }
    if (!conn) {
      // Not connected: the client is retrying on its own; report why.
      const err = this.#client.lastError ?? new HyphaError('timeout', 'connect', `no connection to Hypha within ${this.#connectTimeoutMs} ms`);
      this.#recordFailure(err, started);
      return;
    }
    const timeoutMs = this.opts.registration.timeoutMs;
    const workspaces = this.#workspaces(conn);
    try {
      await Promise.all(
        workspaces.map(async (ws) => {
          this.#registry.beginList(ws);
          try {
            const list = await conn.listServices({ workspace: ws }, { timeoutMs });
            if (conn !== this.#conn) throw new HyphaError('never_sent', 'listServices', 'connection replaced during the listing');
            this.#registry.finishList(ws, list);
          } catch (e) {
            this.#registry.abortList(ws);
            throw e;
          }
        }),
      );
    } catch (e) {
      this.#recordFailure(toHyphaError(e, 'listServices', [this.opts.server.token]), started);
      return;
    }
    const wasUp = this.#health.up;
    const nowSeconds = Date.now() / 1000;
    if (this.#listedSeconds === 0) {
      this.#listedSeconds = nowSeconds;
      this.#connectionsListed++;
    }
    this.#health = { ...this.#health, up: true, lastSuccessSeconds: nowSeconds, lastDurationSeconds: (performance.now() - started) / 1000 };
    if (!wasUp) {
      this.log.info({ hypha: this.target, workspace: conn.workspace, server_id: conn.info.serverId, generation: conn.generation, listed: this.#registry.counts() }, 'hypha source up');
    }
    this.#evaluate();
  }

  #recordFailure(err: HyphaError, started: number | undefined): void {
    const reason: SampleErrorReason = sampleReason(err.kind);
    const wasUp = this.#health.up;
    const firstFailure = this.#health.lastSuccessSeconds === undefined && this.#health.lastError === undefined;
    this.#health = failedHealth(this.#health, reason, err.message, started !== undefined ? (performance.now() - started) / 1000 : undefined);
    if (wasUp || firstFailure) this.log.warn({ hypha: this.target, reason, error: err.message }, 'hypha source down');
    this.#publish();
  }

  // ---------------------------------------------------------------- workers

  #workerIds(): string[] {
    const ids = new Set(this.opts.registration.workers.services);
    const conn = this.#conn;
    if (this.opts.registration.workers.discover && conn) {
      for (const ws of this.#workspaces(conn)) {
        for (const s of this.#registry.services(ws)) if (s.type === BIOENGINE_WORKER_TYPE) ids.add(s.id);
      }
    }
    return [...ids].sort();
  }

  async #sampleWorkers(): Promise<void> {
    const conn = this.#client.connection;
    if (!conn) return;
    // Discovery needs a listing of this connection first.
    if (this.opts.registration.workers.discover && this.#listedSeconds === 0) await this.#poller.runOnce();
    const { timeoutMs, logsTail } = this.opts.registration.workers;
    const secrets = [this.opts.server.token];
    const previous = new Map(this.#workers.map((w) => [w.worker, w]));
    const samples = await Promise.all(
      this.#workerIds().map(async (worker): Promise<WorkerSample> => {
        const ids = parseServiceId(worker);
        const base: WorkerSample = { worker, workspace: ids?.workspace ?? '', clientId: ids?.clientId ?? '', up: false, apps: [] };
        try {
          // Called at the worker's explicit id, not through getService: resolving asks the provider
          // itself, so a frozen worker that Hypha still lists would time out a manager call and make
          // the registry connection look broken (a rebuild, and every registration withheld while it
          // settles). A call at the id only times out this worker.
          const status = parseWorkerStatus(await conn.callDirect(worker, 'get_status', [], { timeoutMs }));
          if (!status) throw new HyphaError('schema', 'get_status', 'get_status: unexpected answer');
          let apps: WorkerSample['apps'] = [];
          let error: string | undefined;
          try {
            const parsed = parseWorkerApps(await conn.callDirect(worker, 'get_app_status', [], { timeoutMs, kwargs: { logs_tail: logsTail } }));
            if (!parsed) throw new HyphaError('schema', 'get_app_status', 'get_app_status: unexpected answer');
            apps = parsed;
          } catch (e) {
            // Up but not telling (e.g. forbidden): the per-app series stay absent.
            error = toHyphaError(e, 'get_app_status', secrets).message;
          }
          return { ...base, clientId: status.clientId ?? base.clientId, up: true, apps, error, lastSuccessSeconds: Date.now() / 1000 };
        } catch (e) {
          const error = toHyphaError(e, `worker ${worker}`, secrets).message;
          return { ...base, error, lastSuccessSeconds: previous.get(worker)?.lastSuccessSeconds };
        }
      }),
    );
    for (const s of samples) {
      const before = previous.get(s.worker);
      if (s.error !== undefined && s.error !== before?.error) this.log.warn({ worker: s.worker, up: s.up, error: s.error }, 'bioengine worker cross-check failed');
      if (s.up && before !== undefined && !before.up) this.log.info({ worker: s.worker }, 'bioengine worker answers again');
    }
    if (this.#stopped) return;
    this.#workers = samples.map((w) => ({ ...w, rayCluster: this.#clusterOfWorker(w, conn.workspace) }));
    this.#evaluate();
  }

  #clusterOfWorker(w: WorkerSample, connectionWorkspace: string): string | undefined {
    const facts = [...this.#mappings.entries()].map(([cluster, m]) => ({
      cluster,
      enabled: m.bioengine.enabled,
      workspace: m.bioengine.workspace ?? connectionWorkspace,
      workerClientId: m.bioengine.workerClientId,
    }));
    return clusterOfWorker(w, facts);
  }

  // ---------------------------------------------------------------- evaluation

  #queueEvaluate(): void {
    if (this.#evalQueued) return;
    this.#evalQueued = true;
    queueMicrotask(() => {
      this.#evalQueued = false;
      this.#evaluate();
    });
  }

  #evaluate(): void {
    if (this.#stopped) return;
    const s = this.store.get();
    this.#lastRay = s.ray;
    const conn = this.#conn;
    if (conn && this.#listedSeconds > 0) {
      const dir: WorkerDirectory = {
        samples: this.#workers,
        registeredWorkers: (ws) => this.#registry.services(ws).filter((x) => x.type === BIOENGINE_WORKER_TYPE).map((x) => x.clientId),
      };
      const input = {
        nowSeconds: Date.now() / 1000,
        startedSeconds: this.#startedSeconds,
        connectedSeconds: this.#listedSeconds,
        afterReconnect: this.#connectionsListed > 1,
        settleMs: this.opts.registration.reconnectSettleMs,
      };
      const apps: AppRegistration[] = [];
      for (const [cluster, mapping] of this.#mappings) {
        const sample = s.ray.get(cluster);
        if (!sample?.state) {
          // Ray unknown: keep this cluster's last evaluation (its counters); the gauges are hidden while the source is down.
          apps.push(...this.#apps.filter((a) => a.cluster === cluster));
          continue;
        }
        const expected = new Map<string, ExpectedService>();
        for (const app of sample.state.apps) {
          const e = expectedService(cluster, app, mapping, conn.workspace, dir, this.#tracker.lastWorkerClientId(cluster, app.name));
          if (e) expected.set(app.name, e);
        }
        const workspaces = new Set([...expected.values()].map((e) => e.workspace));
        if (![...workspaces].every((ws) => this.#registry.known(ws))) {
          apps.push(...this.#apps.filter((a) => a.cluster === cluster));
          continue;
        }
        const providers = new ProviderIndex([...workspaces].flatMap((ws) => this.#registry.services(ws)));
        // While settling after a reconnect the tracker withholds a missing registration anyway;
        // holding would republish the evaluation from before the outage.
        const lost = () => !settlingAfterReconnect(input) && this.#apps.some((a) => {
          const exp = a.cluster === cluster && a.registered && a.settled ? expected.get(a.app) : undefined;
          return exp !== undefined && !matchProviders(exp, providers).registered;
        });
        const verdict = this.#confirm.check(cluster, sample.state.requestedSeconds, lost, input.nowSeconds);
        if (verdict.hold) {
          apps.push(...this.#apps.filter((a) => a.cluster === cluster));
          continue;
        }
        if (verdict.seenSeconds !== undefined) {
          const waitedMs = Math.round((input.nowSeconds - verdict.seenSeconds) * 1000);
          this.log.debug({ cluster, waited_ms: waitedMs, fresh: (sample.state.requestedSeconds ?? 0) >= verdict.seenSeconds }, 'registration loss judged on a fresh Serve sample');
        }
        apps.push(...this.#tracker.evaluateCluster(cluster, sample.state.apps, expected, providers, { ...input, changeSeenSeconds: verdict.seenSeconds }));
      }
      this.#logTransitions(apps);
      this.#apps = apps;
    }
    this.#publish();
  }

  #logTransitions(next: readonly AppRegistration[]): void {
    const prev = new Map(this.#apps.map((a) => [`${a.cluster}/${a.app}`, a]));
    for (const a of next) {
      const p = prev.get(`${a.cluster}/${a.app}`);
      if (!a.settled || (p && p.state === a.state && p.providerClientId === a.providerClientId)) continue;
      const fields = { cluster: a.cluster, app: a.app, service: a.service, state: a.state, provider_client_id: a.providerClientId, mismatch: a.clientIdMismatch };
      if (a.registered) this.log.info(fields, p ? 'hypha registration changed' : 'hypha registration present');
      else if (a.state === 'not_running') this.log.info(fields, 'hypha registration not due: app not running');
      else this.log.warn(fields, 'hypha registration missing');
    }
  }

  #publish(): void {
    if (this.#stopped) return;
    const conn = this.#conn;
    const sample: HyphaSample = {
      target: this.target,
      health: this.#health,
      reconnectsTotal: this.#client.reconnects + this.#inheritedReconnects,
      generation: this.#client.generation,
      workspace: conn?.workspace,
      serverId: conn?.info.serverId,
      hyphaVersion: conn?.info.hyphaVersion,
      apps: this.#apps,
      workers: this.#workers,
      servicesByWorkspace: this.#registry.counts(),
      eventsTotal: { ...this.#eventsTotal },
    };
    this.store.update((s) => withHypha(s, sample));
  }
}
