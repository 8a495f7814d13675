import type { ServeApp, ServeDeployment } from '../snapshot/types';
import { appStatusClass, BIOENGINE_PROXY_DEPLOYMENT, crashedDeployments, FAILED_STATUSES, gatedDeployments, idleDeployments } from '../serve/judgement';
import type { ServiceInfo } from '../snapshot/hypha';
import type { ExpectedService } from './expected';
import {
  AppRegistration, GateKnowledge, isMissing, MissingState, PageDecision, RegistrationHistory, RegistrationState, WorkerReport,
} from '../snapshot/registration';
import { registrationKey } from '../snapshot/handover';
import type { PageWaits } from '../config/hypha-schema';
import { GATE_EVIDENCE_SECONDS, gateKnowledge, idleServiceable } from './gate';

/** One app's evaluation; the stage adds the Hypha server it was judged on. */
export type TrackedRegistration = Omit<AppRegistration, 'hypha'>;

/** Providers of an expected service in the current registry view. */
export interface Match {
  registered: boolean;
  /** Registered only under another client id than the expected one. */
  mismatch: boolean;
  providerClientId?: string;
}

/**
 * The registry view's services by workspace and service id, built once per
 * evaluation: looking each expected app up by scanning the whole list made
 * an evaluation quadratic in the number of apps. Nested maps, not one map on
 * a joined key: a key built per lookup cost more than the lookup itself at
 * thousands of apps. The index is immutable, so the match of each expected
 * service is kept (the stage asks for it twice per evaluation).
 */
export class ProviderIndex {
  readonly #byWorkspace = new Map<string, Map<string, ServiceInfo[]>>();
  readonly #matches = new WeakMap<ExpectedService, Match>();

  constructor(services: Iterable<ServiceInfo>) {
    for (const s of services) {
      let ws = this.#byWorkspace.get(s.workspace);
      if (!ws) {
        ws = new Map();
        this.#byWorkspace.set(s.workspace, ws);
      }
      const list = ws.get(s.serviceId);
      if (list) list.push(s);
      else ws.set(s.serviceId, [s]);
    }
  }

  providers(workspace: string, serviceId: string): readonly ServiceInfo[] {
    return this.#byWorkspace.get(workspace)?.get(serviceId) ?? [];
  }

  /** matchProviders(exp, this), computed once per expected service (ExpectedService objects are not mutated). */
  match(exp: ExpectedService): Match {
    let m = this.#matches.get(exp);
    if (!m) {
      m = matchIn(exp, this.providers(exp.workspace, exp.serviceId));
      this.#matches.set(exp, m);
    }
    return m;
  }
}

export function matchProviders(exp: ExpectedService, index: ProviderIndex): Match {
  return index.match(exp);
}

function matchIn(exp: ExpectedService, same: readonly ServiceInfo[]): Match {
  if (same.length === 0) return { registered: false, mismatch: false };
  const exact = exp.clientId === undefined ? same[0] : same.find((s) => s.clientId === exp.clientId);
  if (exact) return { registered: true, mismatch: false, providerClientId: exact.clientId };
  return { registered: true, mismatch: true, providerClientId: same[0].clientId };
}

/**
 * How long a woken app (it was missing at zero, a sibling has replicas again) keeps that cause while
 * its proxy re-registers: BioEngine registers from check_health, every health_check_period_s = 10 s,
 * so two periods plus the registration call.
 */
export const WAKE_GRACE_SECONDS = 30;

/** What the cause can be told from, besides Serve's view of the app. */
export interface CauseHistory {
  /** The exporter saw the app being deployed (or redeployed). */
  birthObserved: boolean;
  everRegistered: boolean;
  /** The missing spell began at a Hypha reconnect. */
  spellAfterReconnect?: boolean;
}

/**
 * Why an app is not registered, from Serve's view of it and what the exporter saw of its history.
 * Order matters: a failure explains more than anything else; an app Serve has not brought up owes
 * no registration; a spell that began at our own reconnect is explained by nothing in Serve; an app
 * whose birth was seen and that never registered is the cold-start gate even when idle at zero;
 * and without history neither of the two incident-1 paths may be claimed.
 */
export function missingCause(app: ServeApp, h: CauseHistory): RegistrationState {
  return judgeMissing(app, h).state;
}

