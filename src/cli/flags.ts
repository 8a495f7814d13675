import { LOG_LEVELS, LogLevel } from '../util/log';
import { durationProblem, parseDuration } from '../util/duration';

export const DEFAULT_LISTEN_ADDRESS = ':9731';

export interface Flags {
  configFile: string;
  listenAddress: string;
  webConfigFile?: string;
  /** --web.header-timeout: from a connection's opening (TLS handshake included) to a whole request header. */
  webHeaderTimeoutMs: number;
  /** --web.max-connections: connections kept open at once (one more closes the oldest idle one). */
  webMaxConnections: number;
  /** Directory for the state that must survive a restart; undefined = memory only. */
  storagePath?: string;
  logLevel: LogLevel;
  /** --metric-allowlist / --metric-denylist: anchored regexes on metric family names. */
  metricAllowlist?: RegExp[];
  metricDenylist?: RegExp[];
  help: boolean;
  version: boolean;
  /** --config.check: validate the configuration and exit (0 valid, 2 not), as blackbox_exporter does. */
  configCheck: boolean;
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
  {
    name: 'web.config.file',
    help: 'Path to a web configuration file (exporter-toolkit format): TLS, client certificates, basic authentication, rate limit, '
      + 'response headers. Read again within a second when it or a file it names changes.',
  },
  {
    name: 'web.header-timeout',
    help: 'Longest time from a connection\'s opening (TLS handshake included) to a complete request header; slower connections are closed.',
    default: '10s',
  },
  {
    name: 'web.max-connections',
    help: 'Connections kept open at once; one more closes the oldest that is not being answered (or is refused if all are).',
    default: '1024',
  },
  {
    name: 'storage.path',
    help: 'Directory where the state that must survive a restart is kept (stale-proxy witnesses, registration history). '
      + 'Unset: memory only, and a restart ends an incident-2 page and forgets why apps are missing.',
  },
  { name: 'log.level', help: `Only log messages with the given severity or above: ${LOG_LEVELS.join(', ')}.`, default: 'info' },
  { name: 'metric-allowlist', help: 'Comma-separated regexes (anchored) of metric family names to expose; all others are dropped.' },
  { name: 'metric-denylist', help: 'Comma-separated regexes (anchored) of metric family names to drop; wins over the allowlist.' },
  {
    name: 'config.check', help: 'Validate the configuration file and exit: 0 if it is valid, 2 (with the file, line and field) if not. Contacts no upstream.',
    boolean: true,
  },
  { name: 'help', help: 'Show this help and exit.', boolean: true },
  { name: 'version', help: 'Show the version and exit.', boolean: true },
];

function flagLines(specs: readonly FlagSpec[]): string[] {
  return specs.map((f) => {
    const left = f.boolean ? `  --${f.name}` : `  --${f.name}=${f.name.split('.').pop()?.toUpperCase()}`;
    return `${left.padEnd(40)} ${f.help}${f.default !== undefined ? ` (default: ${f.default})` : ''}`;
  });
}

export function usage(): string {
  const lines = [
    'usage: hypha-serve-exporter [<flags>]',
    '       hypha-serve-exporter check [<flags>]',
    '       hypha-serve-exporter rules [<flags>]',
    '',
    'Prometheus exporter for Ray Serve applications and their Hypha service registrations.',
    '',
    'Commands:',
    `  ${'(none)'.padEnd(38)} Run the exporter.`,
    `  ${'check'.padEnd(38)} Sample every configured source once and say what is wrong now (see check --help).`,
    `  ${'rules'.padEnd(38)} Render the alerting-rules pack with your mixin config (see rules --help).`,
    '',
    'Flags:',
    ...flagLines(FLAG_SPECS),
  ];
  return lines.join('\n') + '\n';
}

