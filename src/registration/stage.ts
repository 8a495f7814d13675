import type { ClusterRegistration } from '../config/cluster-mappings';
import type { PageWaits } from '../config/hypha-schema';
import type { Logger } from '../util/log';
import type { HyphaServerSample, ServiceInfo } from '../snapshot/hypha';
import type { AppRegistration, AttributedWorker, RegistrationHistory, WorkerReport, WorkerSample } from '../snapshot/registration';
import type { SavedState } from '../snapshot/handover';
import type { SnapshotStore } from '../snapshot/store';
import type { Snapshot } from '../snapshot/types';
import { CauseConfirmation } from './confirm';
import { expectedService, ExpectedService, isBioEngineApp, WorkerDirectory } from './expected';
import { matchProviders, ProviderIndex, RegistrationTracker, settlingAfterReconnect } from './tracker';
import { TransitionLog } from './transition-log';
import { BIOENGINE_WORKER_TYPE, clusterOfWorker, WorkerMappingFacts } from '../sources/hypha/workers';

/** How long a lost registration may wait for a Serve sample that can explain it (see CauseConfirmation). */
const CAUSE_CONFIRM_MAX_MS = 3000;

/** Asks a Ray cluster's source for a sample taken from now on (the answer arrives as a snapshot change). */
export interface FreshServeSamples {
  request(cluster: string): void;
}

/** One Ray cluster's mapping and the Hypha server its apps register on. */
export type StageCluster = ClusterRegistration;

export interface StageConfig {
  clusters: readonly StageCluster[];
  reconnectSettleMs: number;
  pageWaits: PageWaits;
}

/**
 * The registration stage: joins each Ray cluster's Serve apps (Snapshot.ray) with the registry of
 * the Hypha server its mapping names (Snapshot.hypha) and writes Snapshot.registration. Started
 * once by the exporter and reconfigured in place on a reload, so the missing spells, the history
 * and the published series of apps a reload does not touch simply continue. A loss seen against
 * an old Serve sample is confirmed on a fresh one (FreshServeSamples) before its cause is named.
 */
export class RegistrationStage {
  readonly #tracker = new RegistrationTracker();
  readonly #confirm: CauseConfirmation;
  readonly #transitionLog = new TransitionLog();
  readonly #startedSeconds = Date.now() / 1000;
  #config: StageConfig | undefined;
  #apps: AppRegistration[] = [];
  #read: { ray?: Snapshot['ray']; hypha?: Snapshot['hypha'] } = {};
  #queued = false;
  #unsubscribe: (() => void) | undefined;
  /**
   * The provider index of the last evaluation per cluster, with the registry lists it was built
   * from: a Ray sample re-evaluates against the registry the previous evaluation indexed.
   */
  readonly #indexes = new Map<string, { lists: (readonly ServiceInfo[] | undefined)[]; index: ProviderIndex }>();
  /**
   * Template mappings' expected services per cluster (a pure function of the app's name, the mapping
   * and the connection's workspace; rendering and parsing the template per app and evaluation cost
   * more than the lookup). Holds the apps of the cluster's last evaluation; dropped when the mapping or
   * the workspace changes.
   */
  readonly #templates = new Map<string, { mapping: StageCluster['mapping']; workspace: string; byApp: Map<string, ExpectedService | undefined> }>();

  constructor(
    private readonly store: SnapshotStore,
    fresh: FreshServeSamples,
    private readonly log: Logger,
  ) {
    this.#confirm = new CauseConfirmation(CAUSE_CONFIRM_MAX_MS, (cluster) => fresh.request(cluster), () => this.#evaluate());
  }

  /** Takes the histories of the restart handover (saved before an exporter restart, --storage.path). */
  takeHandover(histories: ReadonlyMap<string, RegistrationHistory>): void {
    this.#tracker.takeHandover(histories);
  }

