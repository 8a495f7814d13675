// `hypha-serve-exporter rules`: the alerting-rules pack rendered from the rule model (mixin/*.ts, shipped
// compiled in dist/mixin) with a user's mixin config, so a variant needs neither a git checkout nor TypeScript.
// The renderer is the one that writes the shipped rules (mixin/build.ts renderAll), never a copy.
import fs from 'node:fs';
import path from 'node:path';
import type { RulesFlags } from './flags';

/** Writes the variant's files; returns the exit code (2: a mixin config the model refuses, with the file and key). */
export async function runRules(flags: RulesFlags, out: (text: string) => void, err: (text: string) => void): Promise<number> {
  const [{ loadMixinConfig }, { renderAll }, { repoRoot }] = await Promise.all([
    import('../../mixin/config'), import('../../mixin/build'), import('../util/repo-root'),
  ]);
  // The package root (its package.json): where the shipped rules/config/mixin.yml is.
  const root = repoRoot();
  let files: Map<string, string>;
  try {
    const config = loadMixinConfig(root, flags.config === undefined ? undefined : path.resolve(flags.config));
    files = renderAll(root, config, path.resolve(flags.out));
  } catch (e) {
    err(`hypha-serve-exporter rules: ${(e as Error).message}\n`);
    return 2;
  }
  for (const [file, text] of files) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
    const rel = path.relative(process.cwd(), file);
    out(`wrote ${rel.startsWith('..') ? file : rel}\n`);
  }
  return 0;
}
