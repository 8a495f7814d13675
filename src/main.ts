#!/usr/bin/env node
import type { Server } from 'node:http';
import { memoryRelaunch, relaunch, watchParent } from './cli/relaunch';
import { checkUsage, FlagError, parseCheckFlags, Flags, parseFlags, parseListenAddress, usage } from './cli/flags';
import type { WebConfig } from './server/web-config';
import { VERSION, REVISION } from './util/version';

// Only the flags are loaded before the memory relaunch (src/cli/relaunch.ts) is decided: the
// parent it may leave behind stays small, so the rest is imported where it is used.

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

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === 'check') return check(args.slice(1));
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
  const plan = memoryRelaunch(process.env, process.execArgv);
  if (plan) return relaunch(plan);
  watchParent();
  return serve(flags);
}

async function serve(flags: Flags): Promise<void> {
  const [http, https, { ConfigError }, { Exporter }, { createLogger }, { createApp }, { loadWebConfig }] = await Promise.all([
    import('node:http'), import('node:https'), import('./config/load'), import('./exporter/exporter'), import('./util/log'),
    import('./server/app'), import('./server/web-config'),
  ]);
  let web: WebConfig = {};
  if (flags.webConfigFile !== undefined) {
    try {
      web = loadWebConfig(flags.webConfigFile);
    } catch (e) {
      if (e instanceof ConfigError) fail(e.message);
      throw e;
    }
  }
  const log = createLogger(flags.logLevel);
  const filter = { allow: flags.metricAllowlist, deny: flags.metricDenylist };
  const exporter = new Exporter({ configFile: flags.configFile, log, storagePath: flags.storagePath, filter });
  try {
    exporter.start();
  } catch (e) {
    if (e instanceof ConfigError) fail(e.message);
    throw e;
  }
  const { host, port } = parseListenAddress(flags.listenAddress);
  const app = createApp(exporter, log, { users: web.users });
  const server = await new Promise<Server>((resolve, reject) => {
    const s: Server = web.tls ? https.createServer(web.tls, app) : http.createServer(app);
    s.on('error', reject);
    s.listen(port, host ?? '::', () => resolve(s));
  }).catch((e: Error) => fail(`cannot listen on ${flags.listenAddress}: ${e.message}`));
  const addr = server.address();
  log.info({
    address: typeof addr === 'object' && addr ? `${addr.address}:${addr.port}` : String(addr), tls: web.tls !== undefined, basic_auth: web.users !== undefined,
    version: VERSION,
  }, 'listening');

  process.on('SIGHUP', () => {
    log.info('SIGHUP received, reloading configuration');
    exporter.reload();
  });
  let stopping = false;
  const shutdown = (sig: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, 'shutting down');
    server.close();
    server.closeAllConnections();
    void exporter.stop().finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 5000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((e: unknown) => {
  process.stderr.write(`hypha-serve-exporter: fatal: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
