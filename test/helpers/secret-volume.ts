import fs from 'node:fs';
import path from 'node:path';

/**
 * A Secret volume as kubelet writes it: token -> ..data/token, ..data -> ..<generation>/. `swap` replaces
 * the token the way kubelet's atomic writer does: a new directory, a new symlink renamed over ..data,
 * then the old directory removed, so a reader sees the old or the new file, or (between the rename and
 * its next stat) a dangling moment, never a half-written token.
 */
export function secretVolume(dir: string, token: string): { file: string; swap(next: string): void } {
  let gen = 0;
  const write = (value: string): string => {
    const d = `..2026_12_01_${gen++}`;
    fs.mkdirSync(path.join(dir, d));
    fs.writeFileSync(path.join(dir, d, 'token'), value, { mode: 0o600 });
    return d;
  };
  let current = write(token);
  fs.symlinkSync(current, path.join(dir, '..data'));
  fs.symlinkSync(path.join('..data', 'token'), path.join(dir, 'token'));
  return {
    file: path.join(dir, 'token'),
    swap(next: string) {
      const d = write(next);
      fs.symlinkSync(d, path.join(dir, '..data_tmp'));
      fs.renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
      fs.rmSync(path.join(dir, current), { recursive: true });
      current = d;
    },
  };
}