/** --name=value / --name value pairs and set booleans, against one command's specs (defaults applied). */
function readFlags(argv: readonly string[], specs: readonly FlagSpec[]): { values: Map<string, string>; bools: Set<string> } {
  const values = new Map<string, string>();
  for (const f of specs) if (f.default !== undefined) values.set(f.name, f.default);
  const bools = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const m = /^--?([a-z][a-z0-9.-]*)(?:=(.*))?$/s.exec(arg);
    if (!m) throw new FlagError(`unexpected argument "${arg}"`);
    const [, name, inline] = m;
    const spec = specs.find((f) => f.name === name);
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
  return { values, bools };
}

/** A flag's duration, in Prometheus's grammar (as Prometheus's own duration flags), longer than 0. */
function positiveDuration(flag: string, text: string, examples = '10s or 500ms'): number {
  const problem = durationProblem(text);
  if (problem !== undefined) throw new FlagError(`--${flag}: ${problem}`);
  const ms = parseDuration(text) as number;
  if (ms <= 0) throw new FlagError(`--${flag}: "${text}" is not a positive duration such as ${examples}`);
  return ms;
}

function positiveInteger(flag: string, text: string): number {
  if (!/^[1-9]\d*$/.test(text)) throw new FlagError(`--${flag}: "${text}" is not a positive whole number`);
  return Number(text);
}

function logLevelOf(values: Map<string, string>): LogLevel {
  const logLevel = values.get('log.level') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new FlagError(`--log.level: "${logLevel}" is not one of ${LOG_LEVELS.join(', ')}`);
  }
  return logLevel as LogLevel;
}

/** Parses Prometheus-style flags (--name=value or --name value, single or double dash). */
export function parseFlags(argv: readonly string[]): Flags {
  const { values, bools } = readFlags(argv, FLAG_SPECS);
  const logLevel = logLevelOf(values);
  const listenAddress = values.get('web.listen-address') ?? DEFAULT_LISTEN_ADDRESS;
  parseListenAddress(listenAddress);
  return {
    configFile: values.get('config.file') ?? 'hypha-serve-exporter.yml',
    listenAddress,
    webConfigFile: values.get('web.config.file'),
    webHeaderTimeoutMs: positiveDuration('web.header-timeout', values.get('web.header-timeout') ?? '10s'),
    webMaxConnections: positiveInteger('web.max-connections', values.get('web.max-connections') ?? '1024'),
    storagePath: values.get('storage.path') || undefined,
    logLevel,
    metricAllowlist: familyPatterns('metric-allowlist', values.get('metric-allowlist')),
    metricDenylist: familyPatterns('metric-denylist', values.get('metric-denylist')),
    help: bools.has('help'),
    version: bools.has('version'),
    configCheck: bools.has('config.check'),
  };
}

// ---------------------------------------------------------------- check subcommand

export const CHECK_OUTPUTS = ['text', 'json'] as const;
export type CheckOutput = (typeof CHECK_OUTPUTS)[number];
export const DEFAULT_CHECK_TIMEOUT = '30s';

export interface CheckFlags {
  configFile: string;
  /** Read (never written): continues the running exporter's witnesses and registration history. */
  storagePath?: string;
  app?: string;
  output: CheckOutput;
  timeoutMs: number;
  logLevel: LogLevel;
  help: boolean;
}

export const CHECK_FLAG_SPECS: FlagSpec[] = [
  { name: 'config.file', help: 'Path to the YAML configuration file (the exporter\'s).', default: 'hypha-serve-exporter.yml' },
  {
    name: 'app',
    help: 'Only this Serve app (on every Ray cluster that has it): its Ray status, registration, cause, and the alert conditions about it or its cluster. '
      + 'Watched services are left out.',
  },
  { name: 'output', help: `Output format: ${CHECK_OUTPUTS.join(' or ')} (json: docs/check.md).`, default: 'text' },
  {
    name: 'timeout',
    help: 'Longest wait for every source\'s first sample and every judgement (e.g. a registration still settling); '
      + 'what is unknown then is printed, and the exit code is 2.',
    default: DEFAULT_CHECK_TIMEOUT,
  },
  {
    name: 'storage.path',
    help: 'The running exporter\'s --storage.path, read only: continues its stale-proxy witnesses (a fresh process has none) '
      + 'and registration history (causes). Never written.',
  },
  { name: 'log.level', help: `Log to stderr at this severity or above: ${LOG_LEVELS.join(', ')}.`, default: 'error' },
  { name: 'help', help: 'Show this help and exit.', boolean: true },
];

