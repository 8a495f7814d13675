import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

function findPackageJson(): { version: string } {
  let d = __dirname;
  for (let i = 0; i < 5; i++) {
    const p = path.join(d, 'package.json');
    if (fs.existsSync(p)) return JSON.parse(fs.readFileSync(p, 'utf8')) as { version: string };
    d = path.dirname(d);
  }
  return { version: '0.0.0' };
}

function gitRevision(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: __dirname, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return 'unknown';
  }
}

export const VERSION = findPackageJson().version;
export const REVISION = process.env.HYPHA_SERVE_EXPORTER_REVISION ?? gitRevision();
