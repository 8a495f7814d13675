import crypto from 'node:crypto';
import fs from 'node:fs';
import tls from 'node:tls';
import { Document, LineCounter, parseDocument, isNode, isMap, isPair, isScalar } from 'yaml';
import type { ZodType, z } from 'zod';
import { configSchema, RawConfig } from './schema';
import { resolveWatchedServices, WatchedServiceConfig } from './services-schema';
import { checkHyphaRegistration, HyphaRegistrationConfig, resolveHyphaRegistration } from './hypha-schema';
import { durationMs } from './validators';
import { Secret } from '../util/secret';
import { FileSecret } from './credential-file';
import { tlsOptions, type HttpClientConfig } from './http-client';

export interface RayClusterConfig {
  name: string;
  dashboardUrl: string;
  /** TLS, authentication (bearer_token_* mapped onto authorization) and proxy of the Serve API requests. */
  http: HttpClientConfig;
  intervalMs: number;
  timeoutMs: number;
  maxResponseBytes: number;
  maxApps: number;
  proxyProbe: { enabled: boolean; timeoutMs: number };
}

/** The Hypha server connection (`hypha:`). */
export interface HyphaServerConfig {
  name: string;
  serverUrl: string;
  workspace?: string;
  token?: Secret;
}

export interface Config {
  file: string;
  raw: RawConfig;
  rayClusters: RayClusterConfig[];
  /** Every configured Hypha server (`hypha:` as one object or a list), in config order. */
  hyphaServers: HyphaServerConfig[];
  /** The first Hypha server: the default server of registration mappings and watched services. */
  hypha?: HyphaServerConfig;
  /** Watched services (each on its `hypha` server, default the first); sampled only when a server is configured. */
  watchedServices: WatchedServiceConfig[];
  /** Expected Hypha registrations; sampled only when a Hypha server is configured. */
  hyphaRegistration: HyphaRegistrationConfig;
}

/** A config problem located as precisely as the YAML allows: file, field path, line and column. */
export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly field: string,
    readonly problem: string,
    readonly line?: number,
    readonly col?: number,
  ) {
    super(`${file}${line !== undefined ? `:${line}:${col ?? 1}` : ''}: ${field ? `${field}: ` : ''}${problem}`);
  }
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out;
}

/** Line/column of the YAML node at path (or of its nearest existing ancestor). */
export function locate(
  doc: Document,
  lc: LineCounter,
  path: readonly PropertyKey[],
  keyOf?: string,
): { line: number; col: number } | undefined {
  for (let n = path.length; n >= 0; n--) {
    const sub = path.slice(0, n) as (string | number)[];
    const node = sub.length === 0 ? doc.contents : doc.getIn(sub, true);
    if (!isNode(node)) continue;
    let offset = node.range?.[0];
    if (keyOf !== undefined && n === path.length && isMap(node)) {
      const pair = node.items.find((it) => isPair(it) && isScalar(it.key) && it.key.value === keyOf);
      if (pair && isPair(pair) && isNode(pair.key)) offset = pair.key.range?.[0];
    } else if (n === path.length && sub.length > 0) {
      // Point at the key of the offending value, which is where a person looks.
      const parent = sub.length === 1 ? doc.contents : doc.getIn(sub.slice(0, -1), true);
      const last = sub[sub.length - 1];
      if (isMap(parent)) {
        const pair = parent.items.find((it) => isPair(it) && isScalar(it.key) && it.key.value === last);
        if (pair && isPair(pair) && isNode(pair.value)) offset = pair.value.range?.[0];
      }
    }
    if (offset === undefined) continue;
    const pos = lc.linePos(offset);
    return { line: pos.line, col: pos.col };
  }
  return undefined;
}

/** Parses and validates YAML text against a schema; throws ConfigError on the first problem. */
export function parseYamlConfig<T>(file: string, text: string, schema: ZodType<T>): { value: T; doc: Document; lc: LineCounter } {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    const pos = lc.linePos(e.pos[0]);
    const what = e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
    throw new ConfigError(file, '', `YAML syntax: ${what}`, pos.line, pos.col);
  }
  const data: unknown = doc.toJS() ?? {};
  const result = schema.safeParse(data);
  if (!result.success) {
    // A misspelt key usually also makes a required one "missing": report the misspelling.
    const issue = withinUnion(data, result.error.issues.find((i) => i.code === 'unrecognized_keys') ?? result.error.issues[0]);
    let path = issue.path;
    let keyOf: string | undefined;
    let problem = issue.message;
    if (issue.code === 'unrecognized_keys') {
      keyOf = issue.keys[0];
      path = [...issue.path, keyOf];
      problem = `unknown key "${keyOf}"`;
    }
    const pos = locate(doc, lc, keyOf ? issue.path : path, keyOf);
    throw new ConfigError(file, formatPath(path), problem, pos?.line, pos?.col);
  }
  return { value: result.data, doc, lc };
}

