import { z } from 'zod';
import { credentialRef, duration, httpUrl, labelName } from './validators';
import { hyphaConnectionSchema, watchedServicesSchema } from './services-schema';
import { hyphaRegistrationSchema } from './hypha-schema';
import { AUTH_KEYS, httpClientFields } from './http-client';

// The YAML config file's shape. Strict objects: an unknown key is an error,
// since a typo'd key silently ignored is a monitor silently misconfigured.

const name = labelName;

export const proxyProbeSchema = z.strictObject({
  enabled: z.boolean().default(true),
  timeout: duration.default('2s'),
});

export const rayClusterSchema = z.strictObject({
  name: name.describe('Cluster name; the value of the `ray_cluster` label.'),
  dashboard_url: httpUrl.describe('Ray dashboard base URL (the Serve REST API is at /api/serve/applications/).'),
  bearer_token_file: credentialRef.bearer_token_file.describe(
    'File holding a bearer token, read again when it changes. Deprecated: the same as authorization: {credentials_file: ...}.',
  ),
  bearer_token_env: credentialRef.bearer_token_env.describe('Environment variable holding a bearer token (read once, at load).'),
  ...httpClientFields,
  interval: duration.optional().describe('Sampling interval (default: global.interval).'),
  timeout: duration.optional().describe('Deadline of one Serve API request (default: global.timeout).'),
  /** Responses larger than this are refused (bounded memory). */
  max_response_bytes: z.number().int().positive().default(32 * 1024 * 1024),
  /** At most this many apps are exported per cluster; the rest are counted as dropped. */
  max_apps: z.number().int().positive().default(5000),
  proxy_probe: proxyProbeSchema.default({ enabled: true, timeout: '2s' }),
}).superRefine((c, ctx) => {
  const set = AUTH_KEYS.filter((k) => c[k] !== undefined);
  // Both bearer_token_* keys: reported with their own message when the credential is read.
  if (set.length > 1 && !(set.length === 2 && set[0] === 'bearer_token_file' && set[1] === 'bearer_token_env')) {
    ctx.addIssue({ code: 'custom', path: [set[1]], message: `set only one of ${set.join(', ')} (one way of authenticating per request)` });
  }
  if (c.tls_config !== undefined && /^http:/i.test(c.dashboard_url)) {
    ctx.addIssue({ code: 'custom', path: ['tls_config'], message: `has no effect on an http:// dashboard_url (${c.dashboard_url}): use https:// or remove tls_config` });
  }
});

export const globalSchema = z.strictObject({
  interval: duration.default('15s'),
  timeout: duration.default('5s'),
});

export const configSchema = z.strictObject({
  global: globalSchema.default({ interval: '15s', timeout: '5s' }),
  ray_clusters: z.array(rayClusterSchema).default([]),
  hypha: z
    .union([hyphaConnectionSchema, z.array(hyphaConnectionSchema).min(1)])
    .optional()
    .describe('One Hypha server, or a list of them (each mapping of hypha_registration names its server; default: the first).'),
  hypha_registration: hyphaRegistrationSchema.optional(),
  watched_services: watchedServicesSchema,
});

export type RawConfig = z.infer<typeof configSchema>;
