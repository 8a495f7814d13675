import fs from 'node:fs';

export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

export async function timeIt(n: number, fn: () => Promise<unknown> | unknown): Promise<{ p50: number; p99: number; mean: number }> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    xs.push(performance.now() - t0);
  }
  xs.sort((a, b) => a - b);
  return { p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), mean: xs.reduce((a, b) => a + b, 0) / xs.length };
}

export function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}

/** Replaces the block between <!-- bench:NAME --> markers in a markdown file (or appends it). */
export function writeSection(file: string, name: string, body: string): void {
  const start = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  const cur = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmarks\n';
  const block = `${start}\n${body.trim()}\n${end}`;
  const re = new RegExp(`${start}[\\s\\S]*?${end}`);
  fs.writeFileSync(file, re.test(cur) ? cur.replace(re, block) : `${cur.trimEnd()}\n\n${block}\n`);
}
