import fs from 'node:fs';
import path from 'node:path';

/** The repository's root: the nearest directory with a package.json above this module, run from scripts/lib or dist/scripts/lib. */
export function repoRoot(): string {
  let d = __dirname;
  while (!fs.existsSync(path.join(d, 'package.json'))) {
    const up = path.dirname(d);
    if (up === d) throw new Error(`no package.json above ${__dirname}`);
    d = up;
  }
  return d;
}
