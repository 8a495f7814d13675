// docs/runbooks/: one page per alert in the shape of prometheus-operator/runbooks (Meaning, Impact,
// Diagnosis, Mitigation; short), every command step run by an integration test or marked not executable
// with a reason, at least 90 % run, a test that claims a step really runs it, every alert page starting
// its diagnosis with check and ending with a step that confirms the fix, and every link between the
// pages (and into them from docs/) resolving. The report is the one `npm run -s runbooks:steps` prints.
import fs from 'node:fs';
import path from 'node:path';
import { allSteps, runbookPages, RUNBOOKS_DIR, stepReferences, stepReport } from '../../scripts/runbook-steps';
import { markdownAnchors } from '../../dashboards/lib/lint';

const root = path.resolve(__dirname, '..', '..');
const pages = runbookPages(root);
const steps = allSteps(root);
const alertPages = pages.filter((p) => p.alert !== 'shared');
/**
 * An alert page's length limit, in lines outside the command blocks (runbooks.prometheus-operator.dev pages are
 * short: what to read, what to do); the commands themselves are as long as the tests that run them need.
 */
const MAX_ALERT_PAGE_PROSE_LINES = 60;
const proseLines = (markdown: string): number => {
  let fenced = false;
  return markdown.trimEnd().split('\n').filter((l) => {
    if (/^\s*```/.test(l)) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  }).length;
};
const PARTS = ['## Meaning', '## Impact', '## Diagnosis', '## Mitigation'];

describe('runbook pages', () => {
  test('one page per alert, titled with the alert, with Meaning, Impact, Diagnosis and Mitigation in that order, and short', () => {
    expect(alertPages.length).toBeGreaterThanOrEqual(17);
    for (const p of alertPages) {
      const lines = p.markdown.trimEnd().split('\n');
      expect([p.file, lines[0]]).toEqual([p.file, `# ${p.alert}`]);
      const headings = lines.filter((l) => l.startsWith('## '));
      expect([p.file, headings]).toEqual([p.file, PARTS]);
      expect([p.file, proseLines(p.markdown) <= MAX_ALERT_PAGE_PROSE_LINES]).toEqual([p.file, true]);
    }
  });

  test('the index (README.md) links every alert page', () => {
    const index = pages.find((p) => p.file === path.join(RUNBOOKS_DIR, 'README.md'));
    expect(index).toBeDefined();
    for (const p of alertPages) expect([p.alert, index?.markdown.includes(`](${p.alert}.md)`)]).toEqual([p.alert, true]);
  });

  test('every relative link of the runbook pages, and every link from docs/ into them, names a file and heading that exist', () => {
    const sources = [
      ...pages.map((p) => ({ file: p.file, markdown: p.markdown })),
      ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => ({ file: path.join('docs', f), markdown: fs.readFileSync(path.join(root, 'docs', f), 'utf8') })),
    ];
    const broken: string[] = [];
    let checked = 0;
    for (const s of sources) {
      const inRunbooks = s.file.startsWith(RUNBOOKS_DIR);
      for (const m of s.markdown.matchAll(/\]\(([^)\s]+?\.md)(?:#([^)\s]+))?\)/g)) {
        const target = path.normalize(path.join(path.dirname(s.file), m[1]));
        if (/^[a-z]+:/.test(m[1]) || (!inRunbooks && !target.startsWith(RUNBOOKS_DIR))) continue;
        checked++;
        const abs = path.join(root, target);
        if (!fs.existsSync(abs)) broken.push(`${s.file}: ${m[0]} (no file)`);
        else if (m[2] && !markdownAnchors(fs.readFileSync(abs, 'utf8')).has(m[2])) broken.push(`${s.file}: ${m[0]} (no heading #${m[2]})`);
      }
      // Same-page anchors.
      for (const m of s.markdown.matchAll(/\]\(#([^)\s]+)\)/g)) {
        if (!inRunbooks) continue;
        checked++;
        if (!markdownAnchors(s.markdown).has(m[1])) broken.push(`${s.file}: ${m[0]} (no heading)`);
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });

  test('the link check can fail: a link to a missing heading is found', () => {
    expect(markdownAnchors('# A\n## Diagnosis\n').has('diagnosis')).toBe(true);
    expect(markdownAnchors('# A\n## Diagnosis\n').has('mitigation')).toBe(false);
  });
});

describe('runbook command steps', () => {
  test('every fenced command block of the runbooks is a step with an id', () => {
    // A bare ```sh / ```promql / ```python block would be a command no test knows about.
    const bare = pages.flatMap((p) => p.markdown.split('\n').map((l, i) => ({ f: p.file, l, i: i + 1 }))).filter(({ l }) => /^\s*```(sh|promql|python|js|bash)\s*$/.test(l));
    expect(bare).toEqual([]);
    expect(steps.length).toBeGreaterThan(50);
  });

  test('each step is executed by a test or marked not-executable with a reason, and at least 90 % are executed', () => {
    const r = stepReport(root);
    expect(r.unaccounted).toEqual([]);
    expect(r.lines[r.lines.length - 1]).toBe(`${r.executed} of ${r.total} command steps executed by tests`);
    expect(r.executed / r.total).toBeGreaterThanOrEqual(0.9);
  });

  test('an executed-by file really runs the step, and no test runs a step that is missing or marked not-executable', () => {
    const refs = stepReferences(root);
    for (const [id, files] of refs) {
      const s = steps.find((x) => x.id === id);
      expect([id, s === undefined ? 'missing' : s.notExecutable ?? 'ok']).toEqual([id, 'ok']);
      for (const f of files) expect([f, fs.readFileSync(path.join(root, f), 'utf8').includes(`runStep('${id}'`)]).toEqual([f, true]);
    }
  });

  test('every alert page starts its diagnosis with check and ends with a step that confirms the fix', () => {
    for (const p of alertPages) {
      const a = p.alert;
      const own = steps.filter((s) => s.file === p.file);
      const slug = a.toLowerCase();
      expect([a, own[0]?.id]).toEqual([a, `${slug}-check`]);
      expect([a, own[0]?.body]).toEqual([a, expect.stringMatching(/^hypha-serve-exporter (check|--config\.check)\b/)]);
      // check is the first thing under Diagnosis.
      const diagnosis = p.markdown.slice(p.markdown.indexOf('## Diagnosis\n'));
      expect([a, diagnosis.split('\n').find((l) => /^\s*```/.test(l))]).toEqual([a, expect.stringContaining(`step=${slug}-check`)]);
      const last = own[own.length - 1];
      expect([a, last?.id.startsWith(`${slug}-confirm-fix`), last?.notExecutable]).toEqual([a, true, undefined]);
      // The prose before it says how to read it, inside Mitigation.
      const mitigation = p.markdown.slice(p.markdown.indexOf('## Mitigation\n'));
      expect([a, mitigation.slice(0, mitigation.indexOf(`step=${last.id}`)).includes('**Confirm the fix.**')]).toEqual([a, true]);
    }
  });

  test('step ids are stable: <alert>-<name> on an alert page', () => {
    for (const s of steps.filter((x) => x.alert !== 'shared')) expect([s.id, s.id.startsWith(`${s.alert.toLowerCase()}-`)]).toEqual([s.id, true]);
  });
});
