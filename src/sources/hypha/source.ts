import type { Logger } from '../../util/log';
import type { HyphaServerConfig } from '../../config/load';
import type { HyphaRegistrationConfig } from '../../config/hypha-schema';
import { BIOENGINE_WORKER_TYPE, parseWorkerApps, parseWorkerStatus } from './workers';
import type { HyphaServerSample } from '../../snapshot/hypha';
import type { WorkerSample } from '../../snapshot/registration';
import type { SnapshotStore } from '../../snapshot/store';
import type { ServerIdFacts } from '../../snapshot/handover';
import type { SourceHealth } from '../../snapshot/health';
import { errorMessage, SourceError } from '../../util/errors';
import { HealthBook } from '../health-book';
import { ServerIdWatch } from './server-id';
import { Poller, Source } from '../poller';
import { HyphaClient, HyphaConnection } from './client';
import { fromHypha } from './errors';
import { sampleReason } from '../sample-reason';
import { RegistryView } from './registry-view';
import { parseServiceId } from '../../util/hypha-id';
import type { HyphaEvent, HyphaEventType } from './types';

export const HYPHA_SOURCE_KIND = 'hypha' as const;

/** Events that change the registry view; client_disconnected stands for all of a client's services. */
const REGISTRY_EVENTS: readonly HyphaEventType[] = ['service_added', 'service_removed', 'service_updated', 'client_disconnected'];

export interface HyphaSourceOptions {
  server: HyphaServerConfig;
  /** Interval, timeouts, extra workspaces and the worker cross-check (the mappings are the stage's). */
  registration: HyphaRegistrationConfig;
}

/** What a Hypha source hands the source a reload restarts it as: its health, counters, workers and server-id facts. */
export interface HyphaHandover {
  health: SourceHealth;
  reconnectsTotal: number;
  malformedTotal: number;
  workers: WorkerSample[];
  serverIds: ServerIdFacts;
}

/** What a Hypha source starts from: its predecessor's handover (a reload), or the restart handover (the facts saved before a restart). */
export interface HyphaSourceStart {
  handover?: HyphaHandover;
  restart?: { serverIds?: ServerIdFacts };
}

/** The workspaces to list each cycle, given the connection's own (the mappings decide; see setListing). */
export type WorkspacesToList = (connectionWorkspace: string) => readonly string[];

/**
 * One Hypha server as the exporter sees it: one connection (rebuilt whenever it turns suspect),
 * per cycle one listServices per workspace to list, events patching the registry copy in
 * between, and the BioEngine workers asked on their own, slower cycle. It publishes what it read
 * (Snapshot.hypha) and judges nothing: the registration stage joins it with the Ray part.
 */
