import { createHash } from 'node:crypto';
import type { Logger } from '../../util/log';
import type { RayClusterConfig } from '../../config/load';
import { SnapshotStore } from '../../snapshot/store';
import { RayClusterSample, ServeProxy } from '../../snapshot/types';
import { errorMessage, SourceError } from '../../util/errors';
import { scrub } from '../../util/secret';
import { HealthBook } from '../health-book';
import { httpGet } from '../http-get';
import { authorizationHeader, mainCredential, secretsOf, tlsOptions } from '../../config/http-client';
import { sampleReasonOf } from '../sample-reason';
import { Poller, Source } from '../poller';
import { ParsedServe, parseServeInstance } from './parse';
import { proxyPages } from '../../serve/judgement';
import { VERSION } from '../../util/version';

const HEALTHZ_MAX_BYTES = 4096;
const USER_AGENT = `hypha-serve-exporter/${VERSION}`;

/** What a Ray source hands the source a reload restarts it as: what it last published (the cluster aside). */
export type RayServeHandover = Omit<RayClusterSample, 'cluster'>;

/** Samples one Ray cluster's Serve REST API (and its proxies' /-/healthz) in the background. */
export class RayServeSource implements Source<RayServeHandover> {
  readonly kind = 'ray';
  readonly #poller: Poller;
  readonly #book: HealthBook;
  #appsDroppedTotal = 0;
  #malformedTotal = 0;
  #stopped = false;
  /** The last request was refused (401/403): read the credential files again before the next, even if they look unchanged. */
  #refused = false;
  /** The Serve state last published; a predecessor's (replaced by a reload) until this source's first sample. */
  #state: RayClusterSample['state'];
  /**
   * The last answer's digest and its parse. Serve's answer is byte-identical from sample to sample while
   * nothing moves: parsing it again cost about a tenth of a cycle at 5,000 apps, and the same app objects
   * let every consumer of the snapshot see "unchanged" by identity. A digest, not the body: no copy of a
   * multi-MB answer is kept.
   */
  #last: { digest: string; parsed: ParsedServe } | undefined;

