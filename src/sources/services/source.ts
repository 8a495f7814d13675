import type { Logger } from '../../util/log';
import type { HolderConfig, ProbeCall, WatchedServiceConfig } from '../../config/services-schema';
import type { SnapshotStore } from '../../snapshot/store';
import type { ServerIdFacts } from '../../snapshot/handover';
import type { SourceHealth } from '../../snapshot/health';
import { CanaryRecord, HeldId, HolderProbeResult, ProbeResult, ProbeVia, RetainedWorker, WatchedServiceSample } from '../../snapshot/services';
import { errorMessage, SourceError } from '../../util/errors';
import { HealthBook } from '../health-book';
import { HyphaClient, HyphaConnectOptions, HyphaConnection } from '../hypha/client';
import { fromHypha } from '../hypha/errors';
import { sampleReason } from '../sample-reason';
import { ServerIdWatch } from '../hypha/server-id';
import { Poller, Source } from '../poller';
import { readHeldClientId } from './holder-field';
import { outcomeOf } from './outcome';
import { CycleEvents, HolderReading, HolderSpec, Resolved, SELF_HEALING_WITNESS_SECONDS, WatchHandover, WatchState } from './state';
import { WorkerHolders, workerHoldersOf } from './worker-holders';

/** Where the watched services are looked up: one Hypha server, as the exporter's identity there. */
export interface WatchedServicesConnection {
  /** Configured Hypha server name (logs and the status page; never its URL). */
  name: string;
  options: HyphaConnectOptions;
}

/** Health kind of a watched-service source in hypha_serve_source_up (labels `service` = the service id, `hypha` = its server). */
// Not "hypha": a failing watched-service connection must silence only what derives from that
// service. Under "hypha" it would also silence the registration alerts, which come from the
// registry connection and are not affected by this one.
export const SERVICE_SOURCE_KIND = 'hypha_service' as const;

/** What a watched-service source hands the source a reload restarts it as: health, the watch state, server-id facts. */
export interface WatchedServiceHandover {
  health: SourceHealth;
  /** As published: while down, no probe result or holder reading is current and none is handed over. */
  watch: WatchHandover;
  serverIds: ServerIdFacts;
}

/** What a watched-service source starts from: its predecessor's handover (a reload), or the restart handover (what was saved before a restart). */
export interface WatchedServiceStart {
  handover?: WatchedServiceHandover;
  restart?: { witness?: CanaryRecord; holders?: readonly HeldId[]; workers?: readonly RetainedWorker[]; serverIds?: ServerIdFacts };
  /** The BioEngine workers of its server, its holders when none is configured (served by the exporter); none when absent. */
  workers?: WorkerHolders;
}

/** At most this many other live providers are tried when the first fresh call fails. */
const MAX_FRESH_RETRIES = 3;

/**
 * Watches one service (e.g. public/artifact-manager) on its own Hypha
 * connection. Each cycle: list the live providers, resolve the service anew,
 * probe it through the fresh proxy and through the canary — the proxy this
 * exporter resolved once and keeps, like a worker does — read the ids
 * configured holders report and probe through holders' cached proxies.
 * Everything is bounded by per-call timeouts; nothing here runs on a scrape.
 */
export class WatchedServiceSource implements Source<WatchedServiceHandover> {
  readonly kind = SERVICE_SOURCE_KIND;
  readonly #client: HyphaClient;
  readonly #poller: Poller;
  readonly #state: WatchState;
  readonly #book: HealthBook;
  #stopped = false;
  /** A reload restarted this source and handed it over: the predecessor's sample stays published until the first own one. */
  readonly #tookHandover: boolean;
  #lastOutcome: Partial<Record<string, string>> = {};
  #holderErrors = new Map<string, string>();
  /** Start of the current up spell: probe results from before an outage are not republished. */
  #upSinceSeconds = 0;
  #lastResolved: { clientId?: string; error?: string } = {};
  /** The server ids this connection saw: a stale id that is one the server replaced never returns. */
  readonly #serverIds: ServerIdWatch;
  readonly #workers: WorkerHolders | undefined;
  #unsubscribeWorkers: (() => void) | undefined;
  /** Published at least once (a source that took a handover waits for its first cycle). */
  #published = false;