/**
 * A value that may take several forms (`hypha:` as an object or a list) fails as a whole; report
 * the problem inside the form the YAML actually has, so the error names the field and its line.
 */
function withinUnion(data: unknown, issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return issue;
  let value: unknown = data;
  for (const k of issue.path) value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[k] : undefined;
  const isList = Array.isArray(value);
  // The branch whose first complaint is not "this is the wrong kind of value".
  const branch = issue.errors
    .find((errs) => errs.length > 0 && !(errs[0].code === 'invalid_type' && errs[0].path.length === 0 && (errs[0].expected === 'array') !== isList))
    ?? issue.errors.find((errs) => errs.length > 0 && !(errs[0].code === 'invalid_type' && errs[0].path.length === 0));
  if (!branch) return issue;
  const inner = branch.find((i) => i.code === 'unrecognized_keys') ?? branch[0];
  return withinUnion(value, { ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue);
}

/**
 * Reads a credential named by *_file or *_env; a missing file or variable is a config error. A file
 * is read again whenever it changes (a rotated token needs no reload); a variable is read once.
 */
export function readCredential(
  file: string,
  doc: Document,
  lc: LineCounter,
  path: (string | number)[],
  ref: { bearer_token_file?: string; bearer_token_env?: string },
  env: NodeJS.ProcessEnv,
): Secret | undefined {
  if (ref.bearer_token_file !== undefined && ref.bearer_token_env !== undefined) {
    const pos = locate(doc, lc, [...path, 'bearer_token_env']);
    throw new ConfigError(file, formatPath([...path, 'bearer_token_env']), 'set either bearer_token_file or bearer_token_env, not both', pos?.line, pos?.col);
  }
  if (ref.bearer_token_file !== undefined) return openFile(file, doc, lc, [...path, 'bearer_token_file'], ref.bearer_token_file, 'token file');
  if (ref.bearer_token_env !== undefined) {
    const v = env[ref.bearer_token_env];
    if (v === undefined || v === '') {
      const pos = locate(doc, lc, [...path, 'bearer_token_env']);
      throw new ConfigError(file, formatPath([...path, 'bearer_token_env']), `environment variable ${ref.bearer_token_env} is not set`, pos?.line, pos?.col);
    }
    return new Secret(v);
  }
  return undefined;
}

/**
 * Reads a file a config field names, now, so that an unreadable or empty file fails the (re)load
 * with the field and its line; FileSecret reads it again whenever it changes. The one way every
 * credential and certificate file of the config is read.
 */
function openFile(file: string, doc: Document, lc: LineCounter, path: (string | number)[], name: string, what: string): FileSecret {
  try {
    return FileSecret.open(name);
  } catch (e) {
    const pos = locate(doc, lc, path);
    throw new ConfigError(file, formatPath(path), `cannot read ${what} ${name}: ${(e as Error).message}`, pos?.line, pos?.col);
  }
}

/** tls_config, basic_auth, authorization and proxy_url of an upstream (bearer_token_* as authorization Bearer), files read. */
function resolveHttpClient(
  file: string,
  doc: Document,
  lc: LineCounter,
  path: (string | number)[],
  c: RawConfig['ray_clusters'][number],
  env: NodeJS.ProcessEnv,
): HttpClientConfig {
  const open = (field: string[], name: string, what: string) => openFile(file, doc, lc, [...path, ...field], name, what);
  const out: HttpClientConfig = {};
  const token = readCredential(file, doc, lc, path, c, env);
  if (token) out.authorization = { type: 'Bearer', credentials: token };
  if (c.authorization) {
    const credentials = open(['authorization', 'credentials_file'], c.authorization.credentials_file, 'credentials file');
    out.authorization = { type: c.authorization.type, credentials };
  }
  const b = c.basic_auth;
  if (b) {
    out.basicAuth = {
      username: b.username_file !== undefined ? open(['basic_auth', 'username_file'], b.username_file, 'username file') : new Secret(b.username ?? ''),
      password: b.password_file !== undefined ? open(['basic_auth', 'password_file'], b.password_file, 'password file') : undefined,
    };
  }
  const t = c.tls_config;
  if (t) {
    out.tls = {
      ca: t.ca_file !== undefined ? open(['tls_config', 'ca_file'], t.ca_file, 'CA file') : undefined,
      cert: t.cert_file !== undefined ? open(['tls_config', 'cert_file'], t.cert_file, 'certificate file') : undefined,
      key: t.key_file !== undefined ? open(['tls_config', 'key_file'], t.key_file, 'key file') : undefined,
      serverName: t.server_name,
      insecureSkipVerify: t.insecure_skip_verify,
      minVersion: t.min_version,
    };
    // What a connection does with them, now: a PEM that is not one or a key that does not match fails the load.
    const at = (field: string, problem: string) => {
      const pos = locate(doc, lc, [...path, 'tls_config', field]);
      return new ConfigError(file, formatPath([...path, 'tls_config', field]), problem, pos?.line, pos?.col);
    };
    const opts = tlsOptions(out) ?? {};
    if (t.ca_file !== undefined) {
      try {
        new crypto.X509Certificate(String(opts.ca));
      } catch (e) {
        throw at('ca_file', `no PEM certificate in CA file ${t.ca_file}: ${(e as Error).message}`);
      }
    }
    try {
      tls.createSecureContext(opts);
      if (opts.cert !== undefined) new crypto.X509Certificate(String(opts.cert));
    } catch (e) {
      throw at('cert_file', `cannot use the certificate and key (${t.cert_file}, ${t.key_file}): ${(e as Error).message}`);
    }
  }
  if (c.proxy_url !== undefined) out.proxyUrl = c.proxy_url;
  return out;
}

/** Loads, validates and resolves a config file. Throws ConfigError (never a raw exception). */
export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): Config {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(file, '', `cannot read config file: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const { value: raw, doc, lc } = parseYamlConfig(file, text, configSchema);
  const names = new Set<string>();
  const rayClusters = raw.ray_clusters.map((c, i): RayClusterConfig => {
    if (names.has(c.name)) {
      const pos = locate(doc, lc, ['ray_clusters', i, 'name']);
      throw new ConfigError(file, `ray_clusters[${i}].name`, `duplicate cluster name "${c.name}"`, pos?.line, pos?.col);
    }
    names.add(c.name);
    return {
      name: c.name,
      dashboardUrl: c.dashboard_url.replace(/\/+$/, ''),
      http: resolveHttpClient(file, doc, lc, ['ray_clusters', i], c, env),
      intervalMs: durationMs(c.interval ?? raw.global.interval),
      timeoutMs: durationMs(c.timeout ?? raw.global.timeout),
      maxResponseBytes: c.max_response_bytes,
      maxApps: c.max_apps,
      proxyProbe: { enabled: c.proxy_probe.enabled, timeoutMs: durationMs(c.proxy_probe.timeout) },
    };
  });
  const rawServers = raw.hypha === undefined ? [] : Array.isArray(raw.hypha) ? raw.hypha : [raw.hypha];
  const hyphaServers = rawServers.map((h, i): HyphaServerConfig => {
    const path = Array.isArray(raw.hypha) ? ['hypha', i] : ['hypha'];
    if (rawServers.findIndex((o) => o.name === h.name) !== i) {
      const pos = locate(doc, lc, [...path, 'name']);
      throw new ConfigError(file, formatPath([...path, 'name']), `duplicate Hypha server name "${h.name}"`, pos?.line, pos?.col);
    }
    const token = readCredential(file, doc, lc, path, h, env);
    return { name: h.name, serverUrl: h.server_url, workspace: h.workspace, token };
  });
  const watchedServices = resolveWatchedServices(raw.watched_services, raw.global);
  const unknownServer = raw.watched_services.findIndex((w) => w.hypha !== undefined && !hyphaServers.some((h) => h.name === w.hypha));
  if (unknownServer >= 0) {
    const path = ['watched_services', unknownServer, 'hypha'];
    const pos = locate(doc, lc, path);
    throw new ConfigError(file, formatPath(path), `no hypha server is named "${raw.watched_services[unknownServer].hypha}"`, pos?.line, pos?.col);
  }
  const problem = checkHyphaRegistration(raw.hypha_registration, rayClusters.map((c) => c.name), hyphaServers.map((h) => h.name));
  if (problem) {
    const pos = locate(doc, lc, problem.path);
    throw new ConfigError(file, formatPath(problem.path), problem.problem, pos?.line, pos?.col);
  }
  const hyphaRegistration = resolveHyphaRegistration(raw.hypha_registration, raw.global);
  return { file, raw, rayClusters, hyphaServers, hypha: hyphaServers[0], watchedServices, hyphaRegistration };
}