  /**
   * The history of every app of a configured cluster, including histories handed over and not yet
   * evaluated (a second restart before the first evaluation keeps them): what the state file keeps
   * for takeHandover() (--storage.path).
   */
  histories(): SavedState['registration'] {
    const clusters = new Set(this.#config?.clusters.map((c) => c.cluster) ?? []);
    return this.#tracker.histories().filter((h) => clusters.has(h.cluster));
  }

  /**
   * The mappings of the current config; undefined when no Hypha server is configured. Apps of a
   * cluster no longer configured are dropped; all others keep their history and published state.
   */
  configure(config: StageConfig | undefined): void {
    const before = new Set(this.#config?.clusters.map((c) => c.cluster) ?? []);
    this.#config = config;
    const now = new Set(config?.clusters.map((c) => c.cluster) ?? []);
    for (const c of before) {
      if (!now.has(c)) this.#tracker.dropCluster(c);
    }
    this.#apps = this.#apps.filter((a) => now.has(a.cluster));
    this.#read = {};
    this.#indexes.clear();
    this.#templates.clear();
    if (this.#unsubscribe) this.#evaluate();
  }

  start(): void {
    this.#unsubscribe ??= this.store.onChange((s) => {
      if (s.ray !== this.#read.ray || s.hypha !== this.#read.hypha) this.#queue();
    });
    this.#evaluate();
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    this.#confirm.clear();
  }

  // Several sources publish in one turn (a listing and an event, a Ray sample): judge once after them.
  #queue(): void {
    if (this.#queued) return;
    this.#queued = true;
    queueMicrotask(() => {
      this.#queued = false;
      if (this.#unsubscribe) this.#evaluate();
    });
  }

  #evaluate(): void {
    const config = this.#config;
    if (!config) {
      if (this.store.get().registration !== undefined) this.store.setRegistration(undefined);
      return;
    }
    const s = this.store.get();
    this.#read = { ray: s.ray, hypha: s.hypha };
    const nowSeconds = Date.now() / 1000;
    const apps: AppRegistration[] = [];
    const workers = this.#attributeWorkers(config, s);
    for (const c of config.clusters) {
      apps.push(...this.#evaluateCluster(c, s, config, workers, nowSeconds));
    }
    this.#logTransitions(apps, s);
    this.#apps = apps;
    this.store.setRegistration({ apps, workers });
  }

  /** The cluster's apps now, or its last evaluation while Ray or its Hypha server cannot be read. */
  #evaluateCluster(c: StageCluster, s: Snapshot, config: StageConfig, workers: readonly AttributedWorker[], nowSeconds: number): AppRegistration[] {
    const previous = () => this.#apps.filter((a) => a.cluster === c.cluster);
    const hypha = s.hypha?.get(c.hypha);
    const sample = s.ray.get(c.cluster);
    // Unknown keeps this cluster's last evaluation (its counters); the gauges are hidden while a source is down.
    if (!hypha || hypha.listedSeconds === 0 || hypha.workspace === undefined || !sample?.state) return previous();
    const connectionWorkspace = hypha.workspace;
    const dir: WorkerDirectory = {
      samples: hypha.workers,
      registeredWorkers: (ws) => (hypha.registry.get(ws) ?? []).filter((x) => x.type === BIOENGINE_WORKER_TYPE).map((x) => x.clientId),
    };
    const input = {
      nowSeconds,
      startedSeconds: this.#startedSeconds,
      connectedSeconds: hypha.listedSeconds,
      afterReconnect: hypha.connectionsListed > 1,
      settleMs: config.reconnectSettleMs,
      pageWaits: config.pageWaits,
      workerVersion: (clientId: string) => hypha.workers.find((w) => w.clientId === clientId && w.version !== undefined)?.version,
      workerReport: workerReports(workers.filter((w) => w.up && w.hypha === c.hypha && w.rayCluster === c.cluster)),
    };
    const expected = new Map<string, ExpectedService>();
    // Not a BioEngine app: the template mapping decides from the app's name alone, so the last
    // evaluation's answer stands; the cache is rebuilt from the apps Serve lists now, so one that left is dropped.
    const cached = this.#templatesOf(c, connectionWorkspace);
    const templates = new Map<string, ExpectedService | undefined>();
    for (const app of sample.state.apps) {
      let e: ExpectedService | undefined;
      if (c.mapping.bioengine.enabled && isBioEngineApp(app)) {
        e = expectedService(c.cluster, app, c.mapping, connectionWorkspace, dir, this.#tracker.lastWorkerClientId(c.cluster, app.name));
      } else {
        e = cached.has(app.name) ? cached.get(app.name) : expectedService(c.cluster, app, c.mapping, connectionWorkspace, dir);
        templates.set(app.name, e);
      }
      if (e) expected.set(app.name, e);
    }
    this.#templates.set(c.cluster, { mapping: c.mapping, workspace: connectionWorkspace, byApp: templates });
    const workspaces = new Set([...expected.values()].map((e) => e.workspace));
    if (![...workspaces].every((ws) => hypha.registry.has(ws))) return previous();
    const providers = this.#providerIndex(c.cluster, [...workspaces].map((ws) => hypha.registry.get(ws)));
    // While settling after a reconnect the tracker withholds a missing registration anyway;
    // holding would republish the evaluation from before the outage.
    const lost = () => !settlingAfterReconnect(input) && this.#apps.some((a) => {
      const exp = a.cluster === c.cluster && a.registered && a.settled ? expected.get(a.app) : undefined;
      return exp !== undefined && !matchProviders(exp, providers).registered;
    });
    const verdict = this.#confirm.check(c.cluster, sample.state.requestedSeconds, lost, nowSeconds);
    if (verdict.hold) return previous();
    if (verdict.seenSeconds !== undefined) {
      const waitedMs = Math.round((nowSeconds - verdict.seenSeconds) * 1000);
      const fresh = (sample.state.requestedSeconds ?? 0) >= verdict.seenSeconds;
      this.log.debug({ cluster: c.cluster, waited_ms: waitedMs, fresh }, 'registration loss judged on a fresh Serve sample');
    }
    const tracked = this.#tracker.evaluateCluster(c.cluster, sample.state.apps, expected, providers, { ...input, changeSeenSeconds: verdict.seenSeconds });
    // The tracker's objects are new on every evaluation: completed in place rather than copied.
    for (const a of tracked) (a as AppRegistration).hypha = c.hypha;
    return tracked as AppRegistration[];
  }

  /** The provider index of these registry lists, reused while they are the very lists last indexed for the cluster. */
  #providerIndex(cluster: string, lists: (readonly ServiceInfo[] | undefined)[]): ProviderIndex {
    const last = this.#indexes.get(cluster);
    if (last && last.lists.length === lists.length && last.lists.every((l, i) => l === lists[i])) return last.index;
    const index = new ProviderIndex(lists.flatMap((l) => l ?? []));
    this.#indexes.set(cluster, { lists, index });
    return index;
  }

