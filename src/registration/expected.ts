import crypto from 'node:crypto';
import type { ClusterMapping, TemplateMapping } from '../config/hypha-schema';
import type { ServeApp } from '../snapshot/types';
import { parseServiceId } from '../util/hypha-id';
import type { WorkerSample } from '../snapshot/registration';

/** The service a Serve app is expected to have in Hypha. */
export interface ExpectedService {
  cluster: string;
  app: string;
  mapping: 'bioengine' | 'template';
  workspace: string;
  /** undefined = any client (unknown BioEngine worker, or "*" in a template). */
  clientId?: string;
  serviceId: string;
  /** Label value: "ws/client:svc", client "*" when any. */
  label: string;
  /** BioEngine: the worker client id the proxy's client id was derived from. */
  workerClientId?: string;
}

import { BIOENGINE_PROXY_DEPLOYMENT } from '../serve/judgement';

/** BioEngine's proxy client id: `{workerClientId}-{sha1(app)[:8]}` (the ProxyDeployment registers under it). */
export function bioengineProxyClientId(workerClientId: string, app: string): string {
  return `${workerClientId}-${crypto.createHash('sha1').update(app, 'utf8').digest('hex').slice(0, 8)}`;
}

export function isBioEngineApp(app: ServeApp): boolean {
  return app.deployments.some((d) => d.name === BIOENGINE_PROXY_DEPLOYMENT);
}

/** What is known about BioEngine workers in one workspace. */
export interface WorkerDirectory {
  /** Client ids of bioengine-worker services registered in the workspace. */
  registeredWorkers(workspace: string): readonly string[];
  /** Workers' own reports (get_app_status). */
  samples: readonly WorkerSample[];
}

/**
 * The worker client id an app's proxy registers under: configured, else what
 * a worker reports for the app (deployed_by_worker_client_id wins: a recovered
 * app keeps the previous worker's id), else the id this app was last derived
 * from, else the worker that reports the app, else the only worker registered
 * in the workspace. The last known id ranks above the guesses: while a worker
 * restarts (new random client id, cross-check not yet answered) or its
 * get_status fails now and then, guessing would move the expected id
 * old → * → new → old and restart every pending page.
 */
export function workerClientIdFor(
  app: string, workspace: string, configured: string | undefined, dir: WorkerDirectory, lastKnown?: string,
): string | undefined {
  if (configured) return configured;
  const reporting = dir.samples.filter((w) => w.workspace === workspace && w.up);
  for (const w of reporting) {
    const a = w.apps.find((x) => x.app === app);
    if (a?.deployedByWorkerClientId) return a.deployedByWorkerClientId;
  }
  if (lastKnown) return lastKnown;
  const owner = reporting.find((w) => w.apps.some((x) => x.app === app));
  if (owner) return owner.clientId;
  const registered = dir.registeredWorkers(workspace);
  return registered.length === 1 ? registered[0] : undefined;
}

function render(template: string, vars: { workspace: string; app: string; cluster: string }): string {
  return template.replace(/\{(workspace|app|cluster)\}/g, (_m, k: 'workspace' | 'app' | 'cluster') => vars[k]);
}

function templateFor(app: string, templates: readonly TemplateMapping[]): TemplateMapping | undefined {
  return templates.find((t) => (t.include ? t.include.test(app) : true) && !(t.exclude && t.exclude.test(app)));
}

/** The expected service of one app, or undefined when no mapping covers it. */
export function expectedService(
  cluster: string,
  app: ServeApp,
  mapping: ClusterMapping,
  connectionWorkspace: string,
  dir: WorkerDirectory,
  lastWorkerClientId?: string,
): ExpectedService | undefined {
  if (mapping.bioengine.enabled && isBioEngineApp(app)) {
    const workspace = mapping.bioengine.workspace ?? connectionWorkspace;
    const worker = workerClientIdFor(app.name, workspace, mapping.bioengine.workerClientId, dir, lastWorkerClientId);
    const clientId = worker !== undefined ? bioengineProxyClientId(worker, app.name) : undefined;
    return {
      cluster, app: app.name, mapping: 'bioengine', workspace, clientId, serviceId: app.name, label: `${workspace}/${clientId ?? '*'}:${app.name}`,
      workerClientId: worker,
    };
  }
  const t = templateFor(app.name, mapping.templates);
  if (!t) return undefined;
  const text = render(t.service, { workspace: t.workspace ?? connectionWorkspace, app: app.name, cluster });
  const id = parseServiceId(text);
  // The schema admits only templates of this shape; an app name that breaks it (a ":" in {app}) maps to nothing.
  if (!id) return undefined;
  return {
    cluster, app: app.name, mapping: 'template', workspace: id.workspace, clientId: id.clientId === '*' ? undefined : id.clientId,
    serviceId: id.serviceId, label: text,
  };
}