export class HyphaSource implements Source<HyphaHandover> {
  readonly kind = HYPHA_SOURCE_KIND;
  readonly #client: HyphaClient;
  readonly #poller: Poller;
  readonly #workerPoller: Poller;
  readonly #registry = new RegistryView();
  get #connectTimeoutMs(): number {
    return Math.max(this.opts.registration.timeoutMs, 5000);
  }
  readonly #health: HealthBook;
  #conn: HyphaConnection | undefined;
  /** When the current connection's first full listing completed (0 = not yet). */
  #listedSeconds = 0;
  #connectionsListed = 0;
  #workers: WorkerSample[] = [];
  /**
   * Each worker's last reported BioEngine version, by service id: a worker that is not listed for a while
   * (Hypha restarting) or fails one cross-check still runs the release it reported.
   */
  readonly #versions = new Map<string, string>();
  #workspacesToList: WorkspacesToList = (ws) => [ws];
  #stopped = false;
  /** Counts the predecessor this source replaced (a reload) handed over: the counters go on from them. */
  #handedOver = { reconnects: 0, malformed: 0 };
  readonly #serverIds: ServerIdWatch;

  constructor(
    private readonly opts: HyphaSourceOptions,
    private readonly store: SnapshotStore,
    private readonly log: Logger,
    { handover, restart }: HyphaSourceStart = {},
  ) {
    // A source restarted by a reload continues its predecessor's health and counters: a reload is not an outage.
    this.#health = new HealthBook({
      kind: HYPHA_SOURCE_KIND, target: opts.server.name, intervalSeconds: opts.registration.intervalMs / 1000, handover: handover?.health,
      log, label: 'hypha', fields: { hypha: opts.server.name }, credential: opts.server.token,
    });
    this.#serverIds = new ServerIdWatch(handover?.serverIds ?? restart?.serverIds);
    if (handover) {
      this.#workers = handover.workers;
      this.#handedOver = { reconnects: handover.reconnectsTotal, malformed: handover.malformedTotal };
    }
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

  /**
   * Which workspaces to list (from the registration mappings). Set again on a reload that changes
   * the mappings: the connection stays; a workspace new to the list is listed from the next cycle.
   */
  setListing(workspaces: WorkspacesToList): void {
    this.#workspacesToList = workspaces;
  }

  start(): void {
    this.#stopped = false;
    this.#publish();
    this.#client.start();
    this.#poller.start();
    this.#workerPoller.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all([this.#poller.stop(), this.#workerPoller.stop()]);
    await this.#client.stop();
  }

  forget(): void {
    this.store.removeHyphaServer(this.target);
  }

  handover(): HyphaHandover {
    return {
      health: this.#health.health,
      reconnectsTotal: this.#client.reconnects + this.#handedOver.reconnects,
      malformedTotal: this.#client.malformedTotal + this.#handedOver.malformed,
      workers: this.#workers,
      serverIds: this.#serverIds.facts,
    };
  }

  async sampleNow(): Promise<void> {
    await this.#poller.runOnce();
  }

  // ---------------------------------------------------------------- connection

  #onConnected(conn: HyphaConnection): void {
    this.#conn = conn;
    // Any connection after the first is a comeback (a restarted server, or a dropped socket).
    const change = this.#serverIds.seen(conn.info.serverId, conn.generation > 1);
    if (change) {
      this.log.warn({ hypha: this.target, from: change.from, to: change.to },
        'hypha server came back under another server id: proxies cached to its built-in services (artifact manager)'
          + ' are stranded; give it a fixed --server-id / HYPHA_SERVER_ID');
    }
    this.#registry.invalidate();
    this.#listedSeconds = 0;
    // List at once rather than at the next tick: recovery time is one listing, not one interval.
    // A cycle still running on the old connection fails; then list again on this one. Not awaited (a
    // listener); runOnce never rejects (a failed cycle is recorded by the poller's onError).
    void this.#poller.runOnce().then(() => {
      if (this.#conn === conn && this.#listedSeconds === 0 && !this.#stopped) return this.#poller.runOnce();
      return undefined;
    }).then(() => this.#workerPoller.runOnce());
  }

  #onDisconnected(reason: string): void {
    this.#conn = undefined;
    this.#registry.invalidate();
    this.#listedSeconds = 0;
    this.#recordFailure(new SourceError('connect', `connection lost: ${reason}`, 'connection'), undefined);
  }

  #onEvent(e: HyphaEvent): void {
    if (!this.#conn || e.generation !== this.#conn.generation) return;
    if (this.#registry.apply(e)) this.#publish();
  }

  // ---------------------------------------------------------------- sampling

  #workspaces(conn: HyphaConnection): string[] {
    return [...new Set([conn.workspace, ...this.#workspacesToList(conn.workspace), ...this.opts.registration.workspaces])];
  }

  async #sample(): Promise<void> {
    const started = performance.now();
    let conn = this.#client.connection;
    if (!conn && this.#client.lastError === undefined) {
      // The first connection is still being made: wait for its outcome (until then the source is unknown, not down).
      conn = await this.#client.waitUntilUp(this.#connectTimeoutMs, { untilAttemptFails: true }).catch(() => undefined);
    }
    if (!conn) {
      // Not connected: the client is retrying on its own; report why.
      const err = this.#client.lastError ?? new SourceError('timeout', `no connection to Hypha within ${this.#connectTimeoutMs} ms`, 'connect');
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
            if (conn !== this.#conn) throw new SourceError('never_sent', 'connection replaced during the listing', 'listServices');
            this.#registry.finishList(ws, list);
          } catch (e) {
            this.#registry.abortList(ws);
            throw e;
          }
        }),
      );
    } catch (e) {
      this.#recordFailure(fromHypha(e, 'listServices', [this.opts.server.token]), started);
      return;
    }
    // A workspace no longer asked for must not keep its last listing (a stale view of it).
    this.#registry.retain(workspaces);
    if (this.#listedSeconds === 0) {
      this.#listedSeconds = Date.now() / 1000;
      this.#connectionsListed++;
    }
    this.#health.succeeded((performance.now() - started) / 1000, {
      workspace: conn.workspace, server_id: conn.info.serverId, generation: conn.generation, listed: this.#registry.counts(),
    });
    this.#publish();
  }

  #recordFailure(err: SourceError, started: number | undefined): void {
    this.#health.failed(sampleReason(err.errorClass), err.message, started !== undefined ? (performance.now() - started) / 1000 : undefined);
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
          if (!status) throw new SourceError('schema', 'get_status: unexpected answer', 'get_status');
          let apps: WorkerSample['apps'] = [];
          let error: string | undefined;
          try {
            const parsed = parseWorkerApps(await conn.callDirect(worker, 'get_app_status', [], { timeoutMs, kwargs: { logs_tail: logsTail } }));
            if (!parsed) throw new SourceError('schema', 'get_app_status: unexpected answer', 'get_app_status');
            apps = parsed;
          } catch (e) {
            // Up but not telling (e.g. forbidden): the per-app series stay absent.
            error = fromHypha(e, 'get_app_status', secrets).message;
          }
          if (status.version !== undefined) this.#versions.set(worker, status.version);
          return { ...base, clientId: status.clientId ?? base.clientId, up: true, apps, error, version: status.version, lastSuccessSeconds: Date.now() / 1000 };
        } catch (e) {
          const error = fromHypha(e, `worker ${worker}`, secrets).message;
          return { ...base, error, version: this.#versions.get(worker), lastSuccessSeconds: previous.get(worker)?.lastSuccessSeconds };
        }
      }),
    );
    for (const s of samples) {
      const before = previous.get(s.worker);
      if (s.error !== undefined && s.error !== before?.error) {
        this.log.warn({ worker: s.worker, up: s.up, error: s.error }, 'bioengine worker cross-check failed');
      }
      if (s.up && before !== undefined && !before.up) this.log.info({ worker: s.worker }, 'bioengine worker answers again');
    }
    if (this.#stopped) return;
    this.#workers = samples;
    this.#publish();
  }

  // ---------------------------------------------------------------- publishing

  #publish(): void {
    if (this.#stopped) return;
    const conn = this.#conn;
    const listed = conn !== undefined && this.#listedSeconds > 0;
    const sample: HyphaServerSample = {
      target: this.target,
      health: this.#health.health,
      reconnectsTotal: this.#client.reconnects + this.#handedOver.reconnects,
      generation: this.#client.generation,
      workspace: conn?.workspace,
      serverId: conn?.info.serverId,
      serverIdChanged: this.#serverIds.facts.changed,
      previousServerId: this.#serverIds.facts.previous,
      listedSeconds: listed ? this.#listedSeconds : 0,
      connectionsListed: this.#connectionsListed,
      registry: listed ? this.#registry.snapshot() : new Map(),
      workers: this.#workers,
      malformedTotal: this.#client.malformedTotal + this.#handedOver.malformed,
    };
    this.store.setHyphaServer(sample);
  }
}
