// Writes docs/config.schema.json from the zod schema; `--check` fails when it is out of date.
import fs from 'node:fs';
import path from 'node:path';
import { configJsonSchema } from '../src/config/json-schema';

const out = path.resolve(__dirname, '..', '..', 'docs', 'config.schema.json');
const text = JSON.stringify(configJsonSchema(), null, 2) + '\n';
if (process.argv.includes('--check')) {
  const cur = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '';
  if (cur !== text) {
    process.stderr.write(`${out} is out of date: run node dist/scripts/gen-config-schema.js\n`);
    process.exit(1);
  }
} else {
  fs.writeFileSync(out, text);
  process.stdout.write(`wrote ${out}\n`);
}
