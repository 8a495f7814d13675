import type { ServeApp, ServeDeployment } from '../snapshot/types';
import { Severity, SEVERITY_ORDER } from './model';

// What counts as a problem, in one place, so the page, the JSON and the
// transition log agree on colours.

const APP_CRITICAL = new Set(['DEPLOY_FAILED', 'UNHEALTHY']);
const APP_TRANSIENT = new Set(['DEPLOYING', 'NOT_STARTED', 'DELETING']);
const DEPLOYMENT_CRITICAL = new Set(['UNHEALTHY', 'DEPLOY_FAILED']);
const DEPLOYMENT_OK = new Set(['HEALTHY', 'UPSCALING', 'DOWNSCALING']);

export function worst(a: Severity, b: Severity): Severity {
  return SEVERITY_ORDER.indexOf(a) <= SEVERITY_ORDER.indexOf(b) ? a : b;
}

export function severityRank(s: Severity): number {
  return SEVERITY_ORDER.indexOf(s);
}

export function appStatusSeverity(status: string): Severity {
  if (status === 'RUNNING') return 'ok';
  if (APP_CRITICAL.has(status)) return 'critical';
  if (APP_TRANSIENT.has(status)) return 'warning';
  return 'unknown';
}

export function registrationSeverity(state: string, mismatch = false): Severity {
  if (state === 'registered') return mismatch ? 'warning' : 'ok';
  if (state.startsWith('missing')) return 'critical';
  if (state === 'not_running') return 'warning';
  return 'unknown';
}

/** Severity of one app from Serve's view alone, with the reasons. */
export function serveAppProblems(app: ServeApp): { severity: Severity; problems: string[] } {
  let severity = appStatusSeverity(app.status);
  const problems: string[] = [];
  if (severity !== 'ok') problems.push(`Serve status ${app.status}`);
  for (const d of app.deployments) {
    const s = deploymentSeverity(d);
    if (s === 'ok') continue;
    // A deployment problem inside an app that Serve already flags adds detail, not another level.
    severity = worst(severity, s);
    problems.push(`deployment ${d.name} ${d.status}${d.statusTrigger ? ` (${d.statusTrigger})` : ''}`);
  }
  return { severity, problems };
}

function deploymentSeverity(d: ServeDeployment): Severity {
  if (DEPLOYMENT_OK.has(d.status)) return 'ok';
  if (DEPLOYMENT_CRITICAL.has(d.status)) return 'critical';
  if (d.status === 'UPDATING') return 'warning';
  return 'unknown';
}
