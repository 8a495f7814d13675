import { spawn, ChildProcess, SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../src/util/repo-root';

/**
 * A child process started in its own process group, with output teed to a log
 * file, that is ended by PID (the whole group) on stop() and at test-process exit.
 */
export interface Proc {
  name: string;
  child: ChildProcess;
  pid: number;
  logFile: string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<number | string>;
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
  /** Everything written to stdout/stderr so far. */
  output(): string;
}

const live = new Set<Proc>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  const killAll = () => {
    for (const p of live) {
      try { process.kill(-p.pid, 'SIGKILL'); } catch { /* already gone */ }
    }
  };
  process.on('exit', killAll);
}

export function artifactsDir(): string {
  const d = path.join(repoRoot(), "test-artifacts");
  fs.mkdirSync(d, { recursive: true });
  return d;
}

export function startProc(name: string, cmd: string, args: string[], opts: SpawnOptions = {}): Proc {
  installExitHook();
  // The pid keeps two test lanes that start a peer of the same name in one millisecond apart.
  const logFile = path.join(artifactsDir(), `${name}-${Date.now()}-${process.pid}.log`);
  const log = fs.createWriteStream(logFile);
  const child = spawn(cmd, args, { ...opts, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`failed to start ${name}: ${cmd}`);
  let buf = '';
  const onData = (d: Buffer) => {
    // Output can still arrive after 'exit' (stdio drains later), when stop() has ended the log.
    if (!log.writableEnded) log.write(d);
    if (buf.length < 4_000_000) buf += d.toString('utf8');
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, sig) => {
      resolve(code ?? sig ?? 'unknown');
    });
  });
  // A process leaked by a failed setup must not keep the test runner alive (jest would wait for
  // it forever and CI would hit its time limit): the exit hook above still kills its group.
  child.unref();
  for (const s of [child.stdout, child.stderr]) (s as (NodeJS.ReadableStream & { unref?: () => void }) | null)?.unref?.();
  const pid = child.pid;
  const proc: Proc = {
    name, child, pid, logFile, exited,
    output: () => buf,
    async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) { live.delete(proc); return; }
      try { process.kill(-pid, signal); } catch { /* gone */ }
      const t = setTimeout(() => { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } }, graceMs);
      await exited;
      clearTimeout(t);
      // Children that escaped the leader's exit still belong to the group.
      try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
      live.delete(proc);
      log.end();
    },
  };
  live.add(proc);
  return proc;
}

/**
 * Starts peers concurrently; when one fails, stops those that started before rethrowing, so a
 * failed setup leaves no Ray or Hypha running for the rest of the suite.
 */
export async function startTogether<T extends readonly unknown[] | []>(
  starts: T,
): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled: PromiseSettledResult<unknown>[] = await Promise.allSettled(starts as readonly unknown[]);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    for (const s of settled) {
      if (s.status !== 'fulfilled') continue;
      const peer = s.value as { stop?: () => Promise<unknown>; close?: () => Promise<unknown> };
      await (peer.stop ?? peer.close)?.call(peer).catch(() => undefined);
    }
    throw failed.reason;
  }
  return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as { -readonly [K in keyof T]: Awaited<T[K]> };
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs: number,
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
