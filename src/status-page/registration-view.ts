import { registrationKnown, type ServeApp, type Snapshot } from '../snapshot/types';
import type { GateKnowledge, PageDecision } from '../snapshot/registration';
import { FIRST_RELEASE_WITH_FIXES } from '../util/bioengine-release';
import type { BioEngineGateV1, PageV1, ProblemV1, RegistrationV1, Severity, WorkerV1, WorkerViewV1 } from './model';
import { registrationSeverity, worst } from './severity';
import { isoSeconds } from '../util/iso-seconds';

/** One expected app's registration, in the status page's own terms (adapted from the snapshot). */
export interface AppRegistrationInput {
  cluster: string;
  app: string;
  /** The Hypha server the app is expected on. */
  hypha: string;
  expectedServiceId: string;
  /** registered, missing_*, or unknown while the Ray or Hypha source is down. */
  state: string;
  /** The check's own explanation, when it gives one. */
  cause?: string;
  missingSinceSeconds?: number;
  clientId?: string;
  clientIdMismatch?: boolean;
  /** The deployments the verdict rests on (the tracker's, so the page names exactly those). */
  causeDeployments?: string[];
  worker?: { worker: string; up: boolean; appStatus?: string; serviceRegistered?: boolean };
  gate?: GateKnowledge;
  page?: PageDecision;
  /** The exporter's decision on HyphaServeAppWillDeregisterAtZero. */
  deregistersAtZero?: boolean;
}

export interface RegistrationInput {
  apps: AppRegistrationInput[];
  workers: { worker: string; up: boolean; error?: string }[];
}

/** The snapshot's registration part in the page's terms; undefined while the exporter has no such part. */
export function registrationInput(s: Snapshot): RegistrationInput | undefined {
  const r = s.registration;
  if (!r) return undefined;
  const apps = r.apps.map((a): AppRegistrationInput => {
    // Withheld right after a reconnect, and meaningless while the Hypha or Ray source is down: unknown, not missing.
    const known = registrationKnown(s, a);
    const out: AppRegistrationInput = {
      cluster: a.cluster, app: a.app, hypha: a.hypha, expectedServiceId: a.service, state: known ? a.state : 'unknown',
    };
    if (s.hypha?.get(a.hypha)?.health.up !== true) out.cause = 'unknown while the Hypha source is down';
    else if (s.ray.get(a.cluster)?.health.up !== true) out.cause = 'unknown while the Ray source is down';
    else if (!a.settled) out.cause = 'unknown: Hypha reconnected and providers are still re-registering';
    if (known && a.unregisteredSinceSeconds !== undefined) out.missingSinceSeconds = a.unregisteredSinceSeconds;
    if (a.providerClientId !== undefined) out.clientId = a.providerClientId;
    if (known) out.clientIdMismatch = a.clientIdMismatch;
    if (known && a.causeDeployments) out.causeDeployments = a.causeDeployments;
    if (a.gate) out.gate = a.gate;
    if (known && a.page?.sinceSeconds !== undefined) out.page = a.page;
    if (known) out.deregistersAtZero = a.deregistersAtZero === true;
    // Only a worker tied to this app's cluster speaks for it: another cluster may run an app of the same name.
    const w = r.workers.find((x) => x.hypha === a.hypha && x.rayCluster === a.cluster && x.apps.some((y) => y.app === a.app));
    const wa = w?.apps.find((y) => y.app === a.app);
    if (w && wa) {
      out.worker = { worker: w.worker, up: w.up, appStatus: wa.status };
      if (wa.serviceRegistered !== undefined) out.worker.serviceRegistered = wa.serviceRegistered;
    }
    return out;
  });
  return { apps, workers: r.workers.map((w) => ({ worker: w.worker, up: w.up, ...(w.error ? { error: w.error } : {}) })) };
}

const CAUSES: Record<string, string> = {
  registered: 'registered in Hypha',
  missing_scaled_to_zero: 'not in Hypha while every deployment is idle at zero replicas: deregistered for being scaled to zero',
  missing_never_registered: 'never registered since it was first seen, although Serve runs it',
  missing_crashed: 'not in Hypha and a deployment is crashed (UNHEALTHY, DEPLOY_FAILED, or no replica while not serviceable)',
  missing_after_reconnect: 'registered before the exporter lost Hypha, and not back since it reconnected (past reconnect_settle): '
    + 'the provider did not re-register',
  missing_history_unknown: 'not in Hypha since the exporter started; whether it was ever registered (deregistered or never registered) is unknown',
  missing_other: 'not in Hypha, and Serve shows no reason for it',
  not_running: 'not registered while Serve has not brought the app up (NOT_STARTED, DEPLOYING, DELETING): none is due yet',
  unknown: 'unknown while the Ray or the Hypha source is down',
};

/** A person's explanation of a registration state (the check's own text wins when it has one). */
export function registrationCause(state: string, own?: string): string {
  return own ?? CAUSES[state] ?? state;
}

