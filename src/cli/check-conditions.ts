import type { Config } from '../config/load';
import { GateKnowledge, isMissing, PageDecision, RegistrationState } from '../snapshot/registration';
import { FIRST_RELEASE_WITH_FIXES, GATE_FIX } from '../util/bioengine-release';
import { CANARY_HOLDER, WorkerHolder } from '../snapshot/services';
import { ARTIFACT_MANAGER_FIX } from '../util/bioengine-release';
import { isKnown, sourceHealths, Snapshot } from '../snapshot/types';
import { BIOENGINE_WORKER_TYPE } from '../sources/hypha/workers';
import { isoSeconds } from '../util/iso-seconds';

// What `hypha-serve-exporter check` reads from one snapshot: which critical pages' conditions hold now,
// and what the exporter has not finished judging. It judges nothing itself: every condition is a decision
// the exporter made once (the registration stage, the watched-service state, the Ray source) and exports as
// the page series the alerts read, so check, the status page and the pages cannot disagree. A condition
// whose page waits says when it fires; the rules' `for:` is not counted (check says the condition holds).

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

/** The exporter's decision on a page, as its stage made it (the metric and the status page show the same). */
function pageText(p: Pick<PageDecision, 'firing' | 'dueSeconds'> | undefined, unless = 'it registers first'): string {
  if (p?.firing) return `the page fires${p.dueSeconds !== undefined ? ` since ${isoSeconds(p.dueSeconds)}` : ''}`;
  if (p?.dueSeconds !== undefined) return `the page fires at ${isoSeconds(p.dueSeconds)} unless ${unless}`;
  return 'the page is not decided yet';
}

/** An app's BioEngine gate in words: which release line its proxy runs and how that is known. */
function gateText(g: GateKnowledge): string {
  const from = g.source === 'evidence' ? 'seen' : g.version !== undefined ? `worker reports BioEngine ${g.version}` : 'worker version unknown';
  switch (g.gate) {
    case 'deregisters_at_zero':
      return `proxy deregisters at zero (BioEngine up to ${GATE_FIX.lastWithout}, ${from}; upgrade to ${FIRST_RELEASE_WITH_FIXES} or later)`;
    case 'serviceable_at_zero': return `proxy keeps an app idle at zero registered (BioEngine ${GATE_FIX.firstWith} or later, ${from})`;
    case 'unknown': return `proxy gate unknown (${from})`;
  }
}

/** The worker holders that keep a stale canary a page, in words: those that stay stale or whose recovery is unknown. */
function notSelfHealing(workers: readonly WorkerHolder[]): string {
  const named = workers.filter((h) => h.recovery !== 'self_healing')
    .map((h) => `${h.holder} (${h.version !== undefined ? `BioEngine ${h.version}` : 'version unknown'}, ${h.recovery})`);
  if (named.length === 0) return '';
  return `; BioEngine workers that do not re-resolve by themselves (before ${ARTIFACT_MANAGER_FIX.firstWith}) or may not: ${named.join(', ')}`;
}

/** Where the registration of (cluster, app) is known: both its sources are up and it is not settling. */
function knownState(s: Snapshot, a: NonNullable<Snapshot['registration']>['apps'][number]): RegistrationState | undefined {
  const rayUp = s.ray.get(a.cluster)?.health.up === true;
  const hyphaUp = s.hypha?.get(a.hypha)?.health.up === true;
  return rayUp && hyphaUp && a.settled ? a.state : undefined;
}

/**
 * The critical pages' conditions, read from the exporter's decisions in the snapshot (the same ones its
 * page series export; unknown is never a condition): an app RUNNING whose registration is missing, a
 * worker that says RUNNING for such an app when the app page does not already name it, a stale cached
 * proxy, a cached path failing while the fresh one works, no Serve proxy ready while apps are at zero or
 * have replicas. A condition whose page waits (a cause's wait) says when it fires; the rules' for: of the
 * probe and proxy pages is not counted here (check says the condition holds now).
 */
