import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

/** The directory of this package's package.json (the checkout, or the installed package). */
function packageRoot(): string | undefined {
  let d = __dirname;
  for (let i = 0; i < 5; i++) {
    if (fs.existsSync(path.join(d, 'package.json'))) return d;
    d = path.dirname(d);
  }
  return undefined;
}

const ROOT = packageRoot();

function packageVersion(): string {
  if (ROOT === undefined) return '0.0.0';
  return (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

function gitRevision(): string {
  // Only a checkout of this repository has a revision of its own: installed with npm inside some
  // other work tree, `git rev-parse` would report that tree's HEAD.
  if (ROOT === undefined || !fs.existsSync(path.join(ROOT, '.git'))) return 'unknown';
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return 'unknown';
  }
}

export const VERSION = packageVersion();
export const REVISION = process.env.HYPHA_SERVE_EXPORTER_REVISION ?? gitRevision();
