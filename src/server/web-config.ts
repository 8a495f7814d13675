import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { z } from 'zod';
import { parseYamlConfig, ConfigError, locate, formatPath } from '../config/load';
import { durationProblem, parseDuration } from '../util/duration';
import { TLS_VERSION_NAMES, TLS_VERSIONS } from '../config/validators';

// --web.config.file in the Prometheus exporter-toolkit format (its docs/web-configuration.md): TLS,
// client certificates, basic auth, rate limit and extra response headers for every endpoint.
// Unsupported toolkit keys are refused rather than ignored, so a config written for the Go toolkit
// cannot silently weaken. Relative file names are relative to the web config's directory, as there.

// RequireClientCert: the toolkit's older name of RequireAnyClientCert, still accepted there.
const CLIENT_AUTH = [
  'NoClientCert', 'RequestClientCert', 'RequireAnyClientCert', 'RequireClientCert', 'VerifyClientCertIfGiven', 'RequireAndVerifyClientCert',
] as const;
export type ClientAuthType = Exclude<(typeof CLIENT_AUTH)[number], 'RequireClientCert'>;

/**
 * The response headers an operator may set, and their allowed values (none listed: any value), as the
 * toolkit's extraHTTPHeaders: kept to these so that every exporter of the ecosystem behaves alike.
 */
const EXTRA_HEADERS: Readonly<Record<string, readonly string[]>> = {
  'Strict-Transport-Security': [],
  'X-Content-Type-Options': ['nosniff'],
  'X-Frame-Options': ['deny', 'sameorigin'],
  'X-XSS-Protection': [],
  'Content-Security-Policy': [],
};

const headersSchema = z.record(z.string(), z.string()).superRefine((headers, ctx) => {
  for (const [name, value] of Object.entries(headers)) {
    const allowed = EXTRA_HEADERS[name];
    if (allowed === undefined) {
      const message = `HTTP header "${name}" can not be configured (allowed: ${Object.keys(EXTRA_HEADERS).join(', ')})`;
      ctx.addIssue({ code: 'custom', path: [name], message });
    } else if (allowed.length > 0 && value !== '' && !allowed.includes(value)) {
      ctx.addIssue({ code: 'custom', path: [name], message: `must be one of ${allowed.join(', ')}` });
    }
  }
});

/** The toolkit's rate_limit interval: a duration in Prometheus's grammar ("1s", "100ms"), 0 = no limit. */
const intervalSchema = z.union([z.literal(0), z.string()]).superRefine((v, ctx) => {
  const problem = v === 0 ? undefined : durationProblem(v);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `${problem} (0: no limit)` });
});

const webConfigSchema = z.strictObject({
  tls_server_config: z
    .strictObject({
      cert_file: z.string().min(1),
      key_file: z.string().min(1),
      client_auth_type: z.enum(CLIENT_AUTH).default('NoClientCert'),
      client_ca_file: z.string().min(1).optional(),
      client_allowed_sans: z.array(z.string().min(1)).min(1, 'lists at least one SAN (or remove the key)').optional(),
      min_version: z.enum(TLS_VERSION_NAMES).default('TLS12'),
      max_version: z.enum(TLS_VERSION_NAMES).default('TLS13'),
    })
    .superRefine((t, ctx) => {
      const verifies = t.client_auth_type === 'VerifyClientCertIfGiven' || t.client_auth_type === 'RequireAndVerifyClientCert';
      if (verifies && !t.client_ca_file) {
        ctx.addIssue({ code: 'custom', path: ['client_ca_file'], message: `is required with client_auth_type ${t.client_auth_type}` });
      }
      if (t.client_ca_file && t.client_auth_type === 'NoClientCert') {
        const message = 'client CA configured without a client_auth_type that asks for a client certificate';
        ctx.addIssue({ code: 'custom', path: ['client_ca_file'], message });
      }
      if (t.client_allowed_sans && t.client_auth_type === 'NoClientCert') {
        const message = 'needs a client_auth_type that asks for a client certificate (e.g. RequireAndVerifyClientCert)';
        ctx.addIssue({ code: 'custom', path: ['client_allowed_sans'], message });
      }
      if (TLS_VERSION_NAMES.indexOf(t.min_version) > TLS_VERSION_NAMES.indexOf(t.max_version)) {
        ctx.addIssue({ code: 'custom', path: ['min_version'], message: `is above max_version ${t.max_version}` });
      }
    })
    .optional(),
  http_server_config: z
    .strictObject({
      // This exporter serves HTTP/1.1 only; `http2: false` says just that.
      http2: z.literal(false, { message: 'HTTP/2 is not supported (HTTP/1.1 only): set false or remove the key' }).optional(),
      headers: headersSchema.optional(),
    })
    .optional(),
  rate_limit: z
    .strictObject({ interval: intervalSchema.default(0), burst: z.number().int().min(0).default(0) })
    .superRefine((r, ctx) => {
      const interval = r.interval === 0 ? 0 : (parseDuration(r.interval) ?? 0);
      if (interval > 0 && r.burst < 1) {
        ctx.addIssue({ code: 'custom', path: ['burst'], message: 'must be at least 1 when an interval is set (0 would refuse every request)' });
      }
    })
    .optional(),
  basic_auth_users: z
    .record(z.string().min(1), z.string().regex(/^\$2[aby]\$\d\d\$.{53}$/, 'must be a bcrypt hash ($2y$...)'))
    .optional(),
});