export function alertConditions(s: Snapshot): AlertCondition[] {
  const out: AlertCondition[] = [];
  const appPaged = new Set<string>();
  const since = (t?: number) => (t === undefined ? '' : ` since ${isoSeconds(t)}`);
  for (const a of s.registration?.apps ?? []) {
    const state = knownState(s, a);
    if (state === undefined || !isMissing(state)) continue;
    const serve = s.ray.get(a.cluster)?.state?.apps.find((x) => x.name === a.app);
    if (serve?.status !== 'RUNNING') continue;
    appPaged.add(`${a.cluster}\u0000${a.app}`);
    out.push({
      alert: 'HyphaServeAppRunningNotRegistered', severity: 'critical', subject: `${a.cluster}/${a.app}`, rayCluster: a.cluster, app: a.app,
      text: `RUNNING in Ray, expected service ${a.service} not registered on Hypha server ${a.hypha}${since(a.unregisteredSinceSeconds)} `
        + `(cause ${state}${a.gate ? `; ${gateText(a.gate)}` : ''}${a.stuck ? '; certain: this proxy never leaves this state by itself' : ''}); `
        + pageText(a.page),
    });
  }
  for (const a of s.registration?.apps ?? []) {
    const state = knownState(s, a);
    // The app page already names this app; the worker's view adds nothing then.
    if (state === undefined || a.workerPage?.sinceSeconds === undefined || appPaged.has(`${a.cluster}\u0000${a.app}`)) continue;
    out.push({
      alert: 'HyphaServeWorkerAppRunningNotRegistered', severity: 'critical', subject: `${a.cluster}/${a.app}`, rayCluster: a.cluster, app: a.app,
      text: `worker ${(a.claimingWorkers ?? []).join(', ') || '(none answers now; its last word stands)'} reports it RUNNING `
        + `while ${a.service} is not registered `
        + `(cause ${state}; Ray status ${s.ray.get(a.cluster)?.state?.apps.find((x) => x.name === a.app)?.status ?? 'unknown'}); ${pageText(a.workerPage)}`,
    });
  }
  for (const w of s.services?.values() ?? []) {
    if (!w.health.up) continue;
    // A self-healing witness's canary (every holder a worker that re-resolves by itself) never pages: the decision says so.
    for (const c of w.cached) {
      if (!c.page || c.page.selfHealing) continue;
      out.push({
        alert: 'HyphaServiceCachedProxyStale', severity: 'critical', subject: `${w.service} (${c.holder})`, service: w.service, holder: c.holder,
        text: `${c.holder === CANARY_HOLDER ? "the exporter's canary" : `holder ${c.holder}`} caches client id ${c.clientId ?? '?'}, `
          + `not among the live providers (${(w.providers ?? []).join(', ') || 'none'})${since(c.page.sinceSeconds)} (cause ${c.page.cause})`
          + (c.holder === CANARY_HOLDER ? notSelfHealing(w.workerHolders ?? []) : '') + `; ${pageText(c.page, 'the id is live again first')}`,
      });
    }
    if (w.probeVerdicts?.cachedFailing) {
      const cached = w.lastProbes.cached;
      out.push({
        alert: 'HyphaServiceCachedProbeFailing', severity: 'critical', subject: w.service, service: w.service,
        text: `no probe through the cached proxy succeeded within the probe window while one through a fresh proxy did`
          + (cached ? ` (last: ${cached.method} ${cached.outcome} after ${cached.seconds.toFixed(2)} s)` : ''),
      });
    }
  }
  for (const r of s.ray.values()) {
    const p = r.health.up ? r.proxyPages : undefined;
    if (p?.noProxyCanWakeApps) {
      out.push({
        alert: 'HyphaServeNoProxyCanWakeApps', severity: 'critical', subject: r.cluster, rayCluster: r.cluster, text: `deployments idle at zero and ${p.why}`,
      });
    }
    if (p?.allProxiesUnready) {
      out.push({
        alert: 'HyphaServeAllProxiesUnready', severity: 'critical', subject: r.cluster, rayCluster: r.cluster,
        text: `deployments have RUNNING replicas and ${p.why}`,
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
