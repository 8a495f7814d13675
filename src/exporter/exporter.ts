import { Config, ConfigError, loadConfig } from '../config/load';
import type { Logger } from '../util/log';
import { FamilyFilter, MetricsRenderer } from '../metrics/renderer';
import { RegistrationStage } from '../registration/stage';
import { loadPersistedState, PersistedStateWriter } from '../snapshot/persisted';
import { SnapshotStore } from '../snapshot/store';
import { TransitionRecorder } from '../status-page/transitions';
import type { Source } from '../sources/poller';
import { registrationStageConfig } from '../registration/stage-config';
import { planRaySources } from '../sources/ray-serve/planner';
import type { DesiredSource, SourcePlanner } from '../sources/plan';
import type { RestartHandover, SavedState } from '../snapshot/handover';
import { watchedServicesPlanner } from '../sources/services/planner';
import type { DiscoveredWorker, WorkerHolders } from '../sources/services/worker-holders';
import { planHyphaRegistration } from '../sources/hypha/planner';
import { errorMessage } from '../util/errors';
import { isKnown, Snapshot, sourceHealths } from '../snapshot/types';

export interface ExporterOptions {
  configFile: string;
  log: Logger;
  env?: NodeJS.ProcessEnv;
  /** --metric-allowlist / --metric-denylist. */
  filter?: FamilyFilter;
  /** --storage.path: where witnesses and registration history survive a restart (undefined: memory only). */
  storagePath?: string;
  /** Continue from storagePath but never write it (`check` beside a running exporter that owns it). */
  storageReadOnly?: boolean;
}

/** The BioEngine workers the Hypha source of `hypha` discovered (up or not), with their last known version. */
function discoveredWorkers(s: Snapshot, hypha: string): DiscoveredWorker[] {
  return (s.hypha?.get(hypha)?.workers ?? []).map((w) => ({ holder: w.clientId, ...(w.version !== undefined ? { version: w.version } : {}) }));
}

const workersKey = (ws: readonly DiscoveredWorker[]) => JSON.stringify(ws.map((w) => [w.holder, w.version ?? null]));

/**
 * WorkerHolders over the store: what each Hypha source published, and a change notice per Hypha server when
 * its workers or their versions change (after the store's listeners, never inside one).
 */
class StoreWorkerHolders implements WorkerHolders {
  readonly #watch = new Map<string, { key: string; listeners: Set<() => void> }>();

  constructor(private readonly store: SnapshotStore) {
    store.onChange((s) => {
      for (const [hypha, w] of this.#watch) {
        const key = workersKey(discoveredWorkers(s, hypha));
        if (key === w.key) continue;
        w.key = key;
        for (const l of w.listeners) queueMicrotask(l);
      }
    });
  }

  of(hypha: string): DiscoveredWorker[] {
    return discoveredWorkers(this.store.get(), hypha);
  }

  onChange(hypha: string, listener: () => void): () => void {
    let w = this.#watch.get(hypha);
    if (!w) {
      w = { key: workersKey(this.of(hypha)), listeners: new Set() };
      this.#watch.set(hypha, w);
    }
    w.listeners.add(listener);
    return () => {
      w.listeners.delete(listener);
      if (w.listeners.size === 0) this.#watch.delete(hypha);
    };
  }
}

export interface ReloadResult {
  ok: boolean;
  error?: string;
}

/**
 * Owns the running configuration, the sources it asks for, and the snapshot
 * they write. A reload that fails validation keeps everything as it was.
 */
export class Exporter {
  readonly store = new SnapshotStore();
  /** Recent state changes for the status page; subscribes to the store before any source starts. */
  readonly transitions = new TransitionRecorder(this.store);
  readonly metrics: MetricsRenderer;
  /** Joins Ray and Hypha into per-app registration; one for the exporter's lifetime, reconfigured on reload. */
  readonly registration: RegistrationStage;
  #config: Config | undefined;
  /** Running sources by key, each with the plan it was created from (its fingerprint, and what of it is saved). */
  readonly #sources = new Map<string, { desired: DesiredSource; source: Source }>();
  #firstCycle: Promise<unknown> = Promise.resolve();
  #stateWriter: PersistedStateWriter | undefined;
  /** Every kind of source the configuration can ask for: Ray Serve clusters, watched services (with the workers as their holders), Hypha registries. */
  readonly #planners: readonly SourcePlanner[];
  #ready = false;
  #readyLatched = false;

