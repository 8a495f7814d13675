// Writes docs/metrics.md from the declared table of metric families; `--check` fails when it is
// out of date. README.md links it instead of keeping a copy.
import fs from 'node:fs';
import path from 'node:path';
import { metricsMarkdown } from '../src/metrics/docs';

const root = path.resolve(__dirname, '..', '..');
const docFile = path.join(root, 'docs', 'metrics.md');

function main(): void {
  const doc = metricsMarkdown();
  if (process.argv.includes('--check')) {
    if (!fs.existsSync(docFile) || fs.readFileSync(docFile, 'utf8') !== doc) {
      process.stderr.write(`out of date: ${docFile}: run node dist/scripts/gen-metrics-docs.js\n`);
      process.exit(1);
    }
    return;
  }
  fs.writeFileSync(docFile, doc);
  process.stdout.write(`wrote ${docFile}\n`);
}
if (require.main === module) {
  try {
    main();
  } catch (e: unknown) {
    process.stderr.write(`${String(e)}\n`);
    process.exit(1);
  }
}
