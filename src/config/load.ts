import fs from 'node:fs';
import { Document, LineCounter, parseDocument, isNode, isMap, isPair, isScalar } from 'yaml';
import type { ZodType } from 'zod';
import { configSchema, RawConfig } from './schema';
import { resolveWatchedServices, WatchedServiceConfig } from './services-schema';
import { checkHyphaRegistration, HyphaRegistrationConfig, resolveHyphaRegistration } from './hypha-schema';
import { parseDuration } from '../util/duration';
import { Secret } from '../util/secret';

export interface RayClusterConfig {
  name: string;
  dashboardUrl: string;
  token?: Secret;
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
  hypha?: HyphaServerConfig;
  /** Watched services (issue 4); sampled only when `hypha` is configured. */
  watchedServices: WatchedServiceConfig[];
  /** Expected Hypha registrations (issue 3); sampled only when `hypha` is configured. */
  hyphaRegistration: HyphaRegistrationConfig;
  /** Every credential the config holds, for scrubbing upstream error texts. */
  secrets: Secret[];
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
function locate(
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
    const issue = result.error.issues.find((i) => i.code === 'unrecognized_keys') ?? result.error.issues[0];
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

function ms(d: string): number {
  const v = parseDuration(d);
  if (v === undefined) throw new Error(`invalid duration ${d}`); // schema already refused it
  return v;
}

/** Reads a credential named by *_file or *_env; a missing file or variable is a config error. */
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
  if (ref.bearer_token_file !== undefined) {
    try {
      const v = fs.readFileSync(ref.bearer_token_file, 'utf8').trim();
      if (v === '') throw new Error('file is empty');
      return new Secret(v);
    } catch (e) {
      const pos = locate(doc, lc, [...path, 'bearer_token_file']);
      const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      throw new ConfigError(file, formatPath([...path, 'bearer_token_file']), `cannot read token file ${ref.bearer_token_file}: ${why}`, pos?.line, pos?.col);
    }
  }
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

/** Loads, validates and resolves a config file. Throws ConfigError (never a raw exception). */
export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): Config {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(file, '', `cannot read config file: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const { value: raw, doc, lc } = parseYamlConfig(file, text, configSchema);
  const secrets: Secret[] = [];
  const names = new Set<string>();
  const rayClusters = raw.ray_clusters.map((c, i): RayClusterConfig => {
    if (names.has(c.name)) {
      const pos = locate(doc, lc, ['ray_clusters', i, 'name']);
      throw new ConfigError(file, `ray_clusters[${i}].name`, `duplicate cluster name "${c.name}"`, pos?.line, pos?.col);
    }
    names.add(c.name);
    const token = readCredential(file, doc, lc, ['ray_clusters', i], c, env);
    if (token) secrets.push(token);
    return {
      name: c.name,
      dashboardUrl: c.dashboard_url.replace(/\/+$/, ''),
      token,
      intervalMs: ms(c.interval ?? raw.global.interval),
      timeoutMs: ms(c.timeout ?? raw.global.timeout),
      maxResponseBytes: c.max_response_bytes,
      maxApps: c.max_apps,
      proxyProbe: { enabled: c.proxy_probe.enabled, timeoutMs: ms(c.proxy_probe.timeout) },
    };
  });
  let hypha: HyphaServerConfig | undefined;
  if (raw.hypha) {
    const token = readCredential(file, doc, lc, ['hypha'], raw.hypha, env);
    if (token) secrets.push(token);
    hypha = { name: raw.hypha.name, serverUrl: raw.hypha.server_url, workspace: raw.hypha.workspace, token };
  }
  const watchedServices = resolveWatchedServices(raw.watched_services, raw.global);
  const problem = checkHyphaRegistration(raw.hypha_registration, rayClusters.map((c) => c.name));
  if (problem) {
    const pos = locate(doc, lc, problem.path);
    throw new ConfigError(file, formatPath(problem.path), problem.problem, pos?.line, pos?.col);
  }
  const hyphaRegistration = resolveHyphaRegistration(raw.hypha_registration, raw.global);
  return { file, raw, rayClusters, hypha, watchedServices, hyphaRegistration, secrets };
}
