import type { ServeApp, ServeDeployment } from '../snapshot/types';
import { Severity, SEVERITY_ORDER } from './model';
import { appStatusClass, deploymentStatusClass, StatusClass } from '../serve/judgement';

// What counts as a problem, in one place, so the page, the JSON and the
// transition log agree on colours.

const SEVERITY_OF_CLASS: Record<StatusClass, Severity> = { ok: 'ok', transient: 'warning', failed: 'critical', unknown: 'unknown' };

export function worst(a: Severity, b: Severity): Severity {
  return SEVERITY_ORDER.indexOf(a) <= SEVERITY_ORDER.indexOf(b) ? a : b;
}

export function severityRank(s: Severity): number {
  return SEVERITY_ORDER.indexOf(s);
}

export function appStatusSeverity(status: string): Severity {
  return SEVERITY_OF_CLASS[appStatusClass(status)];
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
  return SEVERITY_OF_CLASS[deploymentStatusClass(d.status)];
}
