import type { Logger } from '../../log';
import type { HolderConfig, WatchedServiceConfig } from '../../config/services-schema';
import type { SnapshotStore } from '../../snapshot/store';
import { CallVia, ProbeResult, WatchedServiceSample } from '../../snapshot/services';
import { failedHealth, newSourceHealth, SampleErrorReason, SourceHealth } from '../../snapshot/types';
import { errorMessage } from '../../util/errors';
import { HyphaClient, HyphaConnectOptions, HyphaConnection, RemoteService } from '../hypha/client';
import { HyphaError, sampleReason, toHyphaError } from '../hypha/errors';
import { Poller, Source } from '../poller';
import { readHeldClientId } from './holder-field';
import { outcomeOf } from './outcome';
import { HolderReading, WatchState } from './state';

/** Where the watched services are looked up: one Hypha server, as the exporter's identity there. */
export interface WatchedServicesConnection {
  /** Configured Hypha server name (logs and the status page; never its URL). */
  name: string;
  options: HyphaConnectOptions;
}

/** Health kind of a watched-service source in hypha_serve_source_up (target = the service id). */
// Reported as a Hypha upstream: the rules' and inhibitions' "Hypha is down" guards then cover
// watched services too; target (the service id) tells it from the registry connection.
export const SERVICE_SOURCE_KIND = 'hypha' as const;

/**
 * Watches one service (e.g. public/artifact-manager) on its own Hypha
 * connection. Each cycle: list the live providers, resolve the service anew,
 * probe it through the fresh proxy and through the canary — the proxy this
 * exporter resolved once and keeps, like a worker does — and read the ids
 * configured holders report. Everything is bounded by the per-call timeout;
 * nothing here runs on a scrape.
 */
export class WatchedServiceSource implements Source {
  readonly kind = SERVICE_SOURCE_KIND;
  readonly #client: HyphaClient;
  readonly #poller: Poller;
  readonly #state: WatchState;
  #health: SourceHealth;
  #stopped = false;
  /** The proxy object of the canary while its connection generation lives; after that its id is addressed directly. */
  #canaryProxy: RemoteService | undefined;
  #lastOutcome: Partial<Record<CallVia, string>> = {};
  #holderErrors = new Map<string, string>();
  /** Start of the current up spell: probe results from before an outage are not republished. */
  #upSinceSeconds = 0;

