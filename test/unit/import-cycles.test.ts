import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findCycles, findFolderCycles, layerViolations } from '../../scripts/check-cycles';

describe('import cycles (npm run check:cycles)', () => {
  const dirs: string[] = [];
  const scratch = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cyc-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('src/ has none, type-only imports included', () => {
    const cycles = findCycles(path.join(__dirname, '..', '..', 'src')).map((c) => c.map((f) => path.relative(process.cwd(), f)));
    expect(cycles).toEqual([]);
  });

  it('finds a type-only cycle and a re-export cycle', () => {
    const dir = scratch();
    fs.writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b';\nexport interface A { b?: B }\n");
    fs.writeFileSync(path.join(dir, 'b.ts'), "import type { A } from './a';\nexport interface B { a?: A }\n");
    fs.writeFileSync(path.join(dir, 'c.ts'), "export * from './d';\n");
    fs.writeFileSync(path.join(dir, 'd.ts'), "export * from './c';\n");
    fs.writeFileSync(path.join(dir, 'e.ts'), "import { x } from './f';\nexport const e = x;\n");
    fs.writeFileSync(path.join(dir, 'f.ts'), 'export const x = 1;\n');
    const names = findCycles(dir).map((c) => c.map((f) => path.basename(f)).join(','));
    expect(names.sort()).toEqual(['a.ts,b.ts', 'c.ts,d.ts']);
  });

  it('src/ folders import one way: no folder cycle', () => {
    expect(findFolderCycles(path.join(__dirname, '..', '..', 'src'))).toEqual([]);
  });

  it('finds a folder cycle made of files that form no file cycle, type-only imports included', () => {
    const dir = scratch();
    for (const d of ['a', 'b', 'c']) fs.mkdirSync(path.join(dir, d));
    fs.writeFileSync(path.join(dir, 'a', 'x.ts'), "import type { Y } from '../b/y';\nexport type X = Y;\n");
    fs.writeFileSync(path.join(dir, 'b', 'y.ts'), 'export type Y = 1;\n');
    fs.writeFileSync(path.join(dir, 'b', 'z.ts'), "import { W } from '../a/w';\nexport const Z = W;\n");
    fs.writeFileSync(path.join(dir, 'a', 'w.ts'), 'export const W = 1;\n');
    // c imports a one way only: not part of any cycle
    fs.writeFileSync(path.join(dir, 'c', 'v.ts'), "import { W } from '../a/w';\nexport const V = W;\n");
    expect(findCycles(dir)).toEqual([]);
    expect(findFolderCycles(dir)).toEqual([['a', 'b']]);
    fs.rmSync(path.join(dir, 'b', 'z.ts'));
    expect(findFolderCycles(dir)).toEqual([]);
    fs.rmSync(dir, { recursive: true });
  });

  it('docs/architecture.md layers every src/ folder, and every folder imports only layers below it', () => {
    expect(layerViolations(path.join(__dirname, '..', '..', 'src'), documentedLayers())).toEqual([]);
  });

  it('reports an upward import and a folder no layer names', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lay-'));
    for (const d of ['low', 'high', 'stray']) fs.mkdirSync(path.join(dir, d));
    fs.writeFileSync(path.join(dir, 'low', 'l.ts'), "import type { H } from '../high/h';\nexport type L = H;\n");
    fs.writeFileSync(path.join(dir, 'high', 'h.ts'), 'export type H = 1;\n');
    fs.writeFileSync(path.join(dir, 'stray', 's.ts'), 'export const S = 1;\n');
    expect(layerViolations(dir, [['high'], ['low']])).toEqual(['unplaced folder: stray', 'low -> high (low/l.ts imports high/h.ts)']);
    expect(layerViolations(dir, [['low'], ['high', 'stray']])).toEqual([]);
    fs.rmSync(dir, { recursive: true });
  });
});

/**
 * The layers drawn in docs/architecture.md ("## Layers"), top first: each line of its diagram that
 * names src/ paths is one layer; a file (src/main.ts) stands for its folder.
 */
function documentedLayers(): string[][] {
  const doc = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'architecture.md'), 'utf8');
  const block = /## Layers[\s\S]*?```\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error('docs/architecture.md: no "## Layers" diagram');
  return block
    .split('\n')
    .map((line) => (line.match(/src\/[\w./-]*/g) ?? []).map((p) => {
      const folder = p.endsWith('.ts') ? path.posix.dirname(p) : p.replace(/\/$/, '');
      return path.posix.relative('src', folder) || '.';
    }))
    .filter((names) => names.length > 0);
}
