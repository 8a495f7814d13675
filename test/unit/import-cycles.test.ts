import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findCycles } from '../../scripts/check-cycles';

describe('import cycles (npm run check:cycles)', () => {
  it('src/ has none, type-only imports included', () => {
    const cycles = findCycles(path.join(__dirname, '..', '..', 'src')).map((c) => c.map((f) => path.relative(process.cwd(), f)));
    expect(cycles).toEqual([]);
  });

  it('finds a type-only cycle and a re-export cycle', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cyc-'));
    fs.writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b';\nexport interface A { b?: B }\n");
    fs.writeFileSync(path.join(dir, 'b.ts'), "import type { A } from './a';\nexport interface B { a?: A }\n");
    fs.writeFileSync(path.join(dir, 'c.ts'), "export * from './d';\n");
    fs.writeFileSync(path.join(dir, 'd.ts'), "export * from './c';\n");
    fs.writeFileSync(path.join(dir, 'e.ts'), "import { x } from './f';\nexport const e = x;\n");
    fs.writeFileSync(path.join(dir, 'f.ts'), 'export const x = 1;\n');
    const names = findCycles(dir).map((c) => c.map((f) => path.basename(f)).join(','));
    expect(names.sort()).toEqual(['a.ts,b.ts', 'c.ts,d.ts']);
  });
});
