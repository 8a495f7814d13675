/**
 * Reports import cycles among the TypeScript files under a directory (default src/), type-only
 * imports included: a cycle of types is still a tangle a reader has to hold in their head.
 * `node dist/scripts/check-cycles.js [dir]` exits 1 and prints each cycle when there is one
 * (what `npx madge --circular` would report, without a network install).
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Relative imports and re-exports of one file, resolved to files. */
function importsOf(file: string): string[] {
  const src = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, false);
  const out: string[] = [];
  for (const st of src.statements) {
    const spec = (ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier) ? st.moduleSpecifier.text : undefined;
    if (!spec?.startsWith('.')) continue;
    const base = path.resolve(path.dirname(file), spec);
    const hit = [`${base}.ts`, path.join(base, 'index.ts')].find((p) => fs.existsSync(p));
    if (hit) out.push(hit);
  }
  return out;
}

/** Every elementary cycle found by a depth-first search, each reported once. */
export function findCycles(dir: string): string[][] {
  const graph = new Map(filesUnder(dir).map((f) => [f, importsOf(f)]));
  const cycles = new Map<string, string[]>();
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const g of graph.get(f) ?? []) {
      if (state.get(g) === 'open') {
        const cycle = stack.slice(stack.indexOf(g));
        const start = cycle.indexOf([...cycle].sort()[0]);
        const canon = [...cycle.slice(start), ...cycle.slice(0, start)];
        cycles.set(canon.join('>'), canon);
      } else if (!state.has(g)) visit(g);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of graph.keys()) if (!state.has(f)) visit(f);
  return [...cycles.values()];
}

if (require.main === module) {
  const dir = path.resolve(process.argv[2] ?? 'src');
  const cycles = findCycles(dir);
  for (const c of cycles) process.stdout.write(`cycle: ${[...c, c[0]].map((f) => path.relative(process.cwd(), f)).join(' -> ')}\n`);
  process.stdout.write(cycles.length === 0 ? `no import cycle in ${path.relative(process.cwd(), dir) || '.'}\n` : `${cycles.length} import cycle(s)\n`);
  process.exit(cycles.length === 0 ? 0 : 1);
}