/** The Hypha registration part of the status, read from the snapshot when it has one. */
export interface RegistrationView {
  enabled: boolean;
  workers: WorkerV1[];
  /** Problems not tied to one app (a worker down). */
  problems: ProblemV1[];
  forApp(cluster: string, app: ServeApp): { registration?: RegistrationV1; workerView?: WorkerViewV1; severity: Severity; problems: string[] };
}

export function registrationView(s: Snapshot): RegistrationView {
  const input = registrationInput(s);
  if (!input) return { enabled: false, workers: [], problems: [], forApp: () => ({ severity: 'ok', problems: [] }) };
  const byApp = new Map(input.apps.map((a) => [`${a.cluster}\u0000${a.app}`, a]));
  const problems: ProblemV1[] = input.workers
    .filter((w) => !w.up)
    .map((w) => ({
      severity: 'warning' as Severity, kind: 'worker' as const, subject: w.worker, text: `worker not answering${w.error ? `: ${w.error}` : ''}`,
    }));
  return {
    enabled: true,
    workers: input.workers.map((w) => ({ worker: w.worker, up: w.up })),
    problems,
    forApp(cluster, app) {
      const r = byApp.get(`${cluster}\u0000${app.name}`);
      if (!r) return { severity: 'ok', problems: [] };
      const registration: RegistrationV1 = {
        hypha: r.hypha, expected_service_id: r.expectedServiceId, state: r.state,
        cause: registrationCause(r.state, r.cause) + serveDetail(r.state, app, r.causeDeployments ?? []),
      };
      if (r.missingSinceSeconds !== undefined) registration.missing_since = r.missingSinceSeconds;
      if (r.clientId !== undefined) registration.client_id = r.clientId;
      if (r.clientIdMismatch !== undefined) registration.client_id_mismatch = r.clientIdMismatch;
      if (r.gate) registration.bioengine_gate = gateV1(r.gate);
      if (r.page) registration.page = pageV1(r.page);
      let severity = registrationSeverity(r.state, r.clientIdMismatch === true);
      const out: string[] = [];
      if (r.state !== 'registered' && r.state !== 'unknown') out.push(`registration ${r.state}: ${registration.cause}`);
      if (r.state === 'registered' && r.clientIdMismatch) out.push(`registered under another client id (${r.clientId ?? '?'})`);
      const due = r.page?.dueSeconds !== undefined ? isoSeconds(r.page.dueSeconds) : undefined;
      if (r.page?.firing) out.push(`HyphaServeAppRunningNotRegistered fires${due !== undefined ? ` since ${due}` : ''}`);
      else if (due !== undefined) out.push(`HyphaServeAppRunningNotRegistered fires at ${due} unless it registers first`);
      if (r.deregistersAtZero) {
        // The warning HyphaServeAppWillDeregisterAtZero, on the page: before the incident, not during it.
        const vanishing = app.deployments.filter((d) => d.autoscaling && d.minReplicas === 0).map((d) => d.name);
        severity = worst(severity, 'warning');
        out.push(`will be deregistered when ${vanishing.join(', ')} idle${vanishing.length === 1 ? 's' : ''} to zero replicas `
          + `(its proxy runs BioEngine ${r.gate?.version ?? 'up to 0.16.2'}, which deregisters at zero): upgrade the worker to BioEngine `
          + `${FIRST_RELEASE_WITH_FIXES} or later and redeploy; until then min_replicas >= 1`);
      }
      let workerView: WorkerViewV1 | undefined;
      if (r.worker) {
        workerView = { worker: r.worker.worker, worker_up: r.worker.up };
        if (r.worker.appStatus !== undefined) workerView.app_status = r.worker.appStatus;
        if (r.worker.serviceRegistered !== undefined) workerView.service_registered = r.worker.serviceRegistered;
      }
      // Unknown registration (a source down) is shown, but the source problem already says why.
      return { registration, workerView, severity: r.state === 'unknown' ? 'ok' : severity, problems: out };
    },
  };
}

function gateV1(g: GateKnowledge): BioEngineGateV1 {
  return {
    gate: g.gate, source: g.source, ...(g.version !== undefined ? { version: g.version } : {}), ...(g.worker !== undefined ? { worker: g.worker } : {}),
  };
}

function pageV1(p: PageDecision): PageV1 {
  return { firing: p.firing, ...(p.sinceSeconds !== undefined ? { since: p.sinceSeconds } : {}), ...(p.dueSeconds !== undefined ? { due: p.dueSeconds } : {}) };
}

/** The deployments the tracker's verdict rests on, with their status from Serve's view of the app. */
function serveDetail(state: string, app: ServeApp, names: readonly string[]): string {
  const deps = names.map((n) => app.deployments.find((d) => d.name === n)).filter((d) => d !== undefined);
  if (deps.length === 0) return '';
  if (state === 'missing_scaled_to_zero') return ` (at zero: ${deps.map((d) => d.name).join(', ')})`;
  if (state === 'missing_crashed') return ` (${deps.map((d) => `${d.name} ${d.status}`).join(', ')})`;
  return '';
}
