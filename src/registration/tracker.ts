import { SERVICEABLE_DEPLOYMENT_STATUSES, ServeApp, ServeDeployment } from '../snapshot/types';
import type { ServiceInfo } from '../sources/hypha/types';
import { BIOENGINE_PROXY_DEPLOYMENT, ExpectedService } from './expected';
import type { AppRegistration, RegistrationState } from './types';

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
 * an evaluation quadratic in the number of apps.
 */
export class ProviderIndex {
  readonly #byService = new Map<string, ServiceInfo[]>();

  constructor(services: Iterable<ServiceInfo>) {
    for (const s of services) {
      const key = `${s.workspace}\u0000${s.serviceId}`;
      const list = this.#byService.get(key);
      if (list) list.push(s);
      else this.#byService.set(key, [s]);
    }
  }

  providers(workspace: string, serviceId: string): readonly ServiceInfo[] {
    return this.#byService.get(`${workspace}\u0000${serviceId}`) ?? [];
  }
}

export function matchProviders(exp: ExpectedService, index: ProviderIndex): Match {
  const same = index.providers(exp.workspace, exp.serviceId);
  if (same.length === 0) return { registered: false, mismatch: false };
  const exact = exp.clientId === undefined ? same[0] : same.find((s) => s.clientId === exp.clientId);
  if (exact) return { registered: true, mismatch: false, providerClientId: exact.clientId };
  return { registered: true, mismatch: true, providerClientId: same[0].clientId };
}

const FAILED = ['UNHEALTHY', 'DEPLOY_FAILED'];

function running(d: ServeDeployment): number {
  return d.replicas.RUNNING ?? 0;
}

function serviceable(d: ServeDeployment): boolean {
  return running(d) > 0 || SERVICEABLE_DEPLOYMENT_STATUSES.includes(d.status);
}

/**
 * Why an app is not registered, from Serve's view of it (and whether it was
 * ever registered since the exporter saw it being deployed).
 * Order matters: a failure explains more than idleness does, and an app whose
 * birth was seen and that never registered is the cold-start gate even when it
 * is idle at zero (seed 000, second path).
 */
export function missingCause(app: ServeApp, birthObserved: boolean, everRegistered: boolean): RegistrationState {
  // The proxy serves BioEngine's registration; the other deployments are what it gates on.
  const siblings = app.deployments.filter((d) => d.name !== BIOENGINE_PROXY_DEPLOYMENT);
  if (FAILED.includes(app.status) || app.deployments.some((d) => FAILED.includes(d.status))) return 'missing_crashed';
  if (app.status !== 'RUNNING') return 'missing_other';
  if (siblings.some((d) => !serviceable(d))) return 'missing_crashed';
  if (birthObserved && !everRegistered) return 'missing_never_registered';
  if (siblings.length > 0 && siblings.some((d) => running(d) === 0)) return 'missing_scaled_to_zero';
  return 'missing_other';
}

interface History {
  /** lastDeployedSeconds when first seen; a change is a redeploy. */
  deployedSeconds?: number;
  birthObserved: boolean;
  everRegistered: boolean;
  registered?: boolean;
  missingSinceSeconds?: number;
  providerClientId?: string;
  clientIdChanges: number;
  lastEvaluatedSeconds?: number;
}

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
  ): AppRegistration[] {
    const out: AppRegistration[] = [];
    const seen = new Set<string>();
    for (const app of apps) {
      const exp = expected.get(app.name);
      if (!exp) continue;
      const key = `${cluster}\u0000${app.name}`;
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
        };
        this.#history.set(key, h);
      }
      const m = matchProviders(exp, providers);
      let settled = true;
      if (m.registered) {
        if (h.providerClientId !== undefined && m.providerClientId !== undefined && h.providerClientId !== m.providerClientId) h.clientIdChanges++;
        h.providerClientId = m.providerClientId;
        h.everRegistered = true;
        h.registered = true;
        h.missingSinceSeconds = undefined;
      } else if (h.registered === true && settlingAfterReconnect(input)) {
        // Registered before the outage; its provider may still be reconnecting.
        settled = false;
      } else {
        if (h.missingSinceSeconds === undefined) {
          // Last seen registered before the reconnect: it has been missing at
          // least since we could look again, not only since the settle ended.
          const seenBeforeReconnect = h.registered === true && h.lastEvaluatedSeconds !== undefined && h.lastEvaluatedSeconds < input.connectedSeconds;
          h.missingSinceSeconds = seenBeforeReconnect ? input.connectedSeconds : (input.changeSeenSeconds ?? input.nowSeconds);
        }
        h.registered = false;
      }
      if (settled) h.lastEvaluatedSeconds = input.nowSeconds;
      out.push({
        cluster,
        app: app.name,
        workspace: exp.workspace,
        service: exp.label,
        registered: m.registered,
        state: m.registered ? 'registered' : missingCause(app, h.birthObserved, h.everRegistered),
        unregisteredSinceSeconds: m.registered || !settled ? undefined : h.missingSinceSeconds,
        clientIdMismatch: m.mismatch,
        clientIdChangesTotal: h.clientIdChanges,
        providerClientId: m.providerClientId,
        settled,
      });
    }
    for (const key of [...this.#history.keys()]) {
      if (key.startsWith(`${cluster}\u0000`) && !seen.has(key)) this.#history.delete(key);
    }
    return out;
  }

  /** Forget a cluster entirely (removed from the config). */
  dropCluster(cluster: string): void {
    for (const key of [...this.#history.keys()]) if (key.startsWith(`${cluster}\u0000`)) this.#history.delete(key);
  }
}
