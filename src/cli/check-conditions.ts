import type { Config } from '../config/load';
import { isMissing, RegistrationState } from '../snapshot/registration';
import { CANARY_HOLDER } from '../snapshot/services';
import { isKnown, sourceHealths, Snapshot } from '../snapshot/types';
import { BIOENGINE_WORKER_TYPE } from '../sources/hypha/workers';

// What `hypha-serve-exporter check` judges from one snapshot: which critical pages' conditions hold
// now, and what the exporter has not finished judging. The snapshot is the one the exporter serves
// (the same sources and registration stage), so check and the pages cannot disagree on the facts;
// check reports a condition at once, without the rules' `for:` (it says since when it holds).

/** A critical page whose condition holds in the snapshot. */
export interface AlertCondition {
  alert: string;
  severity: 'critical';
  /** Short name of what is wrong, e.g. "prod/model-a" or "public/artifact-manager". */
  subject: string;
  text: string;
  rayCluster?: string;
  app?: string;
  service?: string;
  holder?: string;
}

/** Where the registration of (cluster, app) is known: both its sources are up and it is not settling. */
function knownState(s: Snapshot, a: NonNullable<Snapshot['registration']>['apps'][number]): RegistrationState | undefined {
  const rayUp = s.ray.get(a.cluster)?.health.up === true;
  const hyphaUp = s.hypha?.get(a.hypha)?.health.up === true;
  return rayUp && hyphaUp && a.settled ? a.state : undefined;
}

/**
 * The critical pages' conditions, from the snapshot's judged states only (unknown is never a
 * condition): an app RUNNING whose registration is missing (any missing_* cause), a worker that
 * says RUNNING for such an app on its cluster when the app page does not already name it, a cached
 * proxy that is stale, a cached path failing while the fresh one works, and no Serve proxy ready
 * while apps are at zero or have replicas. Mirrors rules/alerts.yml, without the for: durations.
 */
