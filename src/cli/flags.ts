import { LOG_LEVELS, LogLevel } from '../log';

export const DEFAULT_LISTEN_ADDRESS = ':9731';

export interface Flags {
  configFile: string;
  listenAddress: string;
  webConfigFile?: string;
  /** Directory for the state that must survive a restart; undefined = memory only. */
  storagePath?: string;
  logLevel: LogLevel;
  /** --metric-allowlist / --metric-denylist: anchored regexes on metric family names. */
  metricAllowlist?: RegExp[];
  metricDenylist?: RegExp[];
  help: boolean;
  version: boolean;
}

export class FlagError extends Error {}

interface FlagSpec {
  name: string;
  help: string;
  default?: string;
  boolean?: boolean;
}

export const FLAG_SPECS: FlagSpec[] = [
  { name: 'config.file', help: 'Path to the YAML configuration file.', default: 'hypha-serve-exporter.yml' },
  { name: 'web.listen-address', help: 'Address to listen on for /metrics and the status page ([host]:port).', default: DEFAULT_LISTEN_ADDRESS },
  { name: 'web.config.file', help: 'Path to a web configuration file (exporter-toolkit format) enabling TLS and/or basic authentication.' },
  { name: 'storage.path', help: 'Directory where the state that must survive a restart is kept (stale-proxy witnesses, registration history). Unset: memory only, and a restart ends an incident-2 page and forgets why apps are missing.' },
  { name: 'log.level', help: `Only log messages with the given severity or above: ${LOG_LEVELS.join(', ')}.`, default: 'info' },
  { name: 'metric-allowlist', help: 'Comma-separated regexes (anchored) of metric family names to expose; all others are dropped.' },
  { name: 'metric-denylist', help: 'Comma-separated regexes (anchored) of metric family names to drop; wins over the allowlist.' },
  { name: 'help', help: 'Show this help and exit.', boolean: true },
  { name: 'version', help: 'Show the version and exit.', boolean: true },
];

export function usage(): string {
  const lines = ['usage: hypha-serve-exporter [<flags>]', '', 'Prometheus exporter for Ray Serve applications and their Hypha service registrations.', '', 'Flags:'];
  for (const f of FLAG_SPECS) {
    const left = f.boolean ? `  --${f.name}` : `  --${f.name}=${f.name.split('.').pop()?.toUpperCase()}`;
    lines.push(`${left.padEnd(40)} ${f.help}${f.default !== undefined ? ` (default: ${f.default})` : ''}`);
  }
  return lines.join('\n') + '\n';
}

/** Parses Prometheus-style flags (--name=value or --name value, single or double dash). */
export function parseFlags(argv: readonly string[]): Flags {
  const values = new Map<string, string>();
  for (const f of FLAG_SPECS) if (f.default !== undefined) values.set(f.name, f.default);
  const bools = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const m = /^--?([a-z][a-z0-9.-]*)(?:=(.*))?$/s.exec(arg);
    if (!m) throw new FlagError(`unexpected argument "${arg}"`);
    const [, name, inline] = m;
    const spec = FLAG_SPECS.find((f) => f.name === name);
    if (!spec) throw new FlagError(`unknown flag --${name}`);
    if (spec.boolean) {
      if (inline !== undefined && inline !== 'true' && inline !== 'false') throw new FlagError(`--${name} takes no value`);
      if (inline !== 'false') bools.add(name);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new FlagError(`flag --${name} needs a value`);
    }
    values.set(name, value);
  }
  const logLevel = values.get('log.level') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new FlagError(`--log.level: "${logLevel}" is not one of ${LOG_LEVELS.join(', ')}`);
  }
  const listenAddress = values.get('web.listen-address') ?? DEFAULT_LISTEN_ADDRESS;
  parseListenAddress(listenAddress);
  return {
    configFile: values.get('config.file') ?? 'hypha-serve-exporter.yml',
    listenAddress,
    webConfigFile: values.get('web.config.file'),
    storagePath: values.get('storage.path') || undefined,
    logLevel: logLevel as LogLevel,
    metricAllowlist: familyPatterns('metric-allowlist', values.get('metric-allowlist')),
    metricDenylist: familyPatterns('metric-denylist', values.get('metric-denylist')),
    help: bools.has('help'),
    version: bools.has('version'),
  };
}

/** "a,b.*" → [/^(?:a)$/, /^(?:b.*)$/], as kube-state-metrics reads its metric lists. */
export function familyPatterns(flag: string, value: string | undefined): RegExp[] | undefined {
  if (value === undefined) return undefined;
  return value.split(',').map((p) => p.trim()).filter((p) => p !== '').map((p) => {
    try {
      return new RegExp(`^(?:${p})$`);
    } catch (e) {
      throw new FlagError(`--${flag}: "${p}" is not a valid regular expression (${(e as Error).message})`);
    }
  });
}

/** "[host]:port" → host (undefined = all interfaces) and port. */
export function parseListenAddress(addr: string): { host?: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(addr);
  if (!m) throw new FlagError(`--web.listen-address: "${addr}" is not [host]:port`);
  const port = Number(m[3]);
  if (port > 65535) throw new FlagError(`--web.listen-address: port ${port} is out of range`);
  const host = m[1] ?? m[2];
  return { host: host === '' ? undefined : host, port };
}
