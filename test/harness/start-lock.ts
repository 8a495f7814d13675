/**
 * One heavy start at a time on this machine, across the test lanes (separate jest processes).
 *
 * A Ray cluster's start spawns GCS, raylet, dashboard and its agents, each a Python process importing Ray: tens
 * of CPU seconds. When the three lanes began with a Ray start each on the 2 CI cores (load average 50-69),
 * `ray start` itself gave up ("Failed to get node info: Deadline Exceeded") or its dashboard did not answer within
 * 180 s, twice in a row. Taken one at a time, each start takes its 15-50 s and the others wait for it.
 *
 * The lock is a directory (mkdir is atomic) holding its owner's PID; a lock whose owner is gone is broken.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The owner's PID, or undefined while the owner has not written it yet (or the lock went away). */
function ownerOf(dir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, 'pid'), 'utf8'));
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function ageMs(dir: string): number {
  try {
    return Date.now() - fs.statSync(dir).mtimeMs;
  } catch {
    return 0;
  }
}

/** Where the lock `name` lives: one per user, shared by every jest process on the machine. */
export function startLockDir(name: string): string {
  return path.join(os.tmpdir(), `hse-${name}-${process.getuid?.() ?? 0}.lock`);
}

/**
 * Takes the machine-wide lock `name` and returns its release. Waits at most `maxWaitMs` for it, then goes on
 * without it: the lock is there to spread load, and a test that would otherwise hang must not.
 */
export async function acquireStartLock(name: string, maxWaitMs = 600_000): Promise<() => void> {
  const dir = startLockDir(name);
  const t0 = Date.now();
  let held = false;
  while (!held) {
    try {
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'pid'), String(process.pid));
      held = true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const owner = ownerOf(dir);
      // Its owner exited without releasing it (killed), or died between mkdir and writing its PID.
      if ((owner !== undefined && !alive(owner)) || (owner === undefined && ageMs(dir) > 30_000)) {
        fs.rmSync(dir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() - t0 > maxWaitMs) break;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const waited = Date.now() - t0;
  if (waited > 1_000) process.stderr.write(`[${name}] waited ${(waited / 1000).toFixed(1)} s for another start on this machine\n`);
  let released = false;
  return () => {
    if (released || !held) return;
    released = true;
    // Within one process the PID does not tell the holder apart; `released` does.
    fs.rmSync(dir, { recursive: true, force: true });
  };
}