  constructor(private readonly opts: ExporterOptions) {
    this.metrics = new MetricsRenderer(this.store, opts.filter);
    this.#planners = [planRaySources, watchedServicesPlanner(new StoreWorkerHolders(this.store)), planHyphaRegistration];
    this.registration = new RegistrationStage(this.store, { request: (cluster) => this.#sampleRayFresh(cluster) }, opts.log.child({ stage: 'registration' }));
  }

  get config(): Config | undefined {
    return this.#config;
  }

  /**
   * Ready once every source of the first configuration has ended its first attempt (up or down,
   * but known). Latched: a reload that adds a source does not take the exporter out of service.
   */
  get ready(): boolean {
    if (!this.#readyLatched && this.#ready && sourceHealths(this.store.get()).every(isKnown)) this.#readyLatched = true;
    return this.#readyLatched;
  }

  /** First load: a bad config throws ConfigError (the CLI exits 2). */
  start(): void {
    const cfg = loadConfig(this.opts.configFile, this.opts.env);
    let restart: RestartHandover | undefined;
    if (this.opts.storagePath !== undefined) {
      restart = loadPersistedState(this.opts.storagePath, this.opts.log);
      if (restart) this.registration.takeHandover(restart.registration);
      if (!this.opts.storageReadOnly) {
        this.#stateWriter = new PersistedStateWriter(this.opts.storagePath, () => this.#saved(), this.opts.log);
        this.#stateWriter.start(this.store);
      }
    }
    // Only the sources of the first load take the restart handover; a source a later reload adds starts fresh.
    this.#apply(cfg, restart);
    this.registration.start();
    this.store.recordReload(true, Date.now() / 1000);
    this.opts.log.info({ file: cfg.file, ray_clusters: cfg.rayClusters.length }, 'configuration loaded');
  }

  reload(): ReloadResult {
    try {
      const cfg = loadConfig(this.opts.configFile, this.opts.env);
      this.#apply(cfg);
      this.store.recordReload(true, Date.now() / 1000);
      this.opts.log.info({ file: cfg.file }, 'configuration reloaded');
      return { ok: true };
    } catch (e) {
      this.store.recordReload(false, Date.now() / 1000);
      const error = e instanceof ConfigError ? e.message : errorMessage(e);
      this.opts.log.error({ error }, 'configuration reload failed; keeping the previous configuration');
      return { ok: false, error };
    }
  }

  /** Waits for the first sampling cycle of every source (tests, readiness). */
  async settled(): Promise<void> {
    await this.#firstCycle;
  }

  /** Runs one cycle of every source now and waits for it. */
  async sampleAll(): Promise<void> {
    await Promise.all([...this.#sources.values()].map((s) => s.source.sampleNow()));
  }

  async stop(): Promise<void> {
    this.registration.stop();
    await Promise.all([...this.#sources.values()].map((s) => s.source.stop()));
    // Written from the stopped sources' handovers: the next process's restart handover.
    this.#stateWriter?.stop();
    this.#sources.clear();
  }

  /** What the state file keeps (--storage.path): each running source's part of its handover, and the registration histories. */
  #saved(): SavedState {
    const saved: SavedState = {
      witnesses: new Map(), holders: new Map(), workers: new Map(), serverIds: new Map(), registration: this.registration.histories(),
    };
    for (const { desired, source } of this.#sources.values()) desired.save?.(source.handover(), saved);
    return saved;
  }

  /** The registration stage's fresh-sample request, served by that cluster's Ray source. */
  #sampleRayFresh(cluster: string): void {
    // Not awaited: the stage reads the result from the store. Poller.runFresh never rejects (a failed cycle is the source's error, counted).
    void this.#sources.get(`ray/${cluster}`)?.source.sampleFresh?.();
  }

  /**
   * Stops a replaced or removed source in the background: a reload must not wait on an upstream's goodbye.
   * A failed stop is logged; `then` (forget its data) runs either way.
   */
  #stopInBackground(source: Source, then?: () => void): void {
    void source.stop()
      .catch((e: unknown) => this.opts.log.warn({ source: source.kind, target: source.target, error: errorMessage(e) }, 'stopping a source failed'))
      .finally(then);
  }

  #apply(cfg: Config, restart?: RestartHandover): void {
    const desired: DesiredSource[] = this.#planners.flatMap((p) => p(cfg, this.store, this.opts.log, restart));
    // Registration is judged only where a Hypha source reads a registry.
    this.registration.configure(desired.some((d) => d.kind === 'hypha') ? registrationStageConfig(cfg) : undefined);
    const keep = new Set(desired.map((d) => d.key));
    const started: Source[] = [];
    for (const [key, s] of this.#sources) {
      if (!keep.has(key)) {
        const gone = s.source;
        this.#stopInBackground(gone, () => gone.forget());
        this.#sources.delete(key);
      }
    }
    for (const d of desired) {
      const cur = this.#sources.get(d.key);
      if (cur && cur.desired.fingerprint === d.fingerprint) {
        d.configure?.(cur.source);
        this.#sources.set(d.key, { desired: d, source: cur.source });
        continue;
      }
      // Restarted by a reload: the successor takes what its predecessor hands over (taken before
      // stop, as last published); a key new to this process has no handover.
      const handover = cur?.source.handover();
      if (cur) this.#stopInBackground(cur.source);
      const source = d.create(handover);
      d.configure?.(source);
      this.#sources.set(d.key, { desired: d, source });
      source.start();
      started.push(source);
    }
    this.#config = cfg;
    this.#firstCycle = Promise.all(started.map((s) => s.sampleNow())).then(() => {
      this.#ready = true;
    });
  }
}