/** The cause and the deployments behind it (what the status page names). */
export interface MissingVerdict {
  state: RegistrationState;
  deployments: string[];
}

export function judgeMissing(app: ServeApp, h: CauseHistory): MissingVerdict {
  const names = (ds: readonly ServeDeployment[]) => ds.map((d) => d.name);
  const crashed = crashedDeployments(app);
  const appClass = appStatusClass(app.status);
  // A failure explains more than anything else, even while Serve still deploys the app.
  if (appClass === 'failed' || app.deployments.some((d) => FAILED_STATUSES.includes(d.status))) {
    return { state: 'missing_crashed', deployments: names(crashed) };
  }
  if (appClass === 'transient') return { state: 'not_running', deployments: [] };
  if (appClass !== 'ok') return { state: 'missing_other', deployments: [] };
  if (crashed.length > 0) return { state: 'missing_crashed', deployments: names(crashed) };
  if (h.spellAfterReconnect) return { state: 'missing_after_reconnect', deployments: [] };
  if (h.birthObserved && !h.everRegistered) return { state: 'missing_never_registered', deployments: [] };
  if (!h.birthObserved && !h.everRegistered) return { state: 'missing_history_unknown', deployments: [] };
  const idle = idleDeployments(app);
  if (idle.length > 0) return { state: 'missing_scaled_to_zero', deployments: names(idle) };
  return { state: 'missing_other', deployments: [] };
}

/**
 * The missing states an old-gate BioEngine proxy never leaves by itself (aicell-lab/bioengine
 * bioengine/apps/proxy_deployment.py, check_health, from 718f030 up to the gate fix, GATE_FIX_RELEASE
 * in gate.ts): it registers only once every sibling deployment has a RUNNING replica and deregisters
 * when one that had replicas drops to zero. A deployment idle at zero by design (target 0) gets a
 * replica only from a call, and the call would come through the service that is missing (BioEngine
 * apps have no HTTP entry). Deregistered at zero (1a) and deployed cold and never registered (1b) are
 * therefore final until someone acts, unless a replica is already being started (target above 0: the
 * look-alike of a deploy whose replicas start within the registration cycle, or an app being woken).
 * Only for an app known to run that gate: the fixed gate registers such an app by itself, and an
 * unknown one may be either.
 */
export function stuckAtZero(app: ServeApp, state: RegistrationState, gate: GateKnowledge | undefined): boolean {
  if (gate?.gate !== 'deregisters_at_zero') return false;
  if (state !== 'missing_scaled_to_zero' && state !== 'missing_never_registered') return false;
  if (!app.deployments.some((d) => d.name === BIOENGINE_PROXY_DEPLOYMENT)) return false;
  return gatedDeployments(app).some((d) => d.scaledToZero);
}

/** Today's waits (the defaults of hypha_registration.page_waits). */
export const DEFAULT_PAGE_WAITS: PageWaits = {
  provenMs: 0,
  workerMs: 300_000,
  byStateMs: {
    missing_scaled_to_zero: 300_000, missing_never_registered: 300_000, missing_crashed: 300_000,
    missing_after_reconnect: 300_000, missing_history_unknown: 300_000, missing_other: 300_000,
  },
};

/**
 * The page of one app, decided on its history: it fires once the app has been RUNNING and missing
 * for its cause's wait (the proven wait once the cause was proven final in this spell) and then
 * holds until the spell ends (registered, or no longer RUNNING), whatever the cause becomes, so a
 * cause that moves while the condition holds neither restarts nor ends it.
 */
export function decidePage(
  h: RegistrationHistory, runningMissing: boolean, state: RegistrationState, proven: boolean, spellStart: number, nowSeconds: number, waits: PageWaits,
): PageDecision {
  if (!runningMissing || !isMissing(state)) {
    h.pageSpellSeconds = undefined;
    h.provenInSpell = undefined;
    h.pagedSeconds = undefined;
    return { firing: false };
  }
  h.pageSpellSeconds ??= spellStart;
  if (proven) h.provenInSpell = true;
  const waitMs = h.provenInSpell ? waits.provenMs : waits.byStateMs[state as MissingState];
  const due = h.pageSpellSeconds + waitMs / 1000;
  if (h.pagedSeconds === undefined && nowSeconds >= due) h.pagedSeconds = nowSeconds;
  return { firing: h.pagedSeconds !== undefined, sinceSeconds: h.pageSpellSeconds, dueSeconds: h.pagedSeconds ?? due };
}

