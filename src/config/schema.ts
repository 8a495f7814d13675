import { z } from 'zod';
import { credentialRef, duration, httpUrl, labelName } from './validators';
import { hyphaConnectionSchema, watchedServicesSchema } from './services-schema';
import { hyphaRegistrationSchema } from './hypha-schema';

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
  ...credentialRef,
  interval: duration.optional().describe('Sampling interval (default: global.interval).'),
  timeout: duration.optional().describe('Deadline of one Serve API request (default: global.timeout).'),
  /** Responses larger than this are refused (bounded memory). */
  max_response_bytes: z.number().int().positive().default(32 * 1024 * 1024),
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
  hypha: z
    .union([hyphaConnectionSchema, z.array(hyphaConnectionSchema).min(1)])
    .optional()
    .describe('One Hypha server, or a list of them (each mapping of hypha_registration names its server; default: the first).'),
  hypha_registration: hyphaRegistrationSchema.optional(),
  watched_services: watchedServicesSchema,
});

export type RawConfig = z.infer<typeof configSchema>;
