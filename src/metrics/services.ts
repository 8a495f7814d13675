import { Histogram, MetricObjectWithValues, MetricValueWithName, Registry } from 'prom-client';
import { CALL_DURATION_BUCKETS, CallSeries, WITNESS_RELEASE_REASONS } from '../snapshot/services';
import type { Snapshot } from '../snapshot/types';
import { counter, gauge, MetricsSection, setCounter } from './section';

type CallLabel = 'service' | 'method' | 'via' | 'outcome' | 'holder';

const CALLS_NAME = 'hypha_serve_service_call_duration_seconds';
const CALLS_HELP = 'Duration of probe calls to the watched service via the cached (canary) or a freshly resolved proxy, and of holder probes (via="holder", with a holder label: a call to the holder that goes through its cached proxy), by outcome.';

interface ExportedValue {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * A histogram whose content is the cumulative data a source keeps in the
 * snapshot. prom-client histograms can only be observed into, and sections
 * rebuild from the snapshot, so this one renders the snapshot's buckets
 * (the registry only calls getForPromString/get and reset).
 */
class SnapshotHistogram extends Histogram<CallLabel> {
  // Not a #private field: the base constructor calls reset() before subclass fields exist.
  private series: { labels: Partial<Record<CallLabel, string>>; s: CallSeries }[] = [];

  setSeries(series: { labels: Partial<Record<CallLabel, string>>; s: CallSeries }[]): void {
    this.series = series;
  }

  override reset(): void {
    this.series = [];
  }

  // The registry prefers this over get() when it exists.
  async getForPromString(): Promise<{ name: string; help: string; type: string; values: ExportedValue[]; aggregator: string }> {
    return this.#export();
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<CallLabel>>> {
    return this.#export() as unknown as MetricObjectWithValues<MetricValueWithName<CallLabel>>;
  }

  #export(): { name: string; help: string; type: string; values: ExportedValue[]; aggregator: string } {
    const values: ExportedValue[] = [];
    for (const { labels, s } of this.series) {
      let acc = 0;
      CALL_DURATION_BUCKETS.forEach((bound, i) => {
        acc += s.histogram.counts[i] ?? 0;
        values.push({ metricName: `${CALLS_NAME}_bucket`, labels: { ...labels, le: bound }, value: acc });
      });
      values.push({ metricName: `${CALLS_NAME}_bucket`, labels: { ...labels, le: '+Inf' }, value: s.histogram.count });
      values.push({ metricName: `${CALLS_NAME}_sum`, labels, value: s.histogram.sum });
      values.push({ metricName: `${CALLS_NAME}_count`, labels, value: s.histogram.count });
    }
    return { name: CALLS_NAME, help: CALLS_HELP, type: 'histogram', values, aggregator: 'sum' };
  }
}

/** Watched services (docs/watched-services.md): providers, resolved vs cached client ids, churn and probe calls. */
export class ServicesMetrics implements MetricsSection {
  readonly #providers;
  readonly #providerInfo;
  readonly #resolvedInfo;
  readonly #cachedInfo;
  readonly #cachedStale;
  readonly #changes;
  readonly #lastChange;
  readonly #reresolves;
  readonly #calls: SnapshotHistogram;
  readonly #probeSuccess;
  readonly #staleSince;
  readonly #holdersConfigured;
  readonly #witnessMax;
  readonly #releases;
  readonly #holderProbeSuccess;
  readonly #freshAttempts;
  readonly #serverGone;

