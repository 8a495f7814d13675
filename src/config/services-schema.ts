import { z } from 'zod';
import { credentialRef, duration, durationMs, durationOrZero, labelName, wsOrHttpUrl } from './validators';
import { clientIdOf, splitWorkspace } from '../util/hypha-id';

// Config fragment `watched_services:` (docs/watched-services.md). Kept apart from schema.ts so
// the watched-services feature owns its shape; schema.ts only adds the key.

/** "workspace/service-id": the short form a worker passes to getService. */
const serviceRef = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_|.-]*\/[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'must be "workspace/service-id", e.g. public/artifact-manager');

/** A holder may name one client explicitly ("ws/client:svc") or let Hypha pick ("ws/svc"). */
const holderServiceRef = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_|.-]*\/([A-Za-z0-9][A-Za-z0-9_.-]*:)?[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    'must be "workspace/service-id" or "workspace/client-id:service-id"',
  );

const methodName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a method name');

/** Dotted path into a result object; numeric parts index arrays ("apps.0.client_id"). */
const fieldPath = z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'must be a dotted field path such as artifact_manager.client_id');

/** Selection among several providers (Hypha's getService `mode`). */
export const RESOLVE_MODES = ['random', 'first', 'last', 'exact', 'min_load'] as const;

/**
 * Artifact-manager methods a probe may call: reads only. The
 * writes (create, commit, edit, delete, put_file, ...) are refused, because a
 * probe that times out cancels nothing at the far end.
 */
export const ARTIFACT_MANAGER_READ_METHODS = ['read', 'list', 'search', 'get_file', 'list_files', 'read_file'] as const;

/** Where `silent` sits among the positional parameters of the artifact-manager reads that accept it. */
export const ARTIFACT_MANAGER_SILENT_POSITION: Readonly<Record<string, number>> = { read: 1, list: 7, get_file: 2 };

export const probeSchema = z.strictObject({
  enabled: z.boolean().default(true),
  method: methodName.describe('Method of the service to call; read-only calls only.'),
  args: z.array(z.unknown()).default([]).describe('Positional arguments.'),
  kwargs: z.record(z.string(), z.unknown()).default({}).describe('Keyword arguments.'),
});

/**
 * A stale canary is a WITNESS (docs/watched-services.md): the exporter cannot see the
 * real long-lived clients, so its own stale handle stands for them until the
 * evidence says they recovered; it is no longer re-resolved after a fixed time.
 */
export const canarySchema = z
  .strictObject({
    enabled: z.boolean().default(true),
    witness_max: z
      .union([duration, z.literal('none')])
      .optional()
      .describe('Longest a stale canary is kept as the witness, counted from the first cycle it was seen stale; '
        + '"none" (default) = until the old client id is live again, every configured holder agrees, or an operator releases it.'),
    released_client_ids: z
      .array(z.string().min(1))
      .default([])
      .describe('Operator release: a witness holding one of these client ids (bare, "ws/client" or "ws/client:svc") is dropped at the next cycle '
        + 'and the canary resolved anew. Safe to leave in place.'),
    self_healing_release: duration
      .optional()
      .describe('How long a stale canary is kept when every holder is a BioEngine worker that re-resolves by itself '
        + '(0.16.30 or later, no holders configured): it then ends by itself (reason self_healing). Default 5m.'),
    reresolve_after: z
      .union([duration, z.enum(['never', 'immediately'])])
      .optional()
      .describe('Deprecated alias of witness_max: a duration = witness_max, "never" = none, '
        + '"immediately" = no witness at all (the page cannot fire on the canary).'),
  })
  .superRefine((c, ctx) => {
    if (c.reresolve_after !== undefined && c.witness_max !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['reresolve_after'], message: 'reresolve_after is the deprecated name of witness_max; set only witness_max' });
    }
  });

