import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../src/util/repo-root';

/** The ```yaml blocks of docs/install.md, in order: what a user copies. */
function installDocYaml(): string[] {
  const doc = fs.readFileSync(path.join(repoRoot(), 'docs', 'install.md'), 'utf8');
  return [...doc.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((x) => x[1]);
}

/** The one yaml block of docs/install.md that starts with `first` and contains `containing`. */
export function installDocBlock(first: string, containing = ''): string {
  const b = installDocYaml().find((x) => x.startsWith(first) && x.includes(containing));
  if (b === undefined) throw new Error(`docs/install.md has no yaml block starting with ${first}${containing ? ` and containing ${containing}` : ''}`);
  return b;
}

/** The block without its YAML comments: what a loader reads of it. */
export function withoutComments(block: string): string {
  return block.split('\n').map((l) => l.replace(/(^|\s)#.*$/, '')).join('\n');
}