export function alertConditions(s: Snapshot): AlertCondition[] {
  const out: AlertCondition[] = [];
  const appPaged = new Set<string>();
  const since = (t?: number) => (t === undefined ? '' : ` since ${new Date(t * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z')}`);
  for (const a of s.registration?.apps ?? []) {
    const state = knownState(s, a);
    if (state === undefined || !isMissing(state)) continue;
    const serve = s.ray.get(a.cluster)?.state?.apps.find((x) => x.name === a.app);
    if (serve?.status !== 'RUNNING') continue;
    appPaged.add(`${a.cluster}\u0000${a.app}`);
    out.push({
      alert: 'HyphaServeAppRunningNotRegistered', severity: 'critical', subject: `${a.cluster}/${a.app}`, rayCluster: a.cluster, app: a.app,
      text: `RUNNING in Ray, expected service ${a.service} not registered on Hypha server ${a.hypha}${since(a.unregisteredSinceSeconds)} `
        + `(cause ${state}${a.stuck ? '; certain: the upstream proxy never leaves this state by itself' : ''})`,
    });
  }
  for (const w of s.registration?.workers ?? []) {
    if (!w.up || w.rayCluster === undefined) continue;
    for (const wa of w.apps) {
      if (wa.status !== 'RUNNING' || wa.serviceRegistered === false || appPaged.has(`${w.rayCluster}\u0000${wa.app}`)) continue;
      const a = s.registration?.apps.find((x) => x.cluster === w.rayCluster && x.app === wa.app && x.hypha === w.hypha);
      const state = a ? knownState(s, a) : undefined;
      if (!a || state === undefined || !isMissing(state)) continue;
      out.push({
        alert: 'HyphaServeWorkerAppRunningNotRegistered', severity: 'critical', subject: `${a.cluster}/${a.app}`, rayCluster: a.cluster, app: a.app,
        text: `worker ${w.worker} reports it RUNNING while ${a.service} is not registered `
          + `(cause ${state}; Ray status ${s.ray.get(a.cluster)?.state?.apps.find((x) => x.name === a.app)?.status ?? 'unknown'})`,
      });
    }
  }
  for (const w of s.services?.values() ?? []) {
    if (!w.health.up) continue;
    for (const c of w.cached) {
      if (c.stale !== true) continue;
      out.push({
        alert: 'HyphaServiceCachedProxyStale', severity: 'critical', subject: `${w.service} (${c.holder})`, service: w.service, holder: c.holder,
        text: `${c.holder === CANARY_HOLDER ? "the exporter's canary" : `holder ${c.holder}`} caches client id ${c.clientId ?? '?'}, `
          + `not among the live providers (${(w.providers ?? []).join(', ') || 'none'})${since(c.staleSinceSeconds)}`,
      });
    }
    const cached = w.lastProbes.cached;
    const fresh = w.lastProbes.fresh;
    if (cached && fresh && cached.outcome !== 'ok' && fresh.outcome === 'ok') {
      out.push({
        alert: 'HyphaServiceCachedProbeFailing', severity: 'critical', subject: w.service, service: w.service,
        text: `probe ${cached.method} through the cached proxy: ${cached.outcome} after ${cached.seconds.toFixed(2)} s; through a fresh proxy: ok`,
      });
    }
  }
  for (const r of s.ray.values()) {
    const st = r.state;
    if (!r.health.up || !st) continue;
    const probed = st.proxies.filter((p) => p.ready !== undefined);
    // As the rules: no proxy ready among the probed ones (none probed: unknown), or Ray lists no proxy at all.
    const noneListed = st.proxies.length === 0;
    const noneReady = (probed.length > 0 && !probed.some((p) => p.ready === true)) || noneListed;
    if (!noneReady) continue;
    const deployments = st.apps.flatMap((a) => a.deployments);
    const why = noneListed ? 'Ray lists no Serve proxy' : `none of ${probed.length} probed Serve proxies answers /-/healthz with 200`;
    if (deployments.some((d) => d.scaledToZero)) {
      out.push({
        alert: 'HyphaServeNoProxyCanWakeApps', severity: 'critical', subject: r.cluster, rayCluster: r.cluster, text: `deployments idle at zero and ${why}`,
      });
    }
    if (deployments.some((d) => (d.replicas.RUNNING ?? 0) > 0)) {
      out.push({
        alert: 'HyphaServeAllProxiesUnready', severity: 'critical', subject: r.cluster, rayCluster: r.cluster,
        text: `deployments have RUNNING replicas and ${why}`,
      });
    }
  }
  return out;
}

/**
 * What the exporter has not finished judging: a source whose first attempt has not ended, a
 * registration withheld while Hypha providers re-register, a BioEngine worker listed but not asked
 * yet (the expected service id may depend on its answer). Empty = everything has been judged once.
 */
export function pendingJudgements(s: Snapshot, cfg: Config): string[] {
  const out: string[] = [];
  for (const c of cfg.rayClusters) if (!s.ray.has(c.name)) out.push(`ray/${c.name}: not sampled yet`);
  for (const h of cfg.hyphaServers) if (!s.hypha?.has(h.name)) out.push(`hypha/${h.name}: not sampled yet`);
  if (cfg.hyphaServers.length > 0) {
    for (const w of cfg.watchedServices) if (!s.services?.has(w.service)) out.push(`hypha_service/${w.service}: not sampled yet`);
  }
  for (const h of sourceHealths(s)) if (!isKnown(h)) out.push(`${h.source}/${h.target}: first sample not finished`);
  for (const a of s.registration?.apps ?? []) {
    if (!a.settled) out.push(`registration of ${a.cluster}/${a.app}: withheld while Hypha providers re-register after a reconnect`);
  }
  if (cfg.hyphaRegistration.workers.discover) {
    for (const h of s.hypha?.values() ?? []) {
      if (h.listedSeconds === 0) continue;
      const asked = new Set(h.workers.map((w) => w.worker));
      for (const list of h.registry.values()) {
        for (const svc of list) if (svc.type === BIOENGINE_WORKER_TYPE && !asked.has(svc.id)) out.push(`worker ${svc.id}: not asked yet`);
      }
    }
  }
  return out;
}