  constructor(
    private readonly cfg: WatchedServiceConfig,
    private readonly conn: WatchedServicesConnection,
    private readonly store: SnapshotStore,
    private readonly log: Logger,
  ) {
    this.#health = newSourceHealth(SERVICE_SOURCE_KIND, cfg.service);
    this.#state = new WatchState(cfg.canary.enabled, cfg.canary.policy, cfg.probe?.method);
    this.#client = new HyphaClient({
      ...conn.options,
      callTimeoutMs: cfg.timeoutMs,
      connectTimeoutMs: Math.max(cfg.timeoutMs, 5000),
      logger: log,
    });
    this.#poller = new Poller(cfg.intervalMs, () => this.#sample(), (e) => this.log.error({ err: errorMessage(e) }, 'watched-service sampler bug'));
  }

  get target(): string {
    return this.cfg.service;
  }

  start(): void {
    this.#client.start();
    this.#publish(undefined, undefined);
    this.#poller.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#poller.stop();
    await this.#client.stop();
  }

  forget(): void {
    const service = this.cfg.service;
    this.store.update((s) => {
      if (!s.services?.has(service)) return s;
      const services = new Map(s.services);
      services.delete(service);
      return { ...s, services };
    });
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
      conn = this.#client.connection ?? (await this.#client.waitUntilUp(timeoutMs));
      const list = await conn.listServices({ workspace: this.cfg.workspace, serviceId: this.cfg.serviceId }, { timeoutMs });
      providers = list.filter((s) => s.workspace === this.cfg.workspace && s.serviceId === this.cfg.serviceId).map((s) => s.clientId);
    } catch (e) {
      this.#fail(e, started);
      return;
    }

    let fresh: RemoteService | undefined;
    let resolveError: HyphaError | undefined;
    const t0 = performance.now();
    try {
      fresh = await conn.getService(this.cfg.service, { mode: this.cfg.resolveMode, timeoutMs });
    } catch (e) {
      resolveError = toHyphaError(e, 'getService', this.#secrets());
    }
    const resolveSeconds = (performance.now() - t0) / 1000;
    const resolved = fresh ? { fullId: fresh.id, clientId: fresh.clientId } : undefined;
    if (this.#state.adoptCanaryIfNone(resolved, nowSeconds)) {
      this.#canaryProxy = fresh;
      this.log.info({ service: this.cfg.service, client_id: resolved?.clientId }, 'canary proxy resolved; it is kept across cycles like a worker keeps its proxy');
    }

    // Publish what the registry says before probing: a stale id shows now, not
    // after the cached-path probe has run into its timeout.
    const ev = this.#state.applyRegistry({ nowSeconds, providers, resolved });
    if (ev.providersChanged) {
      this.log.info({ service: this.cfg.service, from: ev.providersChanged.from, to: ev.providersChanged.to }, 'providers of the watched service changed');
    }
    if (ev.canaryBecameStale) {
      this.log.warn({ service: this.cfg.service, cached: this.#state.canary?.clientId, providers }, 'canary proxy is stale: its client id is no longer among the live providers');
    }
    if (ev.canaryReresolved) {
      this.#canaryProxy = fresh;
      this.log.warn({ service: this.cfg.service, from: ev.canaryReresolved.from, to: ev.canaryReresolved.to }, 'stale canary proxy re-resolved under the re-resolve policy');
    }
    const wasUp = this.#health.up;
    this.#health = { ...this.#health, up: true, lastSuccessSeconds: Date.now() / 1000 };
    if (!wasUp) this.#upSinceSeconds = nowSeconds;
    if (!wasUp) this.log.info({ service: this.cfg.service, hypha: this.conn.name, providers }, 'watched-service source up');
    this.#publish(resolved?.clientId, resolveError?.message);

    const probes: Promise<ProbeResult>[] = [];
    const probe = this.cfg.probe;
    if (probe) {
      const canary = this.#state.canary;
      if (canary) {
        const proxy = this.#canaryProxy;
        // A proxy whose connection is gone would fail locally; a worker's hypha-rpc
        // instead reconnects underneath and keeps addressing the same client, which
        // is what calling the cached id on the current connection does.
        const viaProxy = proxy !== undefined && proxy.generation === conn.generation && proxy.id === canary.fullId;
        probes.push(this.#timed('cached', probe.method, canary.fullId, () =>
          viaProxy
            ? proxy.call(probe.method, probe.args, { kwargs: kwargsOf(probe.kwargs), timeoutMs })
            : conn.callDirect(canary.fullId, probe.method, probe.args, { kwargs: kwargsOf(probe.kwargs), timeoutMs })));
      }
      if (fresh) {
        const f = fresh;
        probes.push(this.#timed('fresh', probe.method, f.id, () => f.call(probe.method, probe.args, { kwargs: kwargsOf(probe.kwargs), timeoutMs })));
      } else if (resolveError) {
        // The fresh path fails at resolution: that is what a newly started worker would see.
        probes.push(Promise.resolve<ProbeResult>({
          via: 'fresh', method: probe.method, outcome: outcomeOf(resolveError.kind), seconds: resolveSeconds,
          error: resolveError.message, atSeconds: Date.now() / 1000,
        }));
      }
    }
    const [results, holders] = await Promise.all([Promise.all(probes), Promise.all(this.cfg.holders.map((h) => this.#readHolder(conn, h)))]);
    this.#state.applyCalls({ nowSeconds: Date.now() / 1000, probes: results, holders });

    for (const r of results) {
      if (this.#lastOutcome[r.via] !== r.outcome) {
        const level = r.outcome === 'ok' ? 'info' : 'warn';
        this.log[level]({ service: this.cfg.service, via: r.via, outcome: r.outcome, seconds: r.seconds, target: r.target, error: r.error }, 'probe outcome changed');
        this.#lastOutcome[r.via] = r.outcome;
      }
    }
    let holderFailures = 0;
    for (const h of holders) {
      if (h.error !== undefined) holderFailures++;
      if (h.error !== undefined && this.#holderErrors.get(h.name) !== h.error) {
        this.log.warn({ service: this.cfg.service, holder: h.name, error: h.error }, 'cannot read the cached id of a holder');
      }
      if (h.error === undefined) this.#holderErrors.delete(h.name);
      else this.#holderErrors.set(h.name, h.error);
    }
    this.#health = {
      ...this.#health,
      lastDurationSeconds: (performance.now() - started) / 1000,
      // A holder that cannot be read is a partial failure: counted, the rest stays up.
      errors: holderFailures > 0 ? { ...this.#health.errors, rpc: this.#health.errors.rpc + holderFailures } : this.#health.errors,
    };
    this.#publish(resolved?.clientId, resolveError?.message);
  }

  async #timed(via: CallVia, method: string, target: string, call: () => Promise<unknown>): Promise<ProbeResult> {
    const t0 = performance.now();
    try {
      await call();
      return { via, method, outcome: 'ok', seconds: (performance.now() - t0) / 1000, target, atSeconds: Date.now() / 1000 };
    } catch (e) {
      const seconds = (performance.now() - t0) / 1000;
      const err = toHyphaError(e, `${via} ${method}`, this.#secrets());
      return { via, method, outcome: outcomeOf(err.kind), seconds, target, error: err.message, atSeconds: Date.now() / 1000 };
    }
  }

  async #readHolder(conn: HyphaConnection, h: HolderConfig): Promise<HolderReading> {
    try {
      const svc = await conn.getService(h.service, { timeoutMs: this.cfg.timeoutMs });
      const result = await svc.call(h.method, h.args, { kwargs: kwargsOf(h.kwargs), timeoutMs: this.cfg.timeoutMs });
      const clientId = readHeldClientId(result, h.field);
      if (clientId === undefined) {
        return { name: h.name, error: `${h.method} returned no client id${h.field ? ` at ${h.field.join('.')}` : ''}` };
      }
      return { name: h.name, clientId };
    } catch (e) {
      return { name: h.name, error: toHyphaError(e, `holder ${h.name}`, this.#secrets()).message };
    }
  }

  #fail(e: unknown, started: number): void {
    const err = toHyphaError(e, 'sample', this.#secrets());
    const reason: SampleErrorReason = sampleReason(err.kind);
    const wasUp = this.#health.up;
    this.#health = failedHealth(this.#health, reason, err.message, (performance.now() - started) / 1000);
    if (wasUp || this.#health.lastSuccessSeconds === undefined) {
      this.log.warn({ service: this.cfg.service, hypha: this.conn.name, reason, error: err.message }, 'watched-service source down');
    } else {
      this.log.debug({ service: this.cfg.service, reason, error: err.message }, 'watched-service sample failed');
    }
    this.#publish(undefined, undefined);
  }

  #secrets() {
    return [this.conn.options.token];
  }

  #publish(resolvedClientId: string | undefined, resolveError: string | undefined): void {
    if (this.#stopped) return;
    const up = this.#health.up;
    const sample: WatchedServiceSample = {
      service: this.cfg.service,
      health: this.#health,
      // While down nothing current is known: no provider, resolution or cached series.
      providers: up ? this.#state.providers : undefined,
      resolvedClientId: up ? resolvedClientId : undefined,
      resolveError: up ? resolveError : undefined,
      cached: up ? this.#state.cached : [],
      clientIdChangesTotal: this.#state.changesTotal,
      lastChangeSeconds: this.#state.lastChangeSeconds,
      canaryReresolvesTotal: this.#state.reresolvesTotal,
      calls: this.#state.calls,
      lastProbes: up ? currentProbes(this.#state.lastProbes, this.#upSinceSeconds) : {},
    };
    const service = this.cfg.service;
    this.store.update((s) => {
      const services = new Map(s.services ?? []);
      services.set(service, sample);
      return { ...s, services };
    });
  }
}

function currentProbes(all: Partial<Record<CallVia, ProbeResult>>, sinceSeconds: number): Partial<Record<CallVia, ProbeResult>> {
  const out: Partial<Record<CallVia, ProbeResult>> = {};
  for (const p of Object.values(all)) if (p.atSeconds >= sinceSeconds) out[p.via] = p;
  return out;
}

function kwargsOf(k: Record<string, unknown>): Record<string, unknown> | undefined {
  return Object.keys(k).length > 0 ? k : undefined;
}
