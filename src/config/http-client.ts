import type { ConnectionOptions } from 'node:tls';
import { z } from 'zod';
import type { Secret } from '../util/secret';
import type { FileSecret } from './credential-file';
import { TLS_VERSION_NAMES, TLS_VERSIONS, type TlsVersionName } from './validators';

// Prometheus's HTTP client config (prometheus/common config.HTTPClientConfig, a scrape_config's
// tls_config, basic_auth, authorization and proxy_url) for the exporter's own upstream calls. Secrets
// come from files only: an inline `password` or `credentials`, accepted by Prometheus, is refused
// here with what to write instead, as every other credential of this config.

const filePath = z.string().min(1);

const notInline = (field: string, instead: string) =>
  z
    .never({ error: `an inline ${field} is not accepted (secrets come from files): write it to a file and set ${instead}` })
    .optional()
    .describe(`Not accepted: secrets come from files (${instead}).`);

export const tlsConfigSchema = z
  .strictObject({
    ca_file: filePath.optional().describe('CA certificate(s) (PEM) that the server certificate must chain to; default: the system CAs.'),
    cert_file: filePath.optional().describe('Client certificate (PEM) presented to the server (needs key_file).'),
    key_file: filePath.optional().describe('Key (PEM) of cert_file.'),
    server_name: z.string().min(1).optional().describe('Name sent in SNI and checked against the server certificate; default: the URL\'s host.'),
    insecure_skip_verify: z.boolean().default(false).describe('Accept any server certificate (no verification). For tests only.'),
    min_version: z.enum(TLS_VERSION_NAMES).optional().describe('Lowest TLS version offered (TLS10 … TLS13); default: Node\'s (TLS12).'),
  })
  .superRefine((t, ctx) => {
    if ((t.cert_file === undefined) !== (t.key_file === undefined)) {
      const [missing, given] = t.cert_file === undefined ? ['cert_file', 'key_file'] : ['key_file', 'cert_file'];
      ctx.addIssue({ code: 'custom', path: [missing], message: `is required with ${given} (a client certificate needs both)` });
    }
    if (t.insecure_skip_verify && t.ca_file !== undefined) {
      const message = 'contradicts ca_file (no certificate is verified with insecure_skip_verify: true): remove one';
      ctx.addIssue({ code: 'custom', path: ['insecure_skip_verify'], message });
    }
  });

export const basicAuthSchema = z
  .strictObject({
    username: z.string().min(1).optional().describe('User name (not a secret; or username_file).'),
    username_file: filePath.optional().describe('File holding the user name, read again when it changes.'),
    password_file: filePath.optional().describe('File holding the password, read again when it changes (rotation needs no restart).'),
    password: notInline('password', 'password_file'),
  })
  .superRefine((b, ctx) => {
    if ((b.username === undefined) === (b.username_file === undefined)) {
      ctx.addIssue({ code: 'custom', path: b.username === undefined ? [] : ['username_file'], message: 'set either username or username_file (exactly one)' });
    }
  });

export const authorizationSchema = z.strictObject({
  type: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*$/, 'must be an HTTP authentication scheme such as Bearer')
    .refine((t) => t.toLowerCase() !== 'basic', 'cannot be Basic: use basic_auth')
    .default('Bearer')
    .describe('Scheme of the Authorization header (default Bearer).'),
  credentials_file: filePath.describe('File holding the credentials, read again when it changes (rotation needs no restart).'),
  credentials: notInline('credentials', 'credentials_file'),
});

export const proxyUrl = z
  .string()
  .refine((s) => {
    try {
      const u = new URL(s);
      return u.protocol === 'http:' && u.username === '' && u.password === '' && (u.pathname === '/' || u.pathname === '');
    } catch {
      return false;
    }
  }, 'must be http://host:port of an HTTP proxy (CONNECT for https), without credentials or a path')
  .describe('HTTP proxy every request goes through (https targets by CONNECT).');

/** The config keys, spread into an upstream's entry. */
export const httpClientFields = {
  tls_config: tlsConfigSchema.optional().describe('TLS towards the upstream, as Prometheus\'s tls_config (certificate files are read again when they change).'),
  basic_auth: basicAuthSchema.optional().describe('HTTP Basic authentication, as Prometheus\'s basic_auth (from files).'),
  authorization: authorizationSchema.optional().describe('Authorization header, as Prometheus\'s authorization (from a file).'),
  proxy_url: proxyUrl.optional(),
};

/** The one-of rule of Prometheus: a request carries one way of authenticating. */
export const AUTH_KEYS = ['basic_auth', 'authorization', 'bearer_token_file', 'bearer_token_env'] as const;

/** The resolved client settings; every file is a FileSecret, read again when it changes. */
export interface HttpClientConfig {
  /** The Authorization header's scheme and credentials (bearer_token_file/_env map here as Bearer). */
  authorization?: { type: string; credentials: Secret };
  basicAuth?: { username: Secret; password?: Secret };
  tls?: {
    ca?: FileSecret;
    cert?: FileSecret;
    key?: FileSecret;
    serverName?: string;
    insecureSkipVerify: boolean;
    minVersion?: TlsVersionName;
  };
  proxyUrl?: string;
}

/** The Authorization header value, from the files as they are now (each reveal() re-reads a changed file). */
export function authorizationHeader(c: HttpClientConfig): string | undefined {
  if (c.authorization) return `${c.authorization.type} ${c.authorization.credentials.reveal()}`;
  if (c.basicAuth) {
    const pair = `${c.basicAuth.username.reveal()}:${c.basicAuth.password?.reveal() ?? ''}`;
    return `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;
  }
  return undefined;
}

/** The TLS options of a connection, from the certificate files as they are now. */
export function tlsOptions(c: HttpClientConfig): ConnectionOptions | undefined {
  const t = c.tls;
  if (!t) return undefined;
  return {
    ca: t.ca?.reveal(),
    cert: t.cert?.reveal(),
    key: t.key?.reveal(),
    servername: t.serverName,
    rejectUnauthorized: !t.insecureSkipVerify,
    minVersion: t.minVersion ? TLS_VERSIONS[t.minVersion] : undefined,
  };
}

/** Every secret of the settings: scrubbed from messages, re-read after a refusal. */
export function secretsOf(c: HttpClientConfig): Secret[] {
  const out: (Secret | undefined)[] = [c.authorization?.credentials, c.basicAuth?.username, c.basicAuth?.password, c.tls?.key];
  return out.filter((s): s is Secret => s !== undefined);
}

/** The credential whose file status is reported (hypha_serve_credential_*): the password or the token. */
export function mainCredential(c: HttpClientConfig): Secret | undefined {
  return c.authorization?.credentials ?? c.basicAuth?.password;
}
