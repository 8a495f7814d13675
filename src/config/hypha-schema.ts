import { z } from 'zod';
import { MISSING_STATES, MissingState } from '../snapshot/registration';
import { duration, durationMs, durationOrZero } from './validators';

// Config fragment `hypha_registration:`: which Hypha service every Ray Serve app
// is expected to have, on which `hypha:` server, and how the registries are
// sampled. The connections themselves are `hypha:` (services-schema.ts). Absent
// = defaults: every app with a ProxyDeployment is a BioEngine app expected in the
// first server's connection workspace, and bioengine-worker services there are
// discovered.


const workspaceName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_|.-]*$/, 'must be a workspace id');
const clientIdText = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.|-]*$/, 'must be a client id');

const regexText = z.string().refine((s) => {
  try {
    new RegExp(s);
    return true;
  } catch {
    return false;
  }
}, 'must be a valid regular expression');

/**
 * "ws/client:service" over the placeholders {workspace}, {app}, {cluster};
 * the client part may be "*" (any provider). The workspace part is a literal
 * or "{workspace}", so the set of workspaces to list is known from the config.
 */
export const serviceTemplate = z
  .string()
  .regex(
    /^(\{workspace\}|[A-Za-z0-9][A-Za-z0-9_|.-]*)\/[^/:\s]+:[^/:\s]+$/,
    'must look like "{workspace}/<client or *>:<service>" with placeholders {workspace}, {app}, {cluster}',
  )
  .refine(
    (s) => [...s.matchAll(/\{([^}]*)\}/g)].every((m) => ['workspace', 'app', 'cluster'].includes(m[1])),
    'only the placeholders {workspace}, {app} and {cluster} exist',
  );

export const bioengineMappingSchema = z.strictObject({
  enabled: z.boolean().default(true).describe('Treat apps with a ProxyDeployment as BioEngine apps.'),
  workspace: workspaceName.optional().describe("Workspace the apps register in (default: the connection's workspace)."),
  worker_client_id: clientIdText
    .optional()
    .describe("The worker's client id (prefix of the proxy's client id). Default: discovered from the bioengine-worker services."),
});

export const templateMappingSchema = z.strictObject({
  service: serviceTemplate.describe('Expected service id, e.g. "{workspace}/my-serve-bridge:{app}" or "my-ws/*:{app}".'),
  workspace: workspaceName.optional().describe('Value of {workspace} (default: the connection\'s workspace).'),
  include: regexText.optional().describe('Only apps whose name matches (default: all).'),
  exclude: regexText.optional().describe('Apps whose name matches are skipped.'),
});

export const clusterMappingSchema = z.strictObject({
  cluster: z.string().min(1).describe('A configured ray_clusters[].name.'),
  hypha: z.string().min(1).optional().describe('Name of the `hypha:` server the apps register on (default: the first).'),
  bioengine: bioengineMappingSchema.default({ enabled: true }),
  templates: z.array(templateMappingSchema).default([]).describe('For apps without a ProxyDeployment; the first matching template wins.'),
});

export const workersSchema = z.strictObject({
  discover: z.boolean().default(true).describe('Cross-check every bioengine-worker service found in the listed workspaces.'),
  services: z.array(z.string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_|.-]*\/[A-Za-z0-9][A-Za-z0-9_.|-]*:[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'must be a full "ws/client:service" id'))
    .default([])
    .describe('Worker services to cross-check in addition to the discovered ones.'),
  interval: duration.default('60s').describe('How often the workers are asked (get_status, get_app_status).'),
  timeout: duration.optional().describe('Deadline of each worker call (default: hypha_registration.timeout).'),
  logs_tail: z.number().int().min(0).default(0).describe('logs_tail passed to get_app_status (it ships replica logs; keep it small).'),
});

/**
 * The shortest wait of a cause that is not proven final: longer than a fixed BioEngine proxy takes
 * to register an app (its maintenance task registers within seconds of the gate opening; 4.4-5.0 s
 * measured after Serve said RUNNING) and than the old gate takes to deregister one (check_health
 * every 10 s), so no cold deploy or wake on a proxy that registers by itself can page.
 */
export const MIN_UNCERTAIN_WAIT = '30s';

const pageWaitsShape = Object.fromEntries(MISSING_STATES.map((s) => [s, durationOrZero.optional()
  .describe(`Wait before a RUNNING app missing as ${s} pages (default: uncertain).`)])) as Record<MissingState, z.ZodOptional<typeof durationOrZero>>;

export const pageWaitsSchema = z.strictObject({
  proven: durationOrZero.default('0s').describe('Wait when the exporter proves the cause final (a BioEngine app on the old gate idle at zero).'),
  uncertain: durationOrZero.default('5m')
    .describe('Wait of every other cause: longer than BioEngine recovers by itself (hypha-rpc reconnect backoff up to 66 s).'),
  worker: durationOrZero.default('5m')
    .describe('Wait before HyphaServeWorkerAppRunningNotRegistered fires: a worker says RUNNING while the registry has nothing.'),
  ...pageWaitsShape,
}).superRefine((w, ctx) => {
  const floor = durationMs(MIN_UNCERTAIN_WAIT);
  for (const key of ['uncertain', 'worker', ...MISSING_STATES] as const) {
    const v = w[key];
    if (v !== undefined && durationMs(v) < floor) {
      ctx.addIssue({ code: 'custom', path: [key], message: `must be at least ${MIN_UNCERTAIN_WAIT}: a proxy that registers by itself takes up to that long` });
    }
  }
});

