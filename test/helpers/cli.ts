import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { EXPORTER_BIN as MAIN, interpreterCommand } from '../harness/exporter-process';

const root = path.resolve(__dirname, '..', '..');

/** The compiled CLI; builds it once if a test runs before the setup script did. */
export function ensureBuilt(): string {
  if (!fs.existsSync(MAIN) || fs.statSync(MAIN).mtimeMs < newestMtime(path.join(root, 'src'))) {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
  }
  return MAIN;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // As installed: through the bin's interpreter line, so the run has the memory settings (no start-up notice).
    const [command, bin] = interpreterCommand(ensureBuilt());
    const p = spawn(command, [...bin, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
