// docs/metrics.md and the README metrics table are generated from the declared table of metric
// families (scripts/gen-metrics-docs.ts); this fails when either drifts from it.
import fs from 'node:fs';
import path from 'node:path';
import { familyDocs, familyMeaning, metricsMarkdown, README_END, README_START, readmeTable } from '../../src/metrics/docs';
import { FAMILIES } from '../../src/metrics/families';
import { withTable } from '../../scripts/gen-metrics-docs';

const root = path.resolve(__dirname, '..', '..');

describe('generated metrics docs', () => {
  it('docs/metrics.md is up to date (run: npm run build && node dist/scripts/gen-metrics-docs.js)', () => {
    expect(fs.readFileSync(path.join(root, 'docs', 'metrics.md'), 'utf8')).toBe(metricsMarkdown());
  });

  it('the README table between the markers is up to date', () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    expect(readme).toContain(README_START);
    expect(readme).toContain(README_END);
    expect(withTable(readme, readmeTable())).toBe(readme);
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

  it('a drifted table is detected', () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const edited = readme.replace('| `hypha_serve_app_status` | gauge |', '| `hypha_serve_app_status` | counter |');
    expect(edited).not.toBe(readme);
    expect(withTable(edited, readmeTable())).not.toBe(edited);
  });
});
