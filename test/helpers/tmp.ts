import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A fresh temp directory, removed by the returned cleanup. */
export function tmpDir(prefix = 'hse-'): { dir: string; write(name: string, text: string): string; cleanup(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return {
    dir,
    write(name: string, text: string) {
      const p = path.join(dir, name);
      fs.writeFileSync(p, text);
      return p;
    },
    cleanup() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
