/**
 * Reports import cycles under a directory (default src/), type-only imports included: a cycle of
 * types is still a tangle a reader has to hold in their head. Two graphs are checked: the files,
 * and the folders (a file's folder imports the folders its imports resolve to), so two folders that
 * import each other through different files fail too: folders layer one way (docs/architecture.md).
 * `node dist/scripts/check-cycles.js [dir]` exits 1 and prints each cycle when there is one
 * (what `npx madge --circular` would report for files, without a network install).
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

/** The cycles of the file graph under dir (absolute paths). */
export function findCycles(dir: string): string[][] {
  return cyclesOf(new Map(filesUnder(dir).map((f) => [f, importsOf(f)])));
}

/** One import that makes a folder edge, kept to show where to cut it. */
export interface FolderEdge {
  from: string;
  to: string;
  /** The importing and the imported file, relative to dir. */
  example: [string, string];
}

/** Folder of a file relative to dir ('.' for dir itself). */
function folderOf(dir: string, file: string): string {
  return path.relative(dir, path.dirname(file)) || '.';
}

/** Edges between distinct folders under dir (relative paths), one per pair. */
export function folderEdges(dir: string): FolderEdge[] {
  const edges = new Map<string, FolderEdge>();
  for (const f of filesUnder(dir)) {
    for (const g of importsOf(f)) {
      const from = folderOf(dir, f);
      const to = folderOf(dir, g);
      const key = `${from}>${to}`;
      if (from !== to && !edges.has(key)) edges.set(key, { from, to, example: [path.relative(dir, f), path.relative(dir, g)] });
    }
  }
  return [...edges.values()];
}

/** The cycles of the folder graph under dir (folders relative to dir, '.' for dir itself). */
export function findFolderCycles(dir: string): string[][] {
  const graph = new Map<string, string[]>();
  for (const e of folderEdges(dir)) graph.set(e.from, [...(graph.get(e.from) ?? []), e.to]);
  return cyclesOf(graph);
}

/**
 * Folder imports that do not point to a lower layer. `layers` lists folders (relative to dir, '.'
 * for dir itself) top layer first; a folder may import only folders of layers below its own, and a
 * folder under dir that no layer names is reported as unplaced.
 */
export function layerViolations(dir: string, layers: readonly (readonly string[])[]): string[] {
  const layerOf = new Map<string, number>();
  layers.forEach((names, i) => names.forEach((n) => layerOf.set(n, i)));
  const out: string[] = [];
  const folders = new Set(filesUnder(dir).map((f) => folderOf(dir, f)));
  for (const f of [...folders].sort()) if (!layerOf.has(f)) out.push(`unplaced folder: ${f}`);
  for (const e of folderEdges(dir)) {
    const from = layerOf.get(e.from);
    const to = layerOf.get(e.to);
    if (from !== undefined && to !== undefined && to <= from) out.push(`${e.from} -> ${e.to} (${e.example[0]} imports ${e.example[1]})`);
  }
  return out;
}

/** Every elementary cycle found by a depth-first search, each reported once. */
function cyclesOf(graph: Map<string, string[]>): string[][] {
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
  const where = path.relative(process.cwd(), dir) || '.';
  const cycles = findCycles(dir);
  for (const c of cycles) process.stdout.write(`cycle: ${[...c, c[0]].map((f) => path.relative(process.cwd(), f)).join(' -> ')}\n`);
  const folderCycles = findFolderCycles(dir);
  const edges = folderEdges(dir);
  for (const c of folderCycles) {
    const ring = [...c, c[0]];
    const via = ring.slice(1).map((to, i) => edges.find((e) => e.from === ring[i] && e.to === to)?.example.join(' imports '));
    process.stdout.write(`folder cycle: ${ring.map((f) => path.join(where, f)).join(' -> ')}\n  via ${via.join('; ')}\n`);
  }
  process.stdout.write(cycles.length === 0 ? `no import cycle in ${where}\n` : `${cycles.length} import cycle(s)\n`);
  process.stdout.write(folderCycles.length === 0 ? `no folder cycle in ${where}\n` : `${folderCycles.length} folder cycle(s)\n`);
  process.exit(cycles.length === 0 && folderCycles.length === 0 ? 0 : 1);
}