/** Holder method names a probe must not call: a probe that times out cancels nothing at the far end. */
const MUTATING_VERBS = [
  'create', 'delete', 'remove', 'deploy', 'undeploy', 'stop', 'start', 'restart', 'run', 'execute', 'exec', 'upload', 'put', 'commit', 'edit', 'update',
  'set', 'save', 'clear', 'cleanup', 'reset', 'kill', 'shutdown', 'register', 'unregister', 'publish', 'discard', 'install', 'uninstall',
];
export const MUTATING_METHOD = new RegExp(`^(${MUTATING_VERBS.join('|')})(_|$|[A-Z])`);

export const holderProbeSchema = z.strictObject({
  service: holderServiceRef.optional().describe("Service to call (default: the holder's service)."),
  method: methodName
    .refine((m) => !MUTATING_METHOD.test(m), 'holder probes must be read-only (e.g. BioEngine list_apps); this name looks like a write')
    .describe("Read-only method that goes through the holder's cached proxy of the watched service (BioEngine: list_apps, admin)."),
  args: z.array(z.unknown()).default([]),
  kwargs: z.record(z.string(), z.unknown()).default({}),
  timeout: duration.optional().describe("Deadline of the call (default: the watched service's timeout)."),
  interval: duration.optional()
    .describe("Run at most this often (default: every cycle); the holder's calls may be costly (list_apps reads every app artifact)."),
});

export const holderSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$/, 'must be 1-63 characters of letters, digits, _ . : -')
      .refine((n) => n !== 'exporter', '"exporter" is the canary\'s holder label')
      .describe('Value of the `holder` label.'),
    service: holderServiceRef.describe('Service of the long-lived client (reports its cached id and/or answers the probe).'),
    method: methodName.optional().describe('Method that returns the cached id (omit for a probe-only holder, e.g. a released BioEngine, which reports no id).'),
    args: z.array(z.unknown()).default([]),
    kwargs: z.record(z.string(), z.unknown()).default({}),
    field: fieldPath.optional()
      .describe('Where the cached id is in the result; omitted = the result itself. A full "ws/client:svc" or "ws/client" is reduced to the client id.'),
    probe: holderProbeSchema.optional().describe("Read-only call through the holder's cached proxy; its success is part of the witness release."),
  })
  .superRefine((h, ctx) => {
    if (h.method === undefined && h.probe === undefined) {
      ctx.addIssue({ code: 'custom', path: ['method'], message: 'a holder needs a method that reports its cached id, a probe, or both' });
    }
    if (h.method === undefined && h.field !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['field'], message: 'field needs method' });
    }
  });

/**
 * The waits of HyphaServiceCachedProxyStale, which the exporter decides (metric contract v0.4). A stale id
 * that is a replaced Hypha server id never returns (proven); any other may be a provider re-registering
 * (hypha-rpc reconnects within about a minute), so it waits longer than that.
 */
/** How long a stale held id waits before HyphaServiceCachedProxyStale fires, per cause (watched_services[].page_waits). */
export interface StalePageWaits {
  /** The cause is proven final (server_gone). */
  provenMs: number;
  /** Every other cause (not_listed). */
  uncertainMs: number;
}

export const stalePageWaitsSchema = z.strictObject({
  proven: durationOrZero.default('0s').describe('Wait when the stale id is proven gone: a Hypha server id the server replaced.'),
  uncertain: durationOrZero.default('2m').describe('Wait of every other stale id: longer than a provider takes to re-register.'),
}).superRefine((w, ctx) => {
  if (durationMs(w.uncertain) < durationMs(w.proven)) {
    ctx.addIssue({ code: 'custom', path: ['uncertain'], message: `must be at least proven (${w.proven})` });
  }
});