export interface TlsSettings {
  /** For tls.createSecureContext / server.setSecureContext. */
  context: tls.SecureContextOptions;
  clientAuth: ClientAuthType;
  /** Exact SAN values (DNS, IP, e-mail or URI) of which a client certificate must carry one. */
  allowedSans?: readonly string[];
}

export interface WebConfig {
  tls?: TlsSettings;
  /** User name → bcrypt hash; undefined or empty: no basic auth. */
  users?: ReadonlyMap<string, string>;
  /** Extra response headers (name, value), set on every answer. */
  headers: readonly (readonly [string, string])[];
  /** A token bucket over all requests: one token per interval, at most `burst`. */
  rateLimit?: { intervalMs: number; burst: number };
  /** Every file the config was read from (itself first): what the reloader watches. */
  files: readonly string[];
  /** SHA-256 over the contents of `files`: equal when nothing changed. */
  fingerprint: string;
}

/** Contents of files in order (undefined: unreadable), hashed; a file that goes missing or comes back is a change. */
function fingerprint(contents: readonly (Buffer | undefined)[]): string {
  const h = crypto.createHash('sha256');
  for (const data of contents) {
    h.update(data === undefined ? '\0missing\0' : `\0${data.length}\0`);
    if (data) h.update(data);
  }
  return h.digest('hex');
}

/** The fingerprint the files have now, to compare with WebConfig.fingerprint. */
export function fingerprintFiles(files: readonly string[]): string {
  return fingerprint(files.map((f) => {
    try {
      return fs.readFileSync(f);
    } catch {
      return undefined;
    }
  }));
}

/** Reads and validates the web config and every file it names. Throws ConfigError (file, line, field), never anything else. */
export function loadWebConfig(file: string): WebConfig {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch (e) {
    throw new ConfigError(file, '', `cannot read web config file: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const { value, doc, lc } = parseYamlConfig(file, bytes.toString('utf8'), webConfigSchema);
  const loc = (field: string[]) => {
    const pos = locate(doc, lc, field);
    return new LocatedField(file, formatPath(field), pos?.line, pos?.col);
  };
  const dir = path.dirname(file);
  const files = [file];
  const read: Buffer[] = [bytes];
  const readFile = (field: string[], name: string): Buffer => {
    try {
      const data = fs.readFileSync(name);
      read.push(data);
      return data;
    } catch (e) {
      throw loc(field).withProblem(`cannot read ${name}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  };
  const out: WebConfig = { headers: [], files, fingerprint: '' };
  const t = value.tls_server_config;
  if (t) {
    const at = (p: string) => path.resolve(dir, p);
    const certFile = at(t.cert_file);
    const keyFile = at(t.key_file);
    const caFile = t.client_ca_file === undefined ? undefined : at(t.client_ca_file);
    files.push(certFile, keyFile, ...(caFile ? [caFile] : []));
    const context: tls.SecureContextOptions = {
      cert: readFile(['tls_server_config', 'cert_file'], certFile),
      key: readFile(['tls_server_config', 'key_file'], keyFile),
      ca: caFile ? readFile(['tls_server_config', 'client_ca_file'], caFile) : undefined,
      minVersion: TLS_VERSIONS[t.min_version],
      maxVersion: TLS_VERSIONS[t.max_version],
    };
    try {
      // The same call the server makes: a mismatched key, a PEM that is not one or a bad CA fails here, at load.
      tls.createSecureContext(context);
      new crypto.X509Certificate(context.cert as Buffer);
    } catch (e) {
      const files = `${certFile}, ${keyFile}${caFile ? `, CA ${caFile}` : ''}`;
      throw loc(['tls_server_config', 'cert_file']).withProblem(`cannot use the certificate and key (${files}): ${(e as Error).message}`);
    }
    const clientAuth = t.client_auth_type === 'RequireClientCert' ? 'RequireAnyClientCert' : t.client_auth_type;
    out.tls = { context, clientAuth, allowedSans: t.client_allowed_sans };
  }
  for (const [name, v] of Object.entries(value.http_server_config?.headers ?? {})) {
    if (v !== '') (out.headers as [string, string][]).push([name, v]); // "Unset if blank", as the toolkit
  }
  const r = value.rate_limit;
  if (r) {
    const intervalMs = r.interval === 0 ? 0 : (parseDuration(r.interval) ?? 0);
    if (intervalMs > 0) out.rateLimit = { intervalMs, burst: r.burst };
  }
  if (value.basic_auth_users) out.users = new Map(Object.entries(value.basic_auth_users));
  out.fingerprint = fingerprint(read);
  return out;
}

/** A field of the web config, located in its file, that a problem found after parsing is reported at. */
class LocatedField {
  constructor(readonly file: string, readonly field: string, readonly line?: number, readonly col?: number) {}
  withProblem(problem: string): ConfigError {
    return new ConfigError(this.file, this.field, problem, this.line, this.col);
  }
}
