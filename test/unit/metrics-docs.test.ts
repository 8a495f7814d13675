// docs/metrics.md is generated from the declared table of metric families (scripts/gen-metrics-docs.ts);
// this fails when it drifts from it. README.md links it (test/unit/readme-names.test.ts).
import fs from 'node:fs';
import path from 'node:path';
import { familyDocs, familyMeaning, metricsMarkdown } from '../../src/metrics/docs';
import { FAMILIES } from '../../src/metrics/families';

const root = path.resolve(__dirname, '..', '..');

describe('generated metrics docs', () => {
  it('docs/metrics.md is up to date (run: npm run build && node dist/scripts/gen-metrics-docs.js)', () => {
    expect(fs.readFileSync(path.join(root, 'docs', 'metrics.md'), 'utf8')).toBe(metricsMarkdown());
  });

  it('documents every family once, with per-unit series figures for the table families', () => {
    const docs = familyDocs();
    const names = docs.map((d) => d.name);
    expect(new Set(names).size).toBe(names.length);
    for (const f of FAMILIES) expect(names).toContain(f.name);
    expect(names).toContain('hypha_serve_service_call_duration_seconds');
    expect(docs.find((d) => d.name === 'hypha_serve_deployment_status')?.series).toBe(6);
    expect(docs.find((d) => d.name === 'hypha_serve_app_registration_state')?.series).toBe(8);
  });

  it('each family has one text: its plain HELP sentence, which the docs continue in whole sentences', () => {
    const docs = familyDocs();
    for (const f of FAMILIES) {
      expect(`${f.name}: ${f.help}`).toMatch(/^[a-z_]+: [^`\n]+\.$/);
      if (f.doc !== undefined) expect(`${f.name}: ${f.doc}`).toMatch(/^[a-z_]+: [^\n]+\.$/);
      expect(docs.find((d) => d.name === f.name)?.meaning).toBe(familyMeaning(f));
      expect(familyMeaning(f).startsWith(f.help)).toBe(true);
    }
  });

});
