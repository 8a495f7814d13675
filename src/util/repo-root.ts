import fs from 'node:fs';
import path from 'node:path';

/** The package root: the nearest directory with a package.json above this module (src/util or dist/src/util, checkout or install). */
export function repoRoot(): string {
  let d = __dirname;
  while (!fs.existsSync(path.join(d, 'package.json'))) {
    const up = path.dirname(d);
    if (up === d) throw new Error(`no package.json above ${__dirname}`);
    d = up;
  }
  return d;
}