export const watchedServiceSchema = z
  .strictObject({
    service: serviceRef.describe('Service to watch; the value of the `service` label.'),
    hypha: z.string().min(1).optional().describe('Name of the `hypha:` server the service is watched on (default: the first).'),
    interval: duration.optional().describe('Sampling interval (default: global.interval).'),
    timeout: duration.optional().describe('Hard deadline of every call of one cycle (default: global.timeout).'),
    resolve_mode: z.enum(RESOLVE_MODES).default('random').describe('getService mode for the fresh resolution and the canary.'),
    probe: probeSchema
      .optional()
      .describe('Probe call made through the cached and the fresh proxy each cycle '
        + '(default for an artifact manager: list(limit=1, silent=true); otherwise none).'),
    canary: canarySchema.default({ enabled: true, released_client_ids: [] }),
    holders: z.array(holderSchema).default([]),
    probe_window: duration.default('3m')
      .describe('Window of the probe pages: no success through the cached proxy (or on any path) within it. A window, not one call: '
        + 'a fresh resolution picks a provider at random, and a killed server stays listed for about a minute.'),
    page_waits: stalePageWaitsSchema.default({ proven: '0s', uncertain: '2m' })
      .describe('How long a cached id must be stale, per cause, before HyphaServiceCachedProxyStale fires (docs/alerts.md).'),
  })
  .superRefine((s, ctx) => {
    if (serviceIdOf(s.service) === 'artifact-manager' && s.probe && !(ARTIFACT_MANAGER_READ_METHODS as readonly string[]).includes(s.probe.method)) {
      ctx.addIssue({
        code: 'custom',
        path: ['probe', 'method'],
        message: `probes must be read-only; for the artifact manager use one of ${ARTIFACT_MANAGER_READ_METHODS.join(', ')}`,
      });
    }
    const seen = new Set<string>();
    s.holders.forEach((h, i) => {
      if (seen.has(h.name)) ctx.addIssue({ code: 'custom', path: ['holders', i, 'name'], message: `duplicate holder name "${h.name}"` });
      seen.add(h.name);
    });
  });

export const DEFAULT_WATCHED_SERVICES: z.infer<typeof watchedServiceSchema>[] = [
  {
    service: 'public/artifact-manager', resolve_mode: 'random', canary: { enabled: true, released_client_ids: [] }, holders: [],
    probe_window: '3m', page_waits: { proven: '0s', uncertain: '2m' },
  },
];

export const watchedServicesSchema = z
  .array(watchedServiceSchema)
  .default(DEFAULT_WATCHED_SERVICES)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((s, i) => {
      if (seen.has(s.service)) ctx.addIssue({ code: 'custom', path: [i, 'service'], message: `duplicate watched service "${s.service}"` });
      seen.add(s.service);
    });
  })
  .describe('Services whose providers, resolution and cached proxies are watched (needs a Hypha connection).');

export type RawWatchedService = z.infer<typeof watchedServiceSchema>;

// ------------------------------------------------------------ Hypha connection

/** One entry of `hypha:` — a Hypha server that registrations (and, on the first server, the watched services) are looked up on. */
export const hyphaConnectionSchema = z.strictObject({
  name: labelName.describe('Hypha server name; the `hypha` label of its series.'),
  server_url: wsOrHttpUrl.describe('Hypha server URL (http(s):// or ws(s)://…/ws).'),
  workspace: z.string().min(1).optional().describe("Workspace to connect to; must match the token's (default: the token's, or a new anonymous one)."),
  ...credentialRef,
});

// ------------------------------------------------------------ resolved form

/**
 * How long a stale canary stays the witness. `maxMs` undefined = no time
 * limit; 0 = no witness at all (only via the deprecated reresolve_after:
 * immediately).
 */
export interface CanaryConfig {
  enabled: boolean;
  witnessMaxMs?: number;
  /** Client ids an operator has released (reduced to bare client ids). */
  releasedClientIds: string[];
  /** Set when the config used the deprecated key, so the source can say so once. */
  deprecatedReresolveAfter?: string;
  /** canary.self_healing_release; undefined = the default (SELF_HEALING_WITNESS_SECONDS). */
  selfHealingReleaseMs?: number;
}

export interface ProbeCall {
  method: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
}

export interface HolderProbeConfig extends ProbeCall {
  service: string;
  timeoutMs: number;
  /** Minimum time between two probes; 0 = every cycle. */
  intervalMs: number;
}

export interface HolderConfig {
  name: string;
  service: string;
  /** Reads the cached id; undefined for a probe-only holder. */
  method?: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
  field?: string[];
  probe?: HolderProbeConfig;
}

