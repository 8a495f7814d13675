import { z } from 'zod';
import { parseDuration } from '../util/duration';
import { credentialRef, duration, labelName, wsOrHttpUrl } from './validators';

// Config fragment `watched_services:` (issue 4). Kept apart from schema.ts so
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
 * Artifact-manager methods a probe may call: reads only (hypha.md §8). The
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

export const canarySchema = z.strictObject({
  enabled: z.boolean().default(true),
  reresolve_after: z
    .union([duration, z.enum(['never', 'immediately'])])
    .default('10m')
    .describe('How long a stale canary is kept (so the alert can fire) before it is resolved anew and counted.'),
});

export const holderSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$/, 'must be 1-63 characters of letters, digits, _ . : -')
    .refine((n) => n !== 'exporter', '"exporter" is the canary\'s holder label')
    .describe('Value of the `holder` label.'),
  service: holderServiceRef.describe('Service of the long-lived client that reports its cached id.'),
  method: methodName,
  args: z.array(z.unknown()).default([]),
  kwargs: z.record(z.string(), z.unknown()).default({}),
  field: fieldPath.optional().describe('Where the cached id is in the result; omitted = the result itself. A full "ws/client:svc" or "ws/client" is reduced to the client id.'),
});

export const watchedServiceSchema = z
  .strictObject({
    service: serviceRef.describe('Service to watch; the value of the `service` label.'),
    interval: duration.optional().describe('Sampling interval (default: global.interval).'),
    timeout: duration.optional().describe('Hard deadline of every call of one cycle (default: global.timeout).'),
    resolve_mode: z.enum(RESOLVE_MODES).default('random').describe('getService mode for the fresh resolution and the canary.'),
    probe: probeSchema
      .optional()
      .describe('Probe call made through the cached and the fresh proxy each cycle (default for an artifact manager: list(limit=1, silent=true); otherwise none).'),
    canary: canarySchema.default({ enabled: true, reresolve_after: '10m' }),
    holders: z.array(holderSchema).default([]),
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
  { service: 'public/artifact-manager', resolve_mode: 'random', canary: { enabled: true, reresolve_after: '10m' }, holders: [] },
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

/** `hypha:` — the Hypha server that registration and the watched services are looked up on. */
export const hyphaConnectionSchema = z.strictObject({
  name: labelName.describe('Hypha server name; the `target` label of its sources.'),
  server_url: wsOrHttpUrl.describe('Hypha server URL (http(s):// or ws(s)://…/ws).'),
  workspace: z.string().min(1).optional().describe("Workspace to connect to; must match the token's (default: the token's, or a new anonymous one)."),
  ...credentialRef,
});

export type RawHyphaConnection = z.infer<typeof hyphaConnectionSchema>;

// ------------------------------------------------------------ resolved form

export type CanaryPolicy =
  | { kind: 'never' }
  | { kind: 'immediately' }
  | { kind: 'after'; staleMs: number };

export interface ProbeCall {
  method: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
}

export interface HolderConfig {
  name: string;
  service: string;
  method: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
  field?: string[];
}

export interface WatchedServiceConfig {
  /** "workspace/service-id" as configured. */
  service: string;
  workspace: string;
  serviceId: string;
  intervalMs: number;
  timeoutMs: number;
  resolveMode: (typeof RESOLVE_MODES)[number];
  probe?: ProbeCall;
  canary: { enabled: boolean; policy: CanaryPolicy };
  holders: HolderConfig[];
}

function serviceIdOf(ref: string): string {
  return ref.slice(ref.indexOf('/') + 1);
}

function ms(d: string): number {
  const v = parseDuration(d);
  if (v === undefined) throw new Error(`invalid duration ${d}`); // the schema already refused it
  return v;
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
    const slash = s.service.indexOf('/');
    const r = s.canary.reresolve_after;
    const policy: CanaryPolicy = r === 'never' ? { kind: 'never' } : r === 'immediately' ? { kind: 'immediately' } : { kind: 'after', staleMs: ms(r) };
    return {
      service: s.service,
      workspace: s.service.slice(0, slash),
      serviceId: s.service.slice(slash + 1),
      intervalMs: ms(s.interval ?? global.interval),
      timeoutMs: ms(s.timeout ?? global.timeout),
      resolveMode: s.resolve_mode,
      probe: effectiveProbe(s.service, s.probe),
      canary: { enabled: s.canary.enabled, policy },
      holders: s.holders.map((h) => ({
        name: h.name,
        service: h.service,
        method: h.method,
        args: [...h.args],
        kwargs: { ...h.kwargs },
        field: h.field?.split('.'),
      })),
    };
  });
}