export const hyphaRegistrationSchema = z
  .strictObject({
    interval: duration.optional().describe('Registry poll interval, the safety net under the events (default: global.interval).'),
    timeout: duration.optional().describe('Deadline of every Hypha call (default: global.timeout).'),
    workspaces: z.array(workspaceName).default([])
      .describe("Extra workspaces to list each cycle (the connection's workspace and every mapping's are listed anyway)."),
    reconnect_settle: duration
      .default('90s')
      .describe('After a reconnect, an app registered before is not reported missing until this long: '
        + 'its provider re-registers after its own reconnect backoff, which in hypha-rpc grows to 60 s ±10 %.'),
    clusters: z.array(clusterMappingSchema).default([]).describe('Per-cluster mappings; a cluster not listed gets the BioEngine mapping with defaults.'),
    workers: workersSchema.default({ discover: true, services: [], interval: '60s', logs_tail: 0 }),
    page_waits: pageWaitsSchema.default({ proven: '0s', uncertain: '5m', worker: '5m' })
      .describe('How long a RUNNING app must be missing, per cause, before HyphaServeAppRunningNotRegistered fires (docs/alerts.md).'),
  })
  .superRefine((r, ctx) => {
    const seen = new Set<string>();
    r.clusters.forEach((c, i) => {
      if (seen.has(c.cluster)) ctx.addIssue({ code: 'custom', path: ['clusters', i, 'cluster'], message: `duplicate cluster "${c.cluster}"` });
      seen.add(c.cluster);
    });
  });

export type RawHyphaRegistration = z.infer<typeof hyphaRegistrationSchema>;

// ------------------------------------------------------------ resolved form

export interface TemplateMapping {
  /** The template text, e.g. "{workspace}/bridge:{app}". */
  service: string;
  /** undefined = the connection's workspace. */
  workspace?: string;
  include?: RegExp;
  exclude?: RegExp;
}

export interface ClusterMapping {
  cluster: string;
  /** The configured Hypha server the apps register on; undefined = the first. */
  hypha?: string;
  bioengine: { enabled: boolean; workspace?: string; workerClientId?: string };
  templates: TemplateMapping[];
}

export interface HyphaRegistrationConfig {
  intervalMs: number;
  timeoutMs: number;
  workspaces: string[];
  reconnectSettleMs: number;
  /** Explicit per-cluster mappings; clusters not listed use DEFAULT_CLUSTER_MAPPING. */
  clusters: ClusterMapping[];
  workers: { discover: boolean; services: string[]; intervalMs: number; timeoutMs: number; logsTail: number };
  pageWaits: PageWaits;
}

/** The incident-1 page's wait per cause (milliseconds). */
export interface PageWaits {
  provenMs: number;
  /** HyphaServeWorkerAppRunningNotRegistered. */
  workerMs: number;
  byStateMs: Record<MissingState, number>;
}

export function defaultClusterMapping(cluster: string): ClusterMapping {
  return { cluster, bioengine: { enabled: true }, templates: [] };
}

/** A problem the schema cannot see (it needs the rest of the config); path is relative to the config root. */
export interface ConfigProblem {
  path: (string | number)[];
  problem: string;
}

/** Cross-checks against the rest of the config: every mapping names a configured Ray cluster and Hypha server. */
export function checkHyphaRegistration(
  raw: RawHyphaRegistration | undefined,
  rayClusterNames: readonly string[],
  hyphaNames: readonly string[],
): ConfigProblem | undefined {
  if (!raw) return undefined;
  for (let i = 0; i < raw.clusters.length; i++) {
    const c = raw.clusters[i];
    if (!rayClusterNames.includes(c.cluster)) {
      return { path: ['hypha_registration', 'clusters', i, 'cluster'], problem: `no ray_clusters entry is named "${c.cluster}"` };
    }
    if (c.hypha !== undefined && !hyphaNames.includes(c.hypha)) {
      return { path: ['hypha_registration', 'clusters', i, 'hypha'], problem: `no hypha server is named "${c.hypha}"` };
    }
  }
  return undefined;
}

export function resolveHyphaRegistration(raw: RawHyphaRegistration | undefined, global: { interval: string; timeout: string }): HyphaRegistrationConfig {
  const r = raw ?? hyphaRegistrationSchema.parse({});
  const timeoutMs = durationMs(r.timeout ?? global.timeout);
  return {
    intervalMs: durationMs(r.interval ?? global.interval),
    timeoutMs,
    workspaces: [...r.workspaces],
    reconnectSettleMs: durationMs(r.reconnect_settle),
    clusters: r.clusters.map((c) => ({
      cluster: c.cluster,
      hypha: c.hypha,
      bioengine: { enabled: c.bioengine.enabled, workspace: c.bioengine.workspace, workerClientId: c.bioengine.worker_client_id },
      templates: c.templates.map((t) => ({
        service: t.service,
        workspace: t.workspace,
        include: t.include !== undefined ? new RegExp(t.include) : undefined,
        exclude: t.exclude !== undefined ? new RegExp(t.exclude) : undefined,
      })),
    })),
    workers: {
      discover: r.workers.discover,
      services: [...r.workers.services],
      intervalMs: durationMs(r.workers.interval),
      timeoutMs: r.workers.timeout !== undefined ? durationMs(r.workers.timeout) : timeoutMs,
      logsTail: r.workers.logs_tail,
    },
    pageWaits: {
      provenMs: durationMs(r.page_waits.proven),
      workerMs: durationMs(r.page_waits.worker),
      byStateMs: Object.fromEntries(MISSING_STATES.map((s) => [s, durationMs(r.page_waits[s] ?? r.page_waits.uncertain)])) as Record<MissingState, number>,
    },
  };
}