/**
 * How long a worker's last claim stands while no worker tied to the cluster answers about the app
 * (a restarting worker comes back under a new client id and is asked at its next cross-check): a
 * restart is a gap, not an end. As long as the rules' gap bridge.
 */
export const WORKER_CLAIM_BRIDGE_SECONDS = 300;

/**
 * The worker page: the registry has no service for the app (known) while a worker tied to its
 * cluster says it is RUNNING; it fires once that has held for the worker wait and holds while it does.
 */
function decideWorkerPage(h: RegistrationHistory, missing: boolean, report: WorkerReport | undefined, nowSeconds: number, waitMs: number): PageDecision {
  if (report && report.claiming.length > 0) h.workerClaimSeconds = nowSeconds;
  else if (report?.answered) h.workerClaimSeconds = undefined;
  const claimed = h.workerClaimSeconds !== undefined && nowSeconds - h.workerClaimSeconds <= WORKER_CLAIM_BRIDGE_SECONDS;
  if (!missing || !claimed) {
    if (!claimed) h.workerClaimSeconds = undefined;
    h.workerSpellSeconds = undefined;
    h.workerPagedSeconds = undefined;
    return { firing: false };
  }
  h.workerSpellSeconds ??= nowSeconds;
  const due = h.workerSpellSeconds + waitMs / 1000;
  if (h.workerPagedSeconds === undefined && nowSeconds >= due) h.workerPagedSeconds = nowSeconds;
  return { firing: h.workerPagedSeconds !== undefined, sinceSeconds: h.workerSpellSeconds, dueSeconds: h.workerPagedSeconds ?? due };
}

/**
 * What the app's behaviour tells of its gate. Registered while a gated deployment has idled at zero
 * longer than the old gate takes to deregister: the fixed gate. Lost as a gated deployment reached
 * zero (missing_scaled_to_zero, within that time of the zero): the old gate. A redeploy starts a new
 * history, so evidence never outlives the proxy code it was seen on.
 */
function observeGate(
  h: RegistrationHistory, app: ServeApp, registered: boolean, lostAt: number | undefined, state: RegistrationState, nowSeconds: number,
): void {
  if (idleServiceable(app)) h.zeroSinceSeconds ??= nowSeconds;
  else h.zeroSinceSeconds = undefined;
  const zero = h.zeroSinceSeconds;
  if (zero === undefined) return;
  if (registered && nowSeconds - zero >= GATE_EVIDENCE_SECONDS) {
    if (h.gateEvidence?.gate !== 'serviceable_at_zero') h.gateEvidence = { gate: 'serviceable_at_zero', seenSeconds: nowSeconds };
  } else if (lostAt !== undefined && state === 'missing_scaled_to_zero' && Math.abs(lostAt - zero) <= GATE_EVIDENCE_SECONDS) {
    if (h.gateEvidence?.gate !== 'deregisters_at_zero') h.gateEvidence = { gate: 'deregisters_at_zero', seenSeconds: nowSeconds };
  }
}

/** A registered BioEngine app on the old gate with a gated deployment allowed to idle at zero: it will be deregistered when that happens. */
function deregistersAtZero(app: ServeApp, registered: boolean, gate: GateKnowledge | undefined): boolean {
  return registered && gate?.gate === 'deregisters_at_zero' && gatedDeployments(app).some((d) => d.autoscaling && d.minReplicas === 0);
}

type History = RegistrationHistory;

export interface TrackerInput {
  nowSeconds: number;
  /** When the exporter started (apps deployed later had their birth observed). */
  startedSeconds: number;
  /** When the current Hypha connection's first registry listing completed. */
  connectedSeconds: number;
  /** True when this listing follows a reconnect (not the exporter's first connection). */
  afterReconnect: boolean;
  settleMs: number;
  /**
   * When the registry change being evaluated was first seen, if evaluation
   * waited for Serve's view to catch up: a missing spell starts then.
   */
  changeSeenSeconds?: number;
  /** The page's wait per cause; default DEFAULT_PAGE_WAITS. */
  pageWaits?: PageWaits;
  /** A BioEngine worker's reported version by its client id (undefined: not reported or not seen). */
  workerVersion?: (clientId: string) => string | undefined;
  /** What the workers tied to this cluster say about an app (undefined: none is tied to it). */
  workerReport?: (app: string) => WorkerReport | undefined;
}

