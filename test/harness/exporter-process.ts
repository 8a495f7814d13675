/**
 * The one way tests start the exporter as a process: the production bin (dist/src/main.js, built by
 * ensureBuilt when older than src/) on a loopback port, its output teed to test-artifacts/ (Proc), ended by
 * PID. Every test and harness that needs the real process (the stacks, restarts, start-up races) goes through
 * spawnExporter; a one-shot run of the CLI (test/helpers/cli.ts runCli) through the same bin and build.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports';
import { Proc, startProc, waitFor } from './proc';
import { repoRoot } from '../../src/util/repo-root';

export const EXPORTER_BIN = path.join(repoRoot(), 'dist', 'src', 'main.js');

let checked = false;

/**
 * The compiled bin (EXPORTER_BIN); builds it (tsc) when missing or older than a file under src/. Checked once per
 * test process (its first start), so a later start in the middle of a scenario never waits on a build.
 */
export function ensureBuilt(): string {
  if (checked) return EXPORTER_BIN;
  // scripts/: the rule model the bin's `rules` subcommand renders.
  const newest = Math.max(newestMtime(path.join(repoRoot(), 'src')), newestMtime(path.join(repoRoot(), 'scripts')));
  if (!fs.existsSync(EXPORTER_BIN) || fs.statSync(EXPORTER_BIN).mtimeMs < newest) {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: repoRoot(), stdio: 'inherit' });
  }
  checked = true;
  return EXPORTER_BIN;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** The command that runs the bin as installed (its interpreter line), built first when stale. */
export function exporterCommand(): [string, string[]] {
  return interpreterCommand(ensureBuilt());
}

/**
 * The command the kernel runs for a script: its interpreter line (`#!interpreter optional-arg`) with the
 * script's path after it. The bin's line is env(1) with the memory settings (src/cli/memory-settings.ts),
 * so the exporter runs as installed, one process, without needing the mode bit tsc does not set.
 */
function interpreterCommand(script: string): [string, string[]] {
  const m = /^#!\s*(\S+)(?:\s+(.*?))?\s*$/.exec(fs.readFileSync(script, 'utf8').split('\n', 1)[0]);
  if (!m) throw new Error(`${script} has no interpreter line`);
  return [m[1], [...(m[2] ? [m[2]] : []), script]];
}

export interface ExporterProcessOptions {
  /** Names the process and its log file under test-artifacts/. */
  name: string;
  /** A config text (written to a temp dir removed on stop) or an existing config file. */
  config: string | { file: string };
  /** Added to the base environment (tokens named by `*_env`). */
  env?: NodeJS.ProcessEnv;
  /** The environment `env` is added to (default: this process's; the memory bench passes a plain one). */
  baseEnv?: NodeJS.ProcessEnv;
  /** --storage.path (default: none, memory only). */
  storagePath?: string;
  /** --log.level (default debug: the log file is what a failed test leaves to read). */
  logLevel?: string;
  /** The address it listens on (default 127.0.0.1; Kubernetes endpoints refuse loopback addresses). */
  host?: string;
  /** A fixed port (a restart on the address Prometheus scrapes); default a free one. */
  port?: number;
  /** More flags, e.g. --metric-denylist=... */
  args?: string[];
  /** Resolve once /-/ready answers 200 (default); false: as soon as it is spawned (start-up races). */
  waitReady?: boolean;
  readyTimeoutMs?: number;
}

export interface ExporterProcess {
  name: string;
  /** http://127.0.0.1:port */
  url: string;
  port: number;
  /** host:port, the `instance` label Prometheus gives it. */
  instance: string;
  configFile: string;
  proc: Proc;
  /** SIGHUP: the exporter re-reads its config file. */
  reload(): void;
  /** SIGTERM (a clean shutdown that flushes --storage.path), then removes a temp config. */
  stop(): Promise<void>;
  /** SIGKILL: a crash, not a clean shutdown. */
  kill(): Promise<void>;
}

export async function spawnExporter(o: ExporterProcessOptions): Promise<ExporterProcess> {
  const tmp = typeof o.config === 'string' ? fs.mkdtempSync(path.join(os.tmpdir(), `${o.name}-`)) : undefined;
  const configFile = tmp === undefined ? (o.config as { file: string }).file : path.join(tmp, 'exporter.yml');
  if (tmp !== undefined) fs.writeFileSync(configFile, o.config as string);
  const cleanup = () => {
    if (tmp !== undefined) fs.rmSync(tmp, { recursive: true, force: true });
  };
  const port = o.port ?? (await freePort());
  const [command, bin] = exporterCommand();
  const proc = startProc(o.name, command, [
    ...bin, `--config.file=${configFile}`, `--web.listen-address=${o.host ?? '127.0.0.1'}:${port}`, `--log.level=${o.logLevel ?? 'debug'}`,
    ...(o.storagePath === undefined ? [] : [`--storage.path=${o.storagePath}`]),
    ...(o.args ?? []),
  ], { env: { ...(o.baseEnv ?? process.env), ...o.env } });
  const url = `http://${o.host ?? '127.0.0.1'}:${port}`;
  if (o.waitReady !== false) {
    try {
      // An exit ends the wait at once (waitFor retries what throws, so it is a result here, not an error).
      const state = await waitFor(`${o.name} ready`, async () => {
        if (proc.child.exitCode !== null) return 'exited';
        return (await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2000) })).ok ? 'ready' : undefined;
      }, o.readyTimeoutMs ?? 90_000, 250);
      if (state === 'exited') throw new Error(`${o.name} exited (${proc.child.exitCode}): ${proc.output().slice(-2000)}`);
    } catch (e) {
      await proc.stop();
      cleanup();
      throw e;
    }
  }
  return {
    name: o.name, url, port, instance: `${o.host ?? '127.0.0.1'}:${port}`, configFile, proc,
    reload: () => process.kill(proc.pid, 'SIGHUP'),
    async stop() { await proc.stop(); cleanup(); },
    async kill() { await proc.stop('SIGKILL'); },
  };
}
