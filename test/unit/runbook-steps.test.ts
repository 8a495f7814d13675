// docs/runbooks.md: every command step is run by an integration test or marked not executable with a
// reason, at least 80 % are run, a test that claims a step really runs it, and every runbook ends with
// a step that confirms the fix. The report is the one `npm run -s runbooks:steps` prints.
import fs from 'node:fs';
import path from 'node:path';
import { parseSteps, RUNBOOKS_FILE, stepReferences, stepReport } from '../../scripts/runbook-steps';

const root = path.resolve(__dirname, '..', '..');
const markdown = fs.readFileSync(path.join(root, RUNBOOKS_FILE), 'utf8');
const steps = parseSteps(markdown);
const alerts = [...markdown.matchAll(/^## (Hypha\w+)\s*$/gm)].map((m) => m[1]);

describe('runbook command steps', () => {
  test('every fenced command block of the runbooks is a step with an id', () => {
    // A bare ```sh / ```promql / ```python block would be a command no test knows about.
    const bare = markdown.split('\n').map((l, i) => ({ l, i: i + 1 })).filter(({ l }) => /^\s*```(sh|promql|python|js|bash)\s*$/.test(l));
    expect(bare).toEqual([]);
    expect(steps.length).toBeGreaterThan(50);
  });

  test('each step is executed by a test or marked not-executable with a reason, and at least 80 % are executed', () => {
    const r = stepReport(root);
    expect(r.unaccounted).toEqual([]);
    expect(r.lines[r.lines.length - 1]).toBe(`${r.executed} of ${r.total} command steps executed by tests`);
    expect(r.executed / r.total).toBeGreaterThanOrEqual(0.8);
  });

  test('an executed-by file really runs the step, and no test runs a step that is missing or marked not-executable', () => {
    const refs = stepReferences(root);
    for (const [id, files] of refs) {
      const s = steps.find((x) => x.id === id);
      expect([id, s === undefined ? 'missing' : s.notExecutable ?? 'ok']).toEqual([id, 'ok']);
      for (const f of files) expect([f, fs.readFileSync(path.join(root, f), 'utf8').includes(`runStep('${id}'`)]).toEqual([f, true]);
    }
  });

  test('every alert has a runbook that starts with check and ends with a step that confirms the fix', () => {
    expect(alerts.length).toBeGreaterThanOrEqual(17);
    for (const a of alerts) {
      const own = steps.filter((s) => s.alert === a);
      const slug = a.toLowerCase();
      expect([a, own[0]?.id]).toEqual([a, `${slug}-check`]);
      expect([a, own[0]?.body]).toEqual([a, expect.stringMatching(/^hypha-serve-exporter (check|--config\.check)\b/)]);
      const last = own[own.length - 1];
      expect([a, last?.id.startsWith(`${slug}-confirm-fix`), last?.notExecutable]).toEqual([a, true, undefined]);
      // The prose before it says how to read it.
      const section = markdown.slice(markdown.indexOf(`## ${a}\n`));
      expect([a, section.slice(0, section.indexOf(`step=${last.id}`)).includes('**Confirm the fix.**')]).toEqual([a, true]);
    }
  });

  test('step ids are stable: <alert>-<name> inside an alert section', () => {
    for (const s of steps.filter((x) => x.alert !== 'shared')) expect(s.id.startsWith(`${s.alert.toLowerCase()}-`)).toBe(true);
  });
});