/** Within reconnect_settle after a reconnect: a provider that was registered before may still be re-registering. */
export function settlingAfterReconnect(input: TrackerInput): boolean {
  return input.afterReconnect && (input.nowSeconds - input.connectedSeconds) * 1000 < input.settleMs;
}

/**
 * Keeps per-app history (ever registered, missing since, client-id changes)
 * across evaluations; each evaluation is a pure function of Serve's apps, the
 * registry view and that history.
 */
export class RegistrationTracker {
  readonly #history = new Map<string, History>();

  /** Evaluates one cluster's expected apps; history of apps no longer expected there is dropped. */
  evaluateCluster(
    cluster: string,
    apps: readonly ServeApp[],
    expected: ReadonlyMap<string, ExpectedService>,
    providers: ProviderIndex,
    input: TrackerInput,
  ): TrackedRegistration[] {
    const out: TrackedRegistration[] = [];
    const seen = new Set<string>();
    for (const app of apps) {
      const exp = expected.get(app.name);
      if (!exp) continue;
      const key = registrationKey(cluster, app.name);
      seen.add(key);
      let h = this.#history.get(key);
      if (!h || (h.deployedSeconds !== undefined && app.lastDeployedSeconds !== undefined && app.lastDeployedSeconds !== h.deployedSeconds)) {
        const redeploy = h !== undefined;
        const bornLater = app.lastDeployedSeconds !== undefined && app.lastDeployedSeconds >= input.startedSeconds;
        h = {
          deployedSeconds: app.lastDeployedSeconds,
          birthObserved: redeploy || bornLater || app.status === 'DEPLOYING' || app.status === 'NOT_STARTED',
          everRegistered: false,
          clientIdChanges: h?.clientIdChanges ?? 0,
          providerClientId: h?.providerClientId,
          registered: h?.registered,
          lastEvaluatedSeconds: h?.lastEvaluatedSeconds,
          workerClientId: h?.workerClientId,
          workerVersion: h?.workerVersion,
        };
        this.#history.set(key, h);
      }
      if (exp.workerClientId !== undefined && exp.workerClientId !== h.workerClientId) {
        h.workerClientId = exp.workerClientId;
        h.workerVersion = undefined;
      }
      if (exp.mapping === 'bioengine' && h.workerClientId !== undefined) h.workerVersion = input.workerVersion?.(h.workerClientId) ?? h.workerVersion;
      const wasRegistered = h.registered === true;
      const previousState = h.lastState;
      const m = matchProviders(exp, providers);
      let settled = true;
      let state: RegistrationState;
      let causeDeployments: string[] = [];
      if (m.registered) {
        if (h.providerClientId !== undefined && m.providerClientId !== undefined && h.providerClientId !== m.providerClientId) h.clientIdChanges++;
        h.providerClientId = m.providerClientId;
        h.everRegistered = true;
        h.registered = true;
        h.missingSinceSeconds = undefined;
        h.spellAfterReconnect = undefined;
        h.wokeSeconds = undefined;
        state = 'registered';
      } else if (h.registered === true && settlingAfterReconnect(input)) {
        // Registered before the outage; its provider may still be reconnecting.
        settled = false;
        state = h.lastState ?? 'registered';
      } else {
        // Last seen registered before the reconnect: it has been missing at
        // least since we could look again, not only since the settle ended.
        const seenBeforeReconnect = input.afterReconnect && h.registered === true
          && h.lastEvaluatedSeconds !== undefined && h.lastEvaluatedSeconds < input.connectedSeconds;
        if (h.missingSinceSeconds === undefined && seenBeforeReconnect) h.spellAfterReconnect = true;
        const verdict = judgeMissing(app, h);
        state = this.#wakeGrace(h, verdict.state, input.nowSeconds);
        if (state === verdict.state) causeDeployments = verdict.deployments;
        if (!isMissing(state)) {
          // Serve has not brought the app up: no registration is due, the spell (if any) ends.
          h.missingSinceSeconds = undefined;
          h.spellAfterReconnect = undefined;
        } else if (h.missingSinceSeconds === undefined) {
          h.missingSinceSeconds = seenBeforeReconnect ? input.connectedSeconds : (input.changeSeenSeconds ?? input.nowSeconds);
        }
        h.registered = false;
      }
      let gate: GateKnowledge | undefined;
      if (exp.mapping === 'bioengine') {
        const lostAt = settled && wasRegistered && !m.registered ? h.missingSinceSeconds : undefined;
        if (settled) observeGate(h, app, m.registered, lostAt, state, input.nowSeconds);
        const evidence = h.gateEvidence && { gate: h.gateEvidence.gate, source: 'evidence' as const, seenSeconds: h.gateEvidence.seenSeconds };
        gate = gateKnowledge(evidence && { ...evidence, version: h.workerVersion, worker: h.workerClientId }, h.workerVersion, h.workerClientId);
      }
      const stuck = stuckAtZero(app, state, gate);
      let page: PageDecision = { firing: false };
      let workerPage: PageDecision = { firing: false };
      const report = input.workerReport?.(app.name);
      if (settled) {
        // The spell began now (the loss's seen time, when a hold waited for Serve), or the app became RUNNING while missing.
        const spellStart = previousState !== undefined && isMissing(previousState) ? input.nowSeconds : (h.missingSinceSeconds ?? input.nowSeconds);
        const waits = input.pageWaits ?? DEFAULT_PAGE_WAITS;
        page = decidePage(h, app.status === 'RUNNING', state, stuck, spellStart, input.nowSeconds, waits);
        workerPage = decideWorkerPage(h, isMissing(state), report, input.nowSeconds, waits.workerMs);
        // The worker's view of the same app adds nothing while the app's own page fires: one page per app (its spell
        // goes on, so it pages at once should the app page end while a worker still says RUNNING).
        if (page.firing && workerPage.firing) workerPage = { ...workerPage, firing: false, coveredByAppPage: true };
        h.lastEvaluatedSeconds = input.nowSeconds;
        h.lastState = state;
      }
      out.push({
        cluster,
        app: app.name,
        workspace: exp.workspace,
        service: exp.label,
        registered: m.registered,
        state,
        unregisteredSinceSeconds: m.registered || !settled ? undefined : h.missingSinceSeconds,
        clientIdMismatch: m.mismatch,
        clientIdChangesTotal: h.clientIdChanges,
        providerClientId: m.providerClientId,
        settled,
        stuck,
        causeDeployments,
        gate,
        page,
        deregistersAtZero: deregistersAtZero(app, m.registered, gate),
        workerPage,
        claimingWorkers: report?.claiming ?? [],
      });
    }
    for (const key of [...this.#history.keys()]) {
      if (key.startsWith(registrationKey(cluster, '')) && !seen.has(key)) this.#history.delete(key);
    }
    return out;
  }

  /**
   * A woken app's siblings have replicas again before its proxy re-registers: for that short while
   * the cause it was missing for still explains it better than "other".
   */
  #wakeGrace(h: History, state: RegistrationState, nowSeconds: number): RegistrationState {
    if (state !== 'missing_other' || h.lastState !== 'missing_scaled_to_zero') {
      h.wokeSeconds = undefined;
      return state;
    }
    h.wokeSeconds ??= nowSeconds;
    return nowSeconds - h.wokeSeconds < WAKE_GRACE_SECONDS ? 'missing_scaled_to_zero' : state;
  }

  /** Takes the histories of the restart handover (saved before an exporter restart, --storage.path), for apps not seen yet. */
  takeHandover(histories: ReadonlyMap<string, RegistrationHistory>): void {
    for (const [key, h] of histories) if (!this.#history.has(key)) this.#history.set(key, { ...h });
  }

  /** Every app's history (copies), for the state file (--storage.path); takeHandover() takes them back. */
  histories(): { cluster: string; app: string; history: RegistrationHistory }[] {
    return [...this.#history].map(([key, h]) => {
      const [cluster, app] = key.split('\u0000');
      return { cluster, app, history: { ...h } };
    });
  }

  /** The worker client id this app's expected service was last derived from. */
  lastWorkerClientId(cluster: string, app: string): string | undefined {
    return this.#history.get(registrationKey(cluster, app))?.workerClientId;
  }

  /** Forget a cluster entirely (removed from the config). */
  dropCluster(cluster: string): void {
    for (const key of [...this.#history.keys()]) if (key.startsWith(registrationKey(cluster, ''))) this.#history.delete(key);
  }
}