  constructor(r: Registry) {
    const S = ['service'] as const;
    this.#providers = gauge(r, 'hypha_serve_service_providers', 'Live providers of the watched service (registrations in its workspace).', S);
    this.#providerInfo = gauge(r, 'hypha_serve_service_provider_info', 'One series per live provider of the watched service; always 1.', [...S, 'client_id']);
    this.#resolvedInfo = gauge(r, 'hypha_serve_service_resolved_info', 'Client id a fresh getServiceInfo on the current connection resolved to this cycle; always 1.', [...S, 'client_id']);
    this.#cachedInfo = gauge(r, 'hypha_serve_service_cached_info', 'Client id a long-lived proxy addresses (holder="exporter": the exporter\'s own canary); always 1.', [...S, 'holder', 'client_id']);
    this.#cachedStale = gauge(r, 'hypha_serve_service_cached_stale', '1 when the cached client id of the holder is not among the live providers.', [...S, 'holder']);
    this.#changes = counter(r, 'hypha_serve_service_client_id_changes_total', 'Cycles in which the set of provider client ids differed from the previous cycle\'s.', S);
    this.#lastChange = gauge(r, 'hypha_serve_service_client_id_last_change_timestamp_seconds', 'When the provider set last changed (Unix seconds).', S);
    this.#reresolves = counter(r, 'hypha_serve_service_canary_reresolves_total', 'Times the exporter dropped its stale canary proxy and resolved the service anew.', S);
    this.#calls = new SnapshotHistogram({
      name: CALLS_NAME,
      help: CALLS_HELP,
      labelNames: ['service', 'method', 'via', 'outcome', 'holder'],
      buckets: [...CALL_DURATION_BUCKETS],
      registers: [r],
    });
    this.#probeSuccess = gauge(r, 'hypha_serve_service_probe_success', '1 when the last probe call via this kind of proxy succeeded (fresh: any live provider answered).', [...S, 'via']);
    this.#staleSince = gauge(r, 'hypha_serve_service_cached_stale_since_timestamp_seconds', 'Since when the cached client id of the holder has not been among the live providers (holder="exporter": when the canary became the witness); present while cached_stale is 1.', [...S, 'holder']);
    this.#holdersConfigured = gauge(r, 'hypha_serve_service_holders_configured', 'Configured holders (long-lived clients read or probed). 0: the exporter sees no real client; its stale canary is the only witness.', S);
    this.#witnessMax = gauge(r, 'hypha_serve_service_witness_max_seconds', 'canary.witness_max: the longest a stale canary is kept as the witness; absent when unlimited.', S);
    this.#releases = counter(r, 'hypha_serve_service_witness_releases_total', 'Times a stale canary (the witness) ended, by reason: returned (its id is live again), holders_agree, max_age (witness_max passed), operator (released_client_ids).', [...S, 'reason']);
    this.#holderProbeSuccess = gauge(r, 'hypha_serve_service_holder_probe_success', '1 when the last holder probe (a read-only call through the holder\'s cached proxy of the service) succeeded.', [...S, 'holder']);
    this.#serverGone = gauge(r, 'hypha_serve_service_cached_server_gone', '1 when the holder\'s cached client id is stale and is a Hypha server id the server replaced (it came back under another id): that id never returns; 0 otherwise; absent while staleness is unknown.', [...S, 'holder']);
    this.#freshAttempts = gauge(r, 'hypha_serve_service_fresh_probe_attempts', 'Providers the last fresh probe tried: 1 = the first resolution answered; more = a listed provider did not answer and others were tried.', S);
  }

  rebuild(s: Snapshot): void {
    for (const m of [this.#providers, this.#providerInfo, this.#resolvedInfo, this.#cachedInfo, this.#cachedStale, this.#lastChange, this.#probeSuccess,
      this.#staleSince, this.#holdersConfigured, this.#witnessMax, this.#holderProbeSuccess, this.#freshAttempts, this.#serverGone]) m.reset();
    this.#changes.reset();
    this.#reresolves.reset();
    this.#releases.reset();
    const calls: { labels: Partial<Record<CallLabel, string>>; s: CallSeries }[] = [];
    for (const w of s.services?.values() ?? []) {
      const service = w.service;
      setCounter(this.#changes, { service }, w.clientIdChangesTotal);
      setCounter(this.#reresolves, { service }, w.canaryReresolvesTotal);
      if (w.lastChangeSeconds !== undefined) this.#lastChange.set({ service }, w.lastChangeSeconds);
      for (const reason of WITNESS_RELEASE_REASONS) setCounter(this.#releases, { service, reason }, w.witnessReleasesTotal?.[reason] ?? 0);
      if (w.holdersConfigured !== undefined) this.#holdersConfigured.set({ service }, w.holdersConfigured);
      if (w.witnessMaxSeconds !== undefined) this.#witnessMax.set({ service }, w.witnessMaxSeconds);
      for (const c of w.calls) {
        const labels: Partial<Record<CallLabel, string>> = { service, method: c.method, via: c.via, outcome: c.outcome };
        if (c.holder !== undefined) labels.holder = c.holder;
        calls.push({ labels, s: c });
      }
      if (w.providers) {
        this.#providers.set({ service }, w.providers.length);
        for (const client_id of w.providers) this.#providerInfo.set({ service, client_id }, 1);
      }
      if (w.resolvedClientId !== undefined) this.#resolvedInfo.set({ service, client_id: w.resolvedClientId }, 1);
      for (const c of w.cached) {
        if (c.clientId === undefined) continue;
        this.#cachedInfo.set({ service, holder: c.holder, client_id: c.clientId }, 1);
        if (c.stale !== undefined) this.#cachedStale.set({ service, holder: c.holder }, c.stale ? 1 : 0);
        if (c.serverGone !== undefined) this.#serverGone.set({ service, holder: c.holder }, c.serverGone ? 1 : 0);
        if (c.stale === true && c.staleSinceSeconds !== undefined) this.#staleSince.set({ service, holder: c.holder }, c.staleSinceSeconds);
      }
      for (const p of Object.values(w.lastProbes)) this.#probeSuccess.set({ service, via: p.via }, p.outcome === 'ok' ? 1 : 0);
      if (w.lastProbes.fresh?.attempts !== undefined) this.#freshAttempts.set({ service }, w.lastProbes.fresh.attempts);
      // Like the other probes: only while the source is up.
      if (w.health.up) for (const p of w.holderProbes ?? []) this.#holderProbeSuccess.set({ service, holder: p.holder }, p.outcome === 'ok' ? 1 : 0);
    }
    this.#calls.setSeries(calls);
  }
}
