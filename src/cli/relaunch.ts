import { spawn } from 'node:child_process';

// Memory at plain defaults. At 1,000 apps the exporter holds ~180 MB resident under Node's
// defaults and ~90 MB with a 1 MB young generation and glibc's mmap threshold pinned at 128 KB
// (BENCHMARKS.md). Neither can be set from inside a running process: V8 sizes the semi-spaces at
// start (v8.setFlagsFromString was measured not to shrink them) and glibc reads
// MALLOC_MMAP_THRESHOLD_ once, before main. So the bin starts itself once more with them, unless
// they are in effect already (the image and the systemd unit set both) or the operator opted out.
// The relaunched process also gets --optimize-for-size (a slower-growing old generation: a few MB
// less, scrape times unchanged within the noise, bench/bin-memory.ts); Node refuses it in
// NODE_OPTIONS, so where the two settings above are set already it is not worth a second process.

/** Set in the relaunched process; set it by hand to run with Node's defaults (no relaunch). */
export const RELAUNCHED_ENV = 'HYPHA_SERVE_EXPORTER_RELAUNCHED';
const SEMI_SPACE_FLAG = '--max-semi-space-size=1';
const OPTIMIZE_FOR_SIZE_FLAG = '--optimize-for-size';
const MMAP_THRESHOLD = '131072';

export interface RelaunchPlan {
  execArgv: string[];
  env: NodeJS.ProcessEnv;
}

/** What to start instead of this process; undefined when the memory settings are in effect (or not wanted). */
export function memoryRelaunch(env: NodeJS.ProcessEnv, execArgv: readonly string[]): RelaunchPlan | undefined {
  if (env[RELAUNCHED_ENV] !== undefined) return undefined;
  const nodeOptions = (env.NODE_OPTIONS ?? '').split(/\s+/);
  const semiSpaceSet = [...execArgv, ...nodeOptions].some((a) => /^--max[-_]semi[-_]space[-_]size(=|$)/.test(a));
  const mmapSet = env.MALLOC_MMAP_THRESHOLD_ !== undefined;
  if (semiSpaceSet && mmapSet) return undefined;
  // The operator's own values win: only what is missing is added.
  const sizeSet = execArgv.some((a) => /^--(no-?)?optimize[-_]for[-_]size$/.test(a));
  return {
    execArgv: [...execArgv, ...(semiSpaceSet ? [] : [SEMI_SPACE_FLAG]), ...(sizeSet ? [] : [OPTIMIZE_FOR_SIZE_FLAG])],
    env: { ...env, [RELAUNCHED_ENV]: '1', ...(mmapSet ? {} : { MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD }) },
  };
}

const FORWARDED: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * Runs the same script and arguments with the plan's settings and never returns. Where Node has
 * process.execve (22.15+) the process image is replaced: same PID, nothing in between. Otherwise
 * this process stays as a thin parent: the child runs in its own process group so that each
 * signal reaches it once (forwarded from here, whether sent to this PID or to this group), this
 * process exits as the child did, and the child ends itself when this one is killed outright
 * (its IPC channel closes; see watchParent).
 */
export function relaunch(plan: RelaunchPlan): Promise<never> {
  const args = [...plan.execArgv, process.argv[1], ...process.argv.slice(2)];
  const execve = (process as unknown as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve;
  if (typeof execve === 'function') execve(process.execPath, [process.execPath, ...args], plan.env);
  return new Promise<never>((_resolve, reject) => {
    const child = spawn(process.execPath, args, { env: plan.env, stdio: ['inherit', 'inherit', 'inherit', 'ipc'], detached: true });
    for (const sig of FORWARDED) process.on(sig, () => child.kill(sig));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal) {
        // Die of the same signal, so that a supervisor sees what happened to the exporter.
        for (const sig of FORWARDED) process.removeAllListeners(sig);
        process.kill(process.pid, signal);
      }
      process.exit(code ?? 1);
    });
  });
}

/** In the relaunched child: when the parent is gone (killed outright), go too, as it did. */
export function watchParent(): void {
  if (process.env[RELAUNCHED_ENV] !== '1' || !process.channel) return;
  process.channel.unref();
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
}
