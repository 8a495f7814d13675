// Writes docs/metrics.md and the README metrics table (between its markers) from the declared
// table of metric families; `--check` fails when either is out of date.
import fs from 'node:fs';
import path from 'node:path';
import { metricsMarkdown, README_END, README_START, readmeTable } from '../src/metrics/docs';

const root = path.resolve(__dirname, '..', '..');
const docFile = path.join(root, 'docs', 'metrics.md');
const readmeFile = path.join(root, 'README.md');

/** README with the generated table between the markers; the first run wraps the hand-written table in them. */
export function withTable(readme: string, table: string): string {
  const start = readme.indexOf(README_START);
  const end = readme.indexOf(README_END);
  if (start >= 0 && end > start) return `${readme.slice(0, start)}${README_START}\n${table}\n${readme.slice(end)}`;
  const head = '| metric | type | labels | meaning | stability |';
  const i = readme.indexOf(head);
  if (i < 0) throw new Error('README.md has neither the metrics-table markers nor the metrics table');
  let j = readme.indexOf('\n\n', i);
  if (j < 0) j = readme.length;
  return `${readme.slice(0, i)}${README_START}\n${table}\n${README_END}${readme.slice(j)}`;
}

function main(): void {
  const doc = metricsMarkdown();
  const readme = fs.readFileSync(readmeFile, 'utf8');
  const nextReadme = withTable(readme, readmeTable());
  if (process.argv.includes('--check')) {
    const stale = [[docFile, doc], [readmeFile, nextReadme]].filter(([f, t]) => !fs.existsSync(f) || fs.readFileSync(f, 'utf8') !== t).map(([f]) => f);
    if (stale.length > 0) {
      process.stderr.write(`out of date: ${stale.join(', ')}: run node dist/scripts/gen-metrics-docs.js\n`);
      process.exit(1);
    }
    return;
  }
  fs.writeFileSync(docFile, doc);
  if (nextReadme !== readme) fs.writeFileSync(readmeFile, nextReadme);
  process.stdout.write(`wrote ${docFile} and the README metrics table\n`);
}

if (require.main === module) {
  try {
    main();
  } catch (e: unknown) {
    process.stderr.write(`${String(e)}\n`);
    process.exit(1);
  }
}