export function checkUsage(): string {
  return [
    'usage: hypha-serve-exporter check [<flags>]',
    '',
    'Samples every configured source once, with the exporter\'s own code, and prints per Serve app its Ray',
    'status, the expected Hypha service, whether it is registered and why not; per watched service its',
    'providers, the resolved client id and any stale cached one; and the critical alert conditions that hold now.',
    '',
    'Exit status: 0 no alert condition holds; 1 at least one holds; 2 a configuration or connection error',
    '(a source that cannot be read, an unknown --app, or a judgement still pending at --timeout).',
    '',
    'Flags:',
    ...flagLines(CHECK_FLAG_SPECS),
  ].join('\n') + '\n';
}

/** Flags of `hypha-serve-exporter check` (argv after the word "check"). */
export function parseCheckFlags(argv: readonly string[]): CheckFlags {
  const { values, bools } = readFlags(argv, CHECK_FLAG_SPECS);
  const output = values.get('output') ?? 'text';
  if (!(CHECK_OUTPUTS as readonly string[]).includes(output)) throw new FlagError(`--output: "${output}" is not one of ${CHECK_OUTPUTS.join(', ')}`);
  const timeout = values.get('timeout') ?? DEFAULT_CHECK_TIMEOUT;
  const timeoutMs = positiveDuration('timeout', timeout, '30s or 2m');
  const app = values.get('app');
  if (app === '') throw new FlagError('--app needs an app name');
  return {
    configFile: values.get('config.file') ?? 'hypha-serve-exporter.yml',
    storagePath: values.get('storage.path') || undefined,
    app,
    output: output as CheckOutput,
    timeoutMs,
    logLevel: logLevelOf(values),
    help: bools.has('help'),
  };
}

// ---------------------------------------------------------------- rules subcommand

export interface RulesFlags {
  /** The user's mixin config, merged over the shipped rules/config/mixin.yml; undefined: the shipped defaults. */
  config?: string;
  out: string;
  help: boolean;
}

export const RULES_FLAG_SPECS: FlagSpec[] = [
  { name: 'config', help: 'Your mixin config: only the keys you change (the package\'s rules/config/mixin.yml lists them all).' },
  { name: 'out', help: 'Directory to write recording.yml, alerts.yml, vmalert/*.yml and prometheusrule.yaml into (created if missing).', default: '.' },
  { name: 'help', help: 'Show this help and exit.', boolean: true },
];

export function rulesUsage(): string {
  return [
    'usage: hypha-serve-exporter rules [<flags>]',
    '',
    'Renders the alerting-rules pack from its rule model with your mixin config merged over the shipped one',
    '(rules/config/mixin.yml in the package; docs/alerts.md): the rule files for Prometheus (load both) and the',
    'same groups as a prometheus-operator PrometheusRule. The same renderer writes the shipped rules/*.yml.',
    '',
    'Exit status: 0 written; 2 a flag or mixin config error (with the file and the key).',
    '',
    'Flags:',
    ...flagLines(RULES_FLAG_SPECS),
  ].join('\n') + '\n';
}

/** Flags of `hypha-serve-exporter rules` (argv after the word "rules"). */
export function parseRulesFlags(argv: readonly string[]): RulesFlags {
  const { values, bools } = readFlags(argv, RULES_FLAG_SPECS);
  const config = values.get('config');
  if (config === '') throw new FlagError('--config needs a file');
  const out = values.get('out') ?? '.';
  if (out === '') throw new FlagError('--out needs a directory');
  return { config, out, help: bools.has('help') };
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