  /** `handover`: what the source this one replaces handed over (a reload is neither an outage nor a counter reset). */
  constructor(
    private readonly cfg: RayClusterConfig,
    private readonly store: SnapshotStore,
    private readonly log: Logger,
    handover?: RayServeHandover,
  ) {
    this.#book = new HealthBook({
      kind: 'ray', target: cfg.name, intervalSeconds: cfg.intervalMs / 1000, handover: handover?.health,
      log, label: 'ray', fields: { cluster: cfg.name }, credential: mainCredential(cfg.http),
    });
    this.#state = handover?.state;
    this.#appsDroppedTotal = handover?.appsDroppedTotal ?? 0;
    this.#malformedTotal = handover?.malformedTotal ?? 0;
    this.#poller = new Poller(cfg.intervalMs, () => this.#sample(), (e) => this.log.error({ err: errorMessage(e) }, 'ray sampler bug'));
  }

  get target(): string {
    return this.cfg.name;
  }

  start(): void {
    this.#publish(this.#state);
    this.#poller.start();
  }

  async stop(): Promise<void> {
    // Set before awaiting: a sample still in flight must not overwrite its successor's data.
    this.#stopped = true;
    await this.#poller.stop();
  }

  forget(): void {
    this.store.removeRayCluster(this.cfg.name);
  }

  sampleNow(): Promise<void> {
    return this.#poller.runOnce();
  }

  sampleFresh(): Promise<void> {
    return this.#poller.runFresh();
  }

  async #sample(): Promise<void> {
    const started = performance.now();
    const requestedSeconds = Date.now() / 1000;
    const url = `${this.cfg.dashboardUrl}/api/serve/applications/`;
    // Ray 2.40's dashboard answers 500 to a request without a User-Agent.
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': USER_AGENT };
    const http = this.cfg.http;
    if (this.#refused) for (const s of secretsOf(http)) s.refresh({ force: true });
    // reveal() (in both) re-reads a credential or certificate file that changed since the last request.
    const authorization = authorizationHeader(http);
    if (authorization !== undefined) headers.authorization = authorization;
    try {
      const res = await httpGet(url, {
        timeoutMs: this.cfg.timeoutMs, maxBytes: this.cfg.maxResponseBytes, headers, tls: tlsOptions(http), proxyUrl: http.proxyUrl,
      });
      this.#refused = res.status === 401 || res.status === 403;
      if (this.#refused) throw new SourceError('auth', `HTTP ${res.status} from the Serve API`);
      if (res.status !== 200) {
        throw new SourceError('http_status', `HTTP ${res.status} from the Serve API: ${res.body.slice(0, 200)}`);
      }
      const parsed = this.#parse(res.body);
      if (parsed.malformed.length > 0) {
        this.#malformedTotal += parsed.malformed.length;
        this.#book.countError('schema');
        this.log.warn({ cluster: this.cfg.name, skipped: parsed.malformed.slice(0, 5) }, 'skipped malformed entries in the Serve API answer');
      }
      let apps = parsed.apps;
      let dropped = 0;
      if (apps.length > this.cfg.maxApps) {
        // Keep a stable subset (by name) so series do not hop between apps from cycle to cycle.
        apps = [...apps].sort((a, b) => (a.name < b.name ? -1 : 1)).slice(0, this.cfg.maxApps);
        dropped = parsed.apps.length - apps.length;
        this.#appsDroppedTotal += dropped;
      }
      const proxies = await this.#probeProxies(parsed.proxies, parsed.httpPort);
      this.#book.succeeded((performance.now() - started) / 1000, { apps: apps.length });
      this.#publish({ apps, proxies, appsDropped: dropped, requestedSeconds });
    } catch (e) {
      const reason = sampleReasonOf(e);
      const message = scrub(errorMessage(e), secretsOf(this.cfg.http));
      this.#book.failed(reason, message, (performance.now() - started) / 1000);
      this.#publish(undefined);
    }
  }

  #parse(body: string): ParsedServe {
    const digest = createHash('sha1').update(body).digest('base64');
    if (this.#last?.digest === digest) return this.#last.parsed;
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch (e) {
      throw new SourceError('bad_json', `invalid JSON from the Serve API: ${errorMessage(e)}`);
    }
    const parsed = parseServeInstance(json);
    this.#last = { digest, parsed };
    return parsed;
  }

  async #probeProxies(proxies: ServeProxy[], httpPort: number | undefined): Promise<ServeProxy[]> {
    if (!this.cfg.proxyProbe.enabled || httpPort === undefined) return proxies;
    return Promise.all(
      proxies.map(async (p): Promise<ServeProxy> => {
        if (p.nodeIp === '') return p;
        const host = p.nodeIp.includes(':') ? `[${p.nodeIp}]` : p.nodeIp;
        try {
          const r = await httpGet(`http://${host}:${httpPort}/-/healthz`, {
            timeoutMs: this.cfg.proxyProbe.timeoutMs, maxBytes: HEALTHZ_MAX_BYTES, headers: { 'user-agent': USER_AGENT },
          });
          return { ...p, ready: r.status === 200, readyDetail: `HTTP ${r.status}: ${r.body.trim().slice(0, 100)}` };
        } catch (e) {
          return { ...p, ready: false, readyDetail: errorMessage(e) };
        }
      }),
    );
  }

  handover(): RayServeHandover {
    return { health: this.#book.health, state: this.#state, appsDroppedTotal: this.#appsDroppedTotal, malformedTotal: this.#malformedTotal };
  }

  #publish(state: RayClusterSample['state']): void {
    if (this.#stopped) return;
    this.#state = state;
    this.store.setRayCluster({
      cluster: this.cfg.name,
      health: this.#book.health,
      state,
      appsDroppedTotal: this.#appsDroppedTotal,
      malformedTotal: this.#malformedTotal,
      proxyPages: state ? proxyPages(state) : undefined,
    });
  }
}
