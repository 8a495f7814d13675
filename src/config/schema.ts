import { z } from 'zod';
import { parseDuration } from '../util/duration';
import { hyphaConnectionSchema, watchedServicesSchema } from './services-schema';
import { hyphaRegistrationSchema } from './hypha-schema';

// The YAML config file's shape. Strict objects: an unknown key is an error,
// since a typo'd key silently ignored is a monitor silently misconfigured.

export const duration = z
  .string()
  .regex(/^(\d+(\.\d+)?(ms|s|m|h|d))+$/, 'must be a duration such as 500ms, 15s, 1m')
  .refine((s) => {
    const ms = parseDuration(s);
    return ms !== undefined && ms > 0;
  }, 'must be a duration such as 500ms, 15s, 1m');

export const httpUrl = z.string().refine((s) => {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}, 'must be an http(s) URL without credentials in it');

export const wsOrHttpUrl = z.string().refine((s) => {
  try {
    const u = new URL(s);
    return ['http:', 'https:', 'ws:', 'wss:'].includes(u.protocol) && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}, 'must be an http(s) or ws(s) URL without credentials in it');

/** A credential comes from a file or an environment variable, never inline. */
export const credentialRef = {
  bearer_token_file: z.string().min(1).optional(),
  bearer_token_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name').optional(),
};

const name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$/, 'must be 1-63 characters of letters, digits, _ . : -');

export const proxyProbeSchema = z.strictObject({
  enabled: z.boolean().default(true),
  timeout: duration.default('2s'),
});

export const rayClusterSchema = z.strictObject({
  name: name.describe('Cluster name; the value of the `cluster` label.'),
  dashboard_url: httpUrl.describe('Ray dashboard base URL (the Serve REST API is at /api/serve/applications/).'),
  ...credentialRef,
  interval: duration.optional().describe('Sampling interval (default: global.interval).'),
  timeout: duration.optional().describe('Deadline of one Serve API request (default: global.timeout).'),
  /** Responses larger than this are refused (bounded memory). */
  max_response_bytes: z.number().int().positive().default(64 * 1024 * 1024),
  /** At most this many apps are exported per cluster; the rest are counted as dropped. */
  max_apps: z.number().int().positive().default(5000),
  proxy_probe: proxyProbeSchema.default({ enabled: true, timeout: '2s' }),
});

export const globalSchema = z.strictObject({
  interval: duration.default('15s'),
  timeout: duration.default('5s'),
});

export const configSchema = z.strictObject({
  global: globalSchema.default({ interval: '15s', timeout: '5s' }),
  ray_clusters: z.array(rayClusterSchema).default([]),
  hypha: hyphaConnectionSchema.optional(),
  hypha_registration: hyphaRegistrationSchema.optional(),
  watched_services: watchedServicesSchema,
});

export type RawConfig = z.infer<typeof configSchema>;
export type RawRayCluster = z.infer<typeof rayClusterSchema>;
