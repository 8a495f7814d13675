import { CANARY_HOLDER, ProbeVia, WatchedServiceSample } from '../snapshot/services';
import type { Snapshot } from '../snapshot/types';
import type { ProbeV1, Severity, WatchedServiceV1 } from './model';
import { severityRank, worst } from './severity';
import { isoSeconds } from '../util/iso-seconds';

/** The watched-services part of the status, read from the snapshot when it has one. */
export interface ServicesView {
  enabled: boolean;
  services: WatchedServiceV1[];
}

const VIAS: readonly ProbeVia[] = ['cached', 'fresh'];

export function servicesView(s: Snapshot): ServicesView {
  if (!s.services) return { enabled: false, services: [] };
  const services = [...s.services.values()].map(watchedServiceV1);
  services.sort((a, b) => severityRank(a.severity) - severityRank(b.severity) || (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
  return { enabled: true, services };
}

function watchedServiceV1(w: WatchedServiceSample): WatchedServiceV1 {
  const problems: string[] = [];
  let severity: Severity = 'ok';
  const flag = (sev: Severity, text: string) => {
    severity = worst(severity, sev);
    problems.push(text);
  };
  // A failed sample is already a source problem; here it only colours the row.
  if (!w.health.up) severity = 'critical';
  if (w.providers && w.providers.length === 0) flag('critical', 'no live provider');
  if (!w.providers && w.health.up) flag('warning', 'providers could not be listed');
  if (w.resolvedClientId === undefined && w.resolveError && (w.providers?.length ?? 0) > 0) flag('warning', `fresh resolve failed: ${w.resolveError}`);
  const selfHealing = w.witnessSelfHealing === true;
  for (const c of w.cached) {
    const canary = c.holder === CANARY_HOLDER;
    if (c.stale === true) {
      // The exporter's decision: critical once the page fires; a self-healing witness (HyphaServiceCachedProxySelfHealing)
      // and a stale id still within its wait are warnings.
      const page = c.page?.firing ? '; HyphaServiceCachedProxyStale fires'
        : c.page && !c.page.selfHealing ? `; the page fires at ${isoSeconds(c.page.dueSeconds)}` : '';
      const gone = c.page?.cause === 'server_gone' ? ', a replaced server id: it never returns' : '';
      flag(c.page?.firing ? 'critical' : 'warning', `${c.holder} holds stale client id ${c.clientId ?? '?'} (not among the live providers${gone})${page}`);
    }
    if (c.stale === true && canary && selfHealing) problems.push(selfHealingText(w));
    else if (c.stale === true && canary && w.holdersConfigured !== undefined) problems.push(witnessText(w));
    if (c.error) flag('warning', `${c.holder} could not be read: ${c.error}`);
  }
  if (w.health.up) {
    for (const p of w.holderProbes ?? []) {
      if (p.outcome !== 'ok') flag('critical', `call through ${p.holder}'s cached proxy (${p.method}): ${p.outcome} after ${p.seconds.toFixed(2)} s`);
    }
  }
  if (w.probeVerdicts?.cachedFailing) {
    flag('critical', 'no call through the cached proxy succeeded within the probe window while a fresh one did (HyphaServiceCachedProbeFailing)');
  }
  if (w.probeVerdicts?.allFailing) flag('warning', 'no probe call on any path succeeded within the probe window (HyphaServiceProbeFailing)');
  const probes: ProbeV1[] = [];
  for (const via of VIAS) {
    const p = w.lastProbes[via];
    if (!p) continue;
    const probe: ProbeV1 = { via, method: p.method, success: p.outcome === 'ok', outcome: p.outcome, latency_seconds: p.seconds, at: p.atSeconds };
    if (p.target !== undefined) probe.target = p.target;
    if (p.error !== undefined) probe.error = p.error;
    probes.push(probe);
    // One failed call is a warning; the pages are the exporter's decisions over the probe window.
    if (p.outcome !== 'ok') flag('warning', `call via ${via} proxy: ${p.outcome} after ${p.seconds.toFixed(2)} s`);
    else if (via === 'fresh' && (p.attempts ?? 1) > 1) flag('warning', `fresh probe needed ${p.attempts} providers: a listed provider did not answer`);
  }
  const out: WatchedServiceV1 = {
    service: w.service,
    severity,
    problems,
    up: w.health.up,
    providers: w.providers ? w.providers.length : null,
    provider_client_ids: w.providers ? [...w.providers] : [],
    resolved_client_id: w.resolvedClientId ?? null,
    cached: w.cached.map((c) => {
      const h: WatchedServiceV1['cached'][number] = { holder: c.holder, client_id: c.clientId ?? null, stale: c.stale ?? null };
      if (c.staleSinceSeconds !== undefined) h.stale_since = c.staleSinceSeconds;
      if (c.sinceSeconds !== undefined) h.since = c.sinceSeconds;
      if (c.error !== undefined) h.error = c.error;
      if (c.page) h.page = { firing: c.page.firing, due: c.page.dueSeconds, cause: c.page.cause, self_healing: c.page.selfHealing };
      return h;
    }),
    client_id_changes_total: w.clientIdChangesTotal,
    probes,
  };
  if (w.lastChangeSeconds !== undefined) out.last_change_at = w.lastChangeSeconds;
  if (w.workerHolders !== undefined && w.workerHolders.length > 0) {
    out.worker_holders = w.workerHolders.map((h) => ({ holder: h.holder, version: h.version ?? null, recovery: h.recovery }));
  }
  if (w.witnessSelfHealing !== undefined) out.witness_self_healing = w.witnessSelfHealing;
  return out;
}

/** A self-healing witness in one line: who re-resolves by itself, and when the exporter lets it go. */
function selfHealingText(w: WatchedServiceSample): string {
  const workers = (w.workerHolders ?? []).map((h) => `${h.holder} (BioEngine ${h.version ?? '?'})`).join(', ');
  const bound = w.selfHealingReleaseSeconds !== undefined ? ` after ${w.selfHealingReleaseSeconds} s` : '';
  return `the exporter's stale canary is a self-healing witness: every holder is a BioEngine worker that re-resolves by itself `
    + `(${workers}; at most one call failed each); no action is needed, and the exporter releases it by itself${bound} of self-healing`;
}

/** What the exporter can and cannot know about a stale canary, in one line (docs/watched-services.md). */
function witnessText(w: WatchedServiceSample): string {
  const ends = ['its client id is a live provider again'];
  if ((w.holdersConfigured ?? 0) > 0) ends.push(`all ${w.holdersConfigured} configured holder(s) report a live id and pass their probe`);
  ends.push('an operator lists it in canary.released_client_ids');
  if (w.witnessMaxSeconds !== undefined) ends.push(`canary.witness_max (${w.witnessMaxSeconds} s) passes`);
  const stuck = (w.workerHolders ?? []).filter((h) => h.recovery !== 'self_healing');
  const seen = (w.holdersConfigured ?? 0) > 0
    ? 'the configured holders are the only real clients the exporter can see'
    : stuck.length > 0
      ? `no holders are configured; of the BioEngine workers discovered, ${stuck.map((h) => `${h.holder} (BioEngine ${h.version ?? '?'}, `
        + `${h.recovery})`).join(', ')} do not re-resolve a stale proxy by themselves or may not`
      : 'no holders are configured, so the exporter cannot see whether the real long-lived clients recovered';
  return `the exporter's stale canary is kept as the witness: ${seen}; it ends when ${ends.join(', or ')}`;
}