export interface WatchedServiceConfig {
  /** "workspace/service-id" as configured. */
  service: string;
  /** The configured Hypha server it is watched on; undefined = the first. */
  hypha?: string;
  workspace: string;
  serviceId: string;
  intervalMs: number;
  timeoutMs: number;
  resolveMode: (typeof RESOLVE_MODES)[number];
  probe?: ProbeCall;
  canary: CanaryConfig;
  holders: HolderConfig[];
  /** The waits of HyphaServiceCachedProxyStale per cause. */
  pageWaits: StalePageWaits;
  probeWindowMs: number;
}

function serviceIdOf(ref: string): string {
  return splitWorkspace(ref).rest;
}

/** An artifact manager ("<ws>/artifact-manager"): the service the read-only probe defaults and BioEngine's re-resolving proxy are about. */
export function isArtifactManager(service: string): boolean {
  return serviceIdOf(service) === 'artifact-manager';
}

/**
 * The probe actually sent: the artifact manager's default, and `silent=true`
 * added to the reads that accept it so probes do not count as views (unless
 * the config sets silent itself, positionally or by keyword).
 */
export function effectiveProbe(service: string, probe: RawWatchedService['probe']): ProbeCall | undefined {
  const isArtifactManager = serviceIdOf(service) === 'artifact-manager';
  if (probe && !probe.enabled) return undefined;
  if (!probe) return isArtifactManager ? { method: 'list', args: [], kwargs: { limit: 1, silent: true } } : undefined;
  const call: ProbeCall = { method: probe.method, args: [...probe.args], kwargs: { ...probe.kwargs } };
  const pos = ARTIFACT_MANAGER_SILENT_POSITION[probe.method];
  if (isArtifactManager && pos !== undefined && !('silent' in call.kwargs) && call.args.length <= pos) call.kwargs.silent = true;
  return call;
}

export function resolveWatchedServices(raw: RawWatchedService[], global: { interval: string; timeout: string }): WatchedServiceConfig[] {
  return raw.map((s): WatchedServiceConfig => {
    const { workspace, rest } = splitWorkspace(s.service);
    const timeoutMs = durationMs(s.timeout ?? global.timeout);
    return {
      service: s.service,
      hypha: s.hypha,
      workspace: workspace ?? '',
      serviceId: rest,
      intervalMs: durationMs(s.interval ?? global.interval),
      timeoutMs,
      resolveMode: s.resolve_mode,
      probe: effectiveProbe(s.service, s.probe),
      canary: canaryConfig(s.canary),
      probeWindowMs: durationMs(s.probe_window),
      pageWaits: { provenMs: durationMs(s.page_waits.proven), uncertainMs: durationMs(s.page_waits.uncertain) },
      holders: s.holders.map((h) => ({
        name: h.name,
        service: h.service,
        method: h.method,
        args: [...h.args],
        kwargs: { ...h.kwargs },
        field: h.field?.split('.'),
        probe: h.probe && {
          service: h.probe.service ?? h.service,
          method: h.probe.method,
          args: [...h.probe.args],
          kwargs: { ...h.probe.kwargs },
          timeoutMs: h.probe.timeout ? durationMs(h.probe.timeout) : timeoutMs,
          intervalMs: h.probe.interval ? durationMs(h.probe.interval) : 0,
        },
      })),
    };
  });
}

function canaryConfig(c: RawWatchedService['canary']): CanaryConfig {
  const out: CanaryConfig = { enabled: c.enabled, releasedClientIds: [] };
  for (const id of c.released_client_ids) {
    const cid = clientIdOf(id);
    if (cid !== undefined) out.releasedClientIds.push(cid);
  }
  if (c.witness_max !== undefined && c.witness_max !== 'none') out.witnessMaxMs = durationMs(c.witness_max);
  if (c.self_healing_release !== undefined) out.selfHealingReleaseMs = durationMs(c.self_healing_release);
  const old = c.reresolve_after;
  if (old !== undefined) {
    out.deprecatedReresolveAfter = old;
    if (old === 'immediately') out.witnessMaxMs = 0;
    else if (old !== 'never') out.witnessMaxMs = durationMs(old);
  }
  return out;
}