  constructor(
    private readonly cfg: WatchedServiceConfig,
    private readonly conn: WatchedServicesConnection,
    private readonly store: SnapshotStore,
    private readonly log: Logger,
    { handover, restart, workers }: WatchedServiceStart = {},
  ) {
    this.#workers = workers;
    // A source restarted by a reload continues its predecessor: health and counters,
    // histograms, and above all the witness (a reload is not evidence that clients recovered).
    this.#tookHandover = handover !== undefined;
    this.#book = new HealthBook({
      kind: SERVICE_SOURCE_KIND, target: cfg.service, hypha: conn.name, intervalSeconds: cfg.intervalMs / 1000, handover: handover?.health,
      log, label: 'watched-service', fields: { service: cfg.service, hypha: conn.name }, credential: conn.options.token,
    });
    if (handover?.health.up) {
      for (const p of Object.values(handover.watch.lastProbes)) this.#lastOutcome[p.via] = p.outcome;
    }
    this.#serverIds = new ServerIdWatch(handover?.serverIds ?? restart?.serverIds);
    const holderSpecs: HolderSpec[] = cfg.holders.map((h) => ({ name: h.name, reportsId: h.method !== undefined, probeMethod: h.probe?.method }));
    this.#state = new WatchState(cfg.canary, cfg.probe?.method, holderSpecs, handover?.watch, restart?.witness, restart?.holders, restart?.workers);
    this.#state.setWorkers(this.#workerHolders(), Date.now() / 1000);
    this.#client = new HyphaClient({
      ...conn.options,
      callTimeoutMs: cfg.timeoutMs,
      connectTimeoutMs: Math.max(cfg.timeoutMs, 5000),
      logger: log,
    });
    this.#poller = new Poller(cfg.intervalMs, () => this.#sample(), (e) => this.log.error({ err: errorMessage(e) }, 'watched-service sampler bug'));
    // A comeback is sampled at once, not at the next tick: a server back under another id strands the
    // canary now, and the page that proves it (cached_server_gone) should not wait one more interval.
    // Not awaited (a listener); runFresh never rejects: a failed cycle is recorded by the poller's onError.
    this.#client.on({ connected: (c) => { if (c.generation > 1 && !this.#stopped) void this.#poller.runFresh(); } });
  }

  get target(): string {
    return this.cfg.service;
  }

  start(): void {
    if (this.cfg.canary.deprecatedReresolveAfter !== undefined) {
      this.log.warn({ service: this.cfg.service, reresolve_after: this.cfg.canary.deprecatedReresolveAfter },
        'canary.reresolve_after is deprecated and read as canary.witness_max: a stale canary is released after that time'
          + ' even though long-lived clients may still be stuck');
    }
    const w = this.#state.canary;
    if (w?.staleSinceSeconds !== undefined) {
      this.log.info({ service: this.cfg.service, witness: w.fullId, since: w.staleSinceSeconds }, 'continuing the stale canary as the witness');
    }
    this.#client.start();
    if (!this.#tookHandover) this.#publish();
    // The workers change between cycles (the Hypha source asks them on its own interval): judged and shown at once,
    // so `check` and the status page never read a self-healing verdict older than the workers they list.
    this.#unsubscribeWorkers = this.#workers?.onChange?.(this.conn.name, () => {
      if (this.#stopped) return;
      this.#state.setWorkers(this.#workerHolders(), Date.now() / 1000);
      if (this.#published) this.#publish();
    });
    this.#poller.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribeWorkers?.();
    await this.#poller.stop();
    await this.#client.stop();
  }

  forget(): void {
    this.store.removeService(this.cfg.service);
  }

  handover(): WatchedServiceHandover {
    const up = this.#book.up;
    const watch = this.#state.handover();
    return {
      health: this.#book.health,
      watch: { ...watch, lastProbes: up ? currentProbes(watch.lastProbes, this.#upSinceSeconds) : {}, holders: up ? watch.holders : [] },
      serverIds: this.#serverIds.facts,
    };
  }

  sampleNow(): Promise<void> {
    return this.#poller.runOnce();
  }

  async #sample(): Promise<void> {
    const started = performance.now();
    const nowSeconds = Date.now() / 1000;
    const { timeoutMs } = this.cfg;
    let conn: HyphaConnection;
    let providers: string[];
    try {
      // The first cycle waits for the first attempt's outcome: until then the source is unknown, not down.
      const first = this.#client.generation === 0 && this.#client.lastError === undefined;
      conn = this.#client.connection
        ?? (await this.#client.waitUntilUp(first ? Math.max(timeoutMs, 5000) + 1000 : timeoutMs, { untilAttemptFails: first }));
    } catch (e) {
      // Still in the very first connection attempt: starting up is not an error.
      if (this.#client.generation === 0 && this.#client.lastError === undefined && this.#client.state === 'connecting') {
        this.log.debug({ service: this.cfg.service }, 'first connection to Hypha still in progress');
        return;
      }
      this.#fail(e, started);
      return;
    }
    const idChange = this.#serverIds.seen(conn.info.serverId, conn.generation > 1);
    if (idChange) this.log.info({ service: this.cfg.service, from: idChange.from, to: idChange.to }, 'the Hypha server came back under another server id');
    try {
      const list = await conn.listServices({ workspace: this.cfg.workspace, serviceId: this.cfg.serviceId }, { timeoutMs });
      providers = list.filter((s) => s.workspace === this.cfg.workspace && s.serviceId === this.cfg.serviceId).map((s) => s.clientId);
    } catch (e) {
      this.#fail(e, started);
      return;
    }

    // The fresh resolution is a registry lookup (getServiceInfo with resolve_mode) and the
    // calls go to the provider it names. Not getService: that also round-trips to the
    // provider, and its timeout on a dead-but-listed provider is taken by the connection as
    // the manager not answering, which rebuilds the connection and fails the cached probe too.
    let resolved: Resolved | undefined;
    let resolveError: SourceError | undefined;
    const t0 = performance.now();
    try {
      const info = await conn.getServiceInfo(this.cfg.service, { mode: this.cfg.resolveMode, timeoutMs });
      resolved = { fullId: info.id, clientId: info.clientId };
    } catch (e) {
      resolveError = fromHypha(e, 'getServiceInfo', this.#secrets());
    }
    const resolveSeconds = (performance.now() - t0) / 1000;
    if (this.#state.adoptCanaryIfNone(resolved, nowSeconds)) {
      const fields = { service: this.cfg.service, client_id: resolved?.clientId };
      this.log.info(fields, 'canary proxy resolved; it is kept across cycles like a worker keeps its proxy');
    }

    // Publish what the registry says before probing: a stale id shows now, not
    // after the cached-path probe has run into its timeout.
    this.#state.setWorkers(this.#workerHolders(), nowSeconds);
    const ev = this.#state.applyRegistry({ nowSeconds, providers, resolved });
    if (ev.providersChanged) {
      this.log.info({ service: this.cfg.service, from: ev.providersChanged.from, to: ev.providersChanged.to }, 'providers of the watched service changed');
    }
    if (ev.canaryBecameStale) {
      const workers = this.#state.workers.map((w) => `${w.holder} ${w.version ?? '?'} ${w.recovery}`);
      this.log.warn({ service: this.cfg.service, cached: this.#state.canary?.clientId, providers, holders: this.cfg.holders.length, workers },
        this.#state.witnessSelfHealing
          ? 'canary proxy is stale: its client id is no longer among the live providers; every holder is a BioEngine worker that re-resolves'
            + ' by itself, so the witness is self-healing and ends by itself'
          : 'canary proxy is stale: its client id is no longer among the live providers; it is kept as the witness for long-lived clients');
    }
    this.#logRelease(ev);
    // The cycle's duration is known only after the probes; until then the previous one stands.
    if (this.#book.succeeded(undefined, { providers })) this.#upSinceSeconds = nowSeconds;
    this.#lastResolved = { clientId: resolved?.clientId, error: resolveError?.message };
    this.#publish();

    const probe = this.cfg.probe;
    let cachedProbe: Promise<ProbeResult | undefined> = Promise.resolve(undefined);
    let freshProbe: Promise<{ result: ProbeResult; attempts: ProbeResult[] } | undefined> = Promise.resolve(undefined);
    if (probe) {
      const canary = this.#state.canary;
      if (canary) {
        // Like a worker's hypha-rpc proxy, which reconnects underneath and keeps addressing
        // the same client: the cached id is called on the current connection.
        cachedProbe = this.#timed('cached', probe.method, canary.fullId, () =>
          conn.callDirect(canary.fullId, probe.method, probe.args, { kwargs: kwargsOf(probe.kwargs), timeoutMs }));
      }
      const r = resolved;
      const first: Promise<ProbeResult> = r
        ? this.#timed('fresh', probe.method, r.fullId, () => conn.callDirect(r.fullId, probe.method, probe.args, { kwargs: kwargsOf(probe.kwargs), timeoutMs }))
        // The fresh path fails at resolution: that is what a newly started worker would see.
        : Promise.resolve<ProbeResult>({
          via: 'fresh', method: probe.method, outcome: outcomeOf(resolveError?.errorClass ?? 'remote'), seconds: resolveSeconds,
          error: resolveError?.message, atSeconds: Date.now() / 1000,
        });
      freshProbe = first.then((p) => this.#retryFresh(conn, probe, p, resolved?.clientId, providers));
    }
    const holderReads = this.cfg.holders.filter((h) => h.method !== undefined).map((h) => this.#readHolder(conn, h));
    const holderProbes = this.cfg.holders.filter((h) => h.probe !== undefined && this.#holderProbeDue(h, nowSeconds)).map((h) => this.#probeHolder(conn, h));
    const [c, f, holders, hps] = await Promise.all([cachedProbe, freshProbe, Promise.all(holderReads), Promise.all(holderProbes)]);
    const results = [c, f?.result].filter((r): r is ProbeResult => r !== undefined);
    const callEv = this.#state.applyCalls({
      nowSeconds: Date.now() / 1000, probes: results, holders, holderProbes: hps, freshAttempts: f && f.attempts.length > 1 ? f.attempts : undefined,
    });
    this.#logRelease(callEv);

    for (const r of results) {
      this.#logOutcome(r.via, r.outcome, { via: r.via, seconds: r.seconds, resolved_id: r.target, error: r.error, attempts: r.attempts });
    }
    for (const r of hps) this.#logOutcome(`holder:${r.holder}`, r.outcome, { holder: r.holder, method: r.method, seconds: r.seconds, error: r.error });
    let holderFailures = 0;
    for (const h of holders) {
      if (h.error !== undefined) holderFailures++;
      if (h.error !== undefined && this.#holderErrors.get(h.name) !== h.error) {
        this.log.warn({ service: this.cfg.service, holder: h.name, error: h.error }, 'cannot read the cached id of a holder');
      }
      if (h.error === undefined) this.#holderErrors.delete(h.name);
      else this.#holderErrors.set(h.name, h.error);
    }
    // A holder that cannot be read is a partial failure: counted, the rest stays up.
    this.#book.countError('rpc', holderFailures);
    this.#book.recordDuration((performance.now() - started) / 1000);
    this.#publish();
  }

  /**
   * A listed provider can be dead (a Hypha server killed hard stays listed for
   * tens of seconds) and random resolution picks it now and then. The fresh path
   * answers "does a fresh resolution work": when the first provider does not
   * answer (timeout, not found), other live providers are tried explicitly in
   * parallel, so the verdict does not flip with the random pick. Application
   * errors and calls that never left this process are not retried: another
   * provider would not change them.
   */
  async #retryFresh(conn: HyphaConnection, probe: ProbeCall, first: ProbeResult, firstClientId: string | undefined, providers: readonly string[]):
    Promise<{ result: ProbeResult; attempts: ProbeResult[] }> {
    const one = { ...first, attempts: 1 };
    if (first.outcome !== 'timeout' && first.outcome !== 'not_found') return { result: one, attempts: [one] };
    const others = providers.filter((p) => p !== firstClientId).slice(0, MAX_FRESH_RETRIES);
    if (others.length === 0) return { result: one, attempts: [one] };
    const { timeoutMs } = this.cfg;
    const retries = await Promise.all(others.map((clientId) => {
      const id = `${this.cfg.workspace}/${clientId}:${this.cfg.serviceId}`;
      return this.#timed('fresh', probe.method, id, () => conn.callDirect(id, probe.method, probe.args, { kwargs: kwargsOf(probe.kwargs), timeoutMs }));
    }));
    const attempts = [first, ...retries];
    const ok = retries.find((r) => r.outcome === 'ok');
    return { result: { ...(ok ?? first), attempts: attempts.length }, attempts };
  }

  #logRelease(ev: CycleEvents): void {
    const r = ev.witnessReleased;
    if (!r) return;
    const why: Record<string, string> = {
      returned: 'its client id is a live provider again',
      holders_agree: 'every configured holder reports a live id (and its probe succeeded)',
      max_age: 'canary.witness_max has passed; long-lived clients may still be stuck',
      operator: 'its client id is listed in canary.released_client_ids',
      self_healing: 'every holder is a BioEngine worker that re-resolves by itself (0.16.30 or later) and canary.self_healing_release has passed',
    };
    this.log.warn({ service: this.cfg.service, reason: r.reason, from: r.from, to: r.to }, `witness released: ${why[r.reason]}`);
  }

  #logOutcome(key: string, outcome: string, fields: Record<string, unknown>): void {
    if (this.#lastOutcome[key] === outcome) return;
    const level = outcome === 'ok' ? 'info' : 'warn';
    this.log[level]({ service: this.cfg.service, outcome, ...fields }, 'probe outcome changed');
    this.#lastOutcome[key] = outcome;
  }

  #holderProbeDue(h: HolderConfig, nowSeconds: number): boolean {
    const last = this.#state.holderProbeAt(h.name);
    return last === undefined || !h.probe || (nowSeconds - last) * 1000 >= h.probe.intervalMs;
  }

  async #timed(via: ProbeVia, method: string, target: string, call: () => Promise<unknown>): Promise<ProbeResult> {
    const t0 = performance.now();
    try {
      await call();
      return { via, method, outcome: 'ok', seconds: (performance.now() - t0) / 1000, target, atSeconds: Date.now() / 1000 };
    } catch (e) {
      const seconds = (performance.now() - t0) / 1000;
      const err = fromHypha(e, `${via} ${method}`, this.#secrets());
      return { via, method, outcome: outcomeOf(err.errorClass), seconds, target, error: err.message, atSeconds: Date.now() / 1000 };
    }
  }

  async #readHolder(conn: HyphaConnection, h: HolderConfig): Promise<HolderReading> {
    const method = h.method;
    if (method === undefined) return { name: h.name };
    try {
      const info = await conn.getServiceInfo(h.service, { timeoutMs: this.cfg.timeoutMs });
      const result = await conn.callDirect(info.id, method, h.args, { kwargs: kwargsOf(h.kwargs), timeoutMs: this.cfg.timeoutMs });
      const clientId = readHeldClientId(result, h.field);
      if (clientId === undefined) {
        return { name: h.name, error: `${method} returned no client id${h.field ? ` at ${h.field.join('.')}` : ''}` };
      }
      return { name: h.name, clientId };
    } catch (e) {
      return { name: h.name, error: fromHypha(e, `holder ${h.name}`, this.#secrets()).message };
    }
  }

  /**
   * A read-only call to the holder that goes through ITS cached proxy of the
   * watched service (BioEngine's admin list_apps reads through the worker's
   * artifact-manager proxy): the only view of a real client's handle when the
   * client does not report the id it holds. Timed from the call, after the
   * holder itself was resolved; a holder that cannot be resolved fails the probe.
   */
  async #probeHolder(conn: HyphaConnection, h: HolderConfig): Promise<HolderProbeResult> {
    const p = h.probe!;
    const t0 = performance.now();
    let target: string;
    try {
      target = (await conn.getServiceInfo(p.service, { timeoutMs: this.cfg.timeoutMs })).id;
    } catch (e) {
      const err = fromHypha(e, `holder ${h.name}`, this.#secrets());
      return {
        holder: h.name, method: p.method, outcome: outcomeOf(err.errorClass), seconds: (performance.now() - t0) / 1000,
        error: `resolving ${p.service}: ${err.message}`, atSeconds: Date.now() / 1000,
      };
    }
    const t1 = performance.now();
    try {
      await conn.callDirect(target, p.method, p.args, { kwargs: kwargsOf(p.kwargs), timeoutMs: p.timeoutMs });
      return { holder: h.name, method: p.method, outcome: 'ok', seconds: (performance.now() - t1) / 1000, atSeconds: Date.now() / 1000 };
    } catch (e) {
      const err = fromHypha(e, `holder ${h.name} ${p.method}`, this.#secrets());
      const seconds = (performance.now() - t1) / 1000;
      return { holder: h.name, method: p.method, outcome: outcomeOf(err.errorClass), seconds, error: err.message, atSeconds: Date.now() / 1000 };
    }
  }

  #fail(e: unknown, started: number): void {
    const err = fromHypha(e, 'sample', this.#secrets());
    this.#book.failed(sampleReason(err.errorClass), err.message, (performance.now() - started) / 1000);
    this.#publish();
  }

  #secrets() {
    return [this.conn.options.token];
  }

  /** The discovered BioEngine workers of this service's server, unless holders are configured (a configured list wins). */
  #workerHolders() {
    if (this.cfg.holders.length > 0 || !this.#workers || !this.cfg.canary.enabled) return [];
    return workerHoldersOf(this.#workers, this.conn.name, this.cfg.service);
  }

  #publish(): void {
    if (this.#stopped) return;
    const up = this.#book.up;
    const st = this.#state;
    // One reading of the clock for every decision of this sample.
    const now = Date.now() / 1000;
    const sample: WatchedServiceSample = {
      service: this.cfg.service,
      health: this.#book.health,
      // While down nothing current is known: no provider, resolution or cached series.
      providers: up ? st.providers : undefined,
      resolvedClientId: up ? this.#lastResolved.clientId : undefined,
      resolveError: up ? this.#lastResolved.error : undefined,
      cached: up ? st.judge(now, this.cfg.pageWaits, (id) => this.#serverIds.replacedServer(id)) : [],
      clientIdChangesTotal: st.changesTotal,
      lastChangeSeconds: st.lastChangeSeconds,
      canaryReresolvesTotal: st.reresolvesTotal,
      calls: st.calls,
      lastProbes: up ? currentProbes(st.lastProbes, this.#upSinceSeconds) : {},
      holdersConfigured: this.cfg.holders.length,
      witnessMaxSeconds: this.cfg.canary.witnessMaxMs === undefined ? undefined : this.cfg.canary.witnessMaxMs / 1000,
      witnessReleasesTotal: st.releasesTotal,
      holderProbes: st.holderProbes,
      workerHolders: st.workers,
      selfHealingReleaseSeconds: (this.cfg.canary.selfHealingReleaseMs ?? SELF_HEALING_WITNESS_SECONDS * 1000) / 1000,
    };
    if (this.cfg.canary.enabled) sample.witnessSelfHealing = st.witnessSelfHealing;
    if (up) sample.probeVerdicts = st.probeVerdicts(now, this.cfg.probeWindowMs);
    this.#published = true;
    this.store.setService(this.cfg.service, sample);
  }
}

function currentProbes(all: Partial<Record<ProbeVia, ProbeResult>>, sinceSeconds: number): Partial<Record<ProbeVia, ProbeResult>> {
  const out: Partial<Record<ProbeVia, ProbeResult>> = {};
  for (const p of Object.values(all)) if (p.atSeconds >= sinceSeconds) out[p.via] = p;
  return out;
}

function kwargsOf(k: Record<string, unknown>): Record<string, unknown> | undefined {
  return Object.keys(k).length > 0 ? k : undefined;
}
