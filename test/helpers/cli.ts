import { spawn } from 'node:child_process';
import { exporterCommand } from '../harness/exporter-process';

// The bin and its build are the process helper's (test/harness/exporter-process.ts), re-exported for the tests that build first.
export { ensureBuilt } from '../harness/exporter-process';

/** One run of the CLI to its exit, as installed: the bin's interpreter line, so the run has the memory settings (no start-up notice). */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const [command, bin] = exporterCommand();
    const p = spawn(command, [...bin, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
