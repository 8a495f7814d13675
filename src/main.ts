#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=1 --optimize-for-size
import { missingMemorySettings } from './cli/memory-settings';
import { checkUsage, FlagError, parseCheckFlags, Flags, parseFlags, parseListenAddress, parseRulesFlags, rulesUsage, usage } from './cli/flags';
import { VERSION, REVISION } from './util/version';
import type { WebConfigReloader } from './server/web-config-reloader';

// Line 1 starts node with the memory settings (src/cli/memory-settings.ts; INTERPRETER_LINE there
// and a unit test keep the two equal). Only the flags are loaded up front: --help, --version and
// check need nothing else, so the rest is imported where it is used.

function fail(message: string): never {
  process.stderr.write(`hypha-serve-exporter: error: ${message}\n`);
  process.exit(2);
}

/** `hypha-serve-exporter check ...`: one sample of every source, a report, an exit code (src/cli/check.ts). */
async function check(argv: readonly string[]): Promise<never> {
  let flags;
  try {
    flags = parseCheckFlags(argv);
  } catch (e) {
    if (e instanceof FlagError) fail(`${e.message} (see check --help)`);
    throw e;
  }
  if (flags.help) {
    process.stdout.write(checkUsage());
    process.exit(0);
  }
  const { runCheck } = await import('./cli/check');
  const code = await runCheck(flags, (t) => process.stdout.write(t), (t) => process.stderr.write(t));
  // Exit at once: an upstream client still closing must not hold the answer back.
  process.exit(code);
}

/** `hypha-serve-exporter rules ...`: the alerting-rules pack with the user's mixin config (src/cli/rules.ts). */
async function rules(argv: readonly string[]): Promise<never> {
  let flags;
  try {
    flags = parseRulesFlags(argv);
  } catch (e) {
    if (e instanceof FlagError) fail(`${e.message} (see rules --help)`);
    throw e;
  }
  if (flags.help) {
    process.stdout.write(rulesUsage());
    process.exit(0);
  }
  const { runRules } = await import('./cli/rules');
  process.exit(await runRules(flags, (t) => process.stdout.write(t), (t) => process.stderr.write(t)));
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === 'check') return check(args.slice(1));
  if (args[0] === 'rules') return rules(args.slice(1));
  let flags;
  try {
    flags = parseFlags(args);
  } catch (e) {
    if (e instanceof FlagError) fail(`${e.message} (see --help)`);
    throw e;
  }
  if (flags.help) {
    process.stdout.write(usage());
    return;
  }
  if (flags.version) {
    process.stdout.write(`hypha-serve-exporter ${VERSION} (revision ${REVISION}, node ${process.version})\n`);
    return;
  }
  if (flags.configCheck) {
    const { checkConfigFile } = await import('./cli/check');
    const r = checkConfigFile(flags.configFile);
    if (!r.ok) fail(r.error);
    process.stdout.write(`${r.summary}\n`);
    return;
  }
  const missing = missingMemorySettings(process.env, process.execArgv);
  if (missing.length > 0) {
    const { createLogger } = await import('./util/log');
    createLogger(flags.logLevel).info({ missing }, 'started without the bin\'s memory settings (plain `node`?): Node\'s defaults hold about 1.5× the '
      + 'memory; run the hypha-serve-exporter bin itself, or node with them (docs/install.md#memory)');
  }
  return serve(flags);
}

async function serve(flags: Flags): Promise<void> {
  const [{ ConfigError }, { Exporter }, { createLogger }, { createApp }, reloading, { listen }, { BcryptWorker }, { gateFor }] = await Promise.all([
    import('./config/load'), import('./exporter/exporter'), import('./util/log'), import('./server/app'), import('./server/web-config-reloader'),
    import('./server/listen'), import('./server/bcrypt-worker'), import('./server/web-gate'),
  ]);
  const log = createLogger(flags.logLevel);
  let web: WebConfigReloader | undefined;
  if (flags.webConfigFile !== undefined) {
    try {
      web = new reloading.WebConfigReloader(flags.webConfigFile, log);
    } catch (e) {
      if (e instanceof ConfigError) fail(e.message);
      throw e;
    }
  }
  const filter = { allow: flags.metricAllowlist, deny: flags.metricDenylist };
  const exporter = new Exporter({ configFile: flags.configFile, log, storagePath: flags.storagePath, filter });
  try {
    exporter.start();
  } catch (e) {
    if (e instanceof ConfigError) fail(e.message);
    throw e;
  }
  const { host, port } = parseListenAddress(flags.listenAddress);
  // bcrypt on its own thread (server/bcrypt-worker.ts), started only when a web config is given.
  const bcrypt = web ? new BcryptWorker() : undefined;
  const app = createApp(exporter, log, { gate: web && bcrypt ? gateFor(web, bcrypt) : undefined });
  const limits = { headerTimeoutMs: flags.webHeaderTimeoutMs, maxConnections: flags.webMaxConnections };
  const { server } = await listen(app, log, { host, port, web, ...limits })
    .catch((e: Error) => fail(`cannot listen on ${flags.listenAddress}: ${e.message}`));
  web?.start();
  const addr = server.address();
  const served = web?.current;
  log.info({
    address: typeof addr === 'object' && addr ? `${addr.address}:${addr.port}` : String(addr), tls: served?.tls !== undefined,
    basic_auth: served?.users !== undefined && served.users.size > 0, version: VERSION,
  }, 'listening');

  process.on('SIGHUP', () => {
    log.info('SIGHUP received, reloading configuration');
    exporter.reload();
    web?.check();
  });
  let stopping = false;
  const shutdown = (sig: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, 'shutting down');
    server.close();
    server.closeAllConnections();
    web?.stop();
    void Promise.all([exporter.stop(), bcrypt?.close()]).finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 5000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((e: unknown) => {
  process.stderr.write(`hypha-serve-exporter: fatal: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