  /** The cluster's cache of template-mapped expected services, emptied when its mapping or the connection's workspace changed. */
  /** The last evaluation's template answers of the cluster, while its mapping and workspace are the same; else none. */
  #templatesOf(c: StageCluster, workspace: string): ReadonlyMap<string, ExpectedService | undefined> {
    const t = this.#templates.get(c.cluster);
    return t && t.mapping === c.mapping && t.workspace === workspace ? t.byApp : new Map();
  }

  /**
   * Each server's workers, tied to a Ray cluster only where that server's mappings leave no doubt.
   * A worker whose service has left the listed registry of its workspace is a known removal (a
   * restarted worker comes back under a new client id; the old one never returns): its facts end
   * at the registry event, not at the next cross-check, so nothing stands in for them as if their
   * series were a gap.
   */
  #attributeWorkers(config: StageConfig, s: Snapshot): AttributedWorker[] {
    const out: AttributedWorker[] = [];
    for (const [name, h] of s.hypha ?? []) {
      const facts = mappingFacts(config, name, h);
      for (const w of h.workers) {
        if (leftRegistry(w, h)) continue;
        out.push({ ...w, hypha: name, rayCluster: facts ? clusterOfWorker(w, facts) : undefined });
      }
    }
    return out;
  }

  #logTransitions(next: readonly AppRegistration[], s: Snapshot): void {
    for (const { a, seenBefore } of this.#transitionLog.due(next, (cluster) => s.ray.get(cluster)?.state?.requestedSeconds)) {
      const fields = {
        cluster: a.cluster, app: a.app, hypha: a.hypha, service: a.service, state: a.state,
        provider_client_id: a.providerClientId, mismatch: a.clientIdMismatch,
      };
      if (a.registered) this.log.info(fields, seenBefore ? 'hypha registration changed' : 'hypha registration present');
      else if (a.state === 'not_running') this.log.info(fields, 'hypha registration not due: app not running');
      else this.log.warn(fields, 'hypha registration missing');
    }
  }
}

/**
 * What the workers tied to one cluster say per app: RUNNING without denying the registration (a
 * worker that says service_registered false agrees with the registry), and whether any reports it.
 */
function workerReports(tied: readonly AttributedWorker[]): (app: string) => WorkerReport | undefined {
  const byApp = new Map<string, WorkerReport>();
  for (const w of tied) {
    for (const a of w.apps) {
      let r = byApp.get(a.app);
      if (!r) byApp.set(a.app, (r = { claiming: [], answered: true }));
      if (a.status === 'RUNNING' && a.serviceRegistered !== false) r.claiming.push(w.worker);
    }
  }
  for (const r of byApp.values()) r.claiming.sort();
  return (app) => byApp.get(app);
}

/** The worker's workspace was listed on the current connection and its service is not in it. */
function leftRegistry(w: WorkerSample, h: HyphaServerSample): boolean {
  const listed = h.listedSeconds > 0 ? h.registry.get(w.workspace) : undefined;
  return listed !== undefined && !listed.some((x) => x.id === w.worker);
}

/** What the mappings on one server say about BioEngine workers (undefined until it is connected). */
function mappingFacts(config: StageConfig, hypha: string, h: HyphaServerSample): WorkerMappingFacts[] | undefined {
  const connectionWorkspace = h.workspace;
  if (connectionWorkspace === undefined) return undefined;
  return config.clusters
    .filter((c) => c.hypha === hypha)
    .map((c) => ({
      cluster: c.cluster,
      enabled: c.mapping.bioengine.enabled,
      workspace: c.mapping.bioengine.workspace ?? connectionWorkspace,
      workerClientId: c.mapping.bioengine.workerClientId,
    }));
}
