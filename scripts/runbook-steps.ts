/**
 * The command steps of the runbooks (docs/runbooks/*.md: one page per alert, named after it, and the
 * shared pages) and which test runs each one.
 *
 * A step is a fenced block whose info string names it: ```sh step=<id>``` (also promql, python, js),
 * optionally `not-executable="<reason>"`. A test runs a step with `runStep('<id>', ...)`
 * (test/helpers/runbook-step.ts) in test/integration/runbooks*.test.ts, so "executed by" is read from
 * those calls, never declared by hand.
 *
 *   npm run -s runbooks:steps   one line per step, then "N of M command steps executed by tests"
 */
import fs from 'node:fs';
import path from 'node:path';

export const RUNBOOKS_DIR = path.join('docs', 'runbooks');

export interface RunbookPage {
  /** Path from the repository root, e.g. docs/runbooks/HyphaServeSourceDown.md. */
  file: string;
  /** The alert the page is for (its file name), or `shared` for README.md and the other shared pages. */
  alert: string;
  markdown: string;
}

export interface RunbookStep {
  id: string;
  /** The page's alert, or `shared`. */
  alert: string;
  file: string;
  lang: string;
  /** The block's text, de-indented by the fence's indentation. */
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
  notExecutable?: string;
}

export interface RunbookQuote {
  /** Where the quoted text comes from: ray, hypha, hypha-rpc, python-jose or bioengine. */
  origin: string;
  text: string;
  line: number;
}

const FENCE = /^(\s*)```(\w+)\s+step=([a-z0-9-]+)(?:\s+not-executable="([^"]+)")?\s*$/;
const CLOSE = /^\s*```\s*$/;
const ALERT_FILE = /^(Hypha\w+)\.md$/;
// A quote is an inline code span directly followed by its marker: `text`<!--quote:ray--> or, for text
// with backticks in it, ``text``<!--quote:hypha-->.
const QUOTE = /``\s?((?:[^`]|`(?!`))+?)\s?``<!--quote:([a-z-]+)-->|`([^`]+)`<!--quote:([a-z-]+)-->/g;

/** Every page of docs/runbooks, sorted by file name (alert pages first: they start with an upper-case H). */
export function runbookPages(root: string): RunbookPage[] {
  const dir = path.join(root, RUNBOOKS_DIR);
  return fs.readdirSync(dir).filter((f) => f.endsWith('.md')).sort().map((f) => ({
    file: path.join(RUNBOOKS_DIR, f),
    alert: ALERT_FILE.exec(f)?.[1] ?? 'shared',
    markdown: fs.readFileSync(path.join(dir, f), 'utf8'),
  }));
}

/** The steps of one page, in order. */
export function parseSteps(page: RunbookPage): RunbookStep[] {
  const lines = page.markdown.split('\n');
  const steps: RunbookStep[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = FENCE.exec(lines[i]);
    if (!m) continue;
    const indent = m[1].length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !CLOSE.test(lines[j]); j++) body.push(lines[j].slice(Math.min(indent, lines[j].length - lines[j].trimStart().length)));
    if (j >= lines.length) throw new Error(`${page.file}:${i + 1}: step ${m[3]} has no closing fence`);
    steps.push({ id: m[3], alert: page.alert, file: page.file, lang: m[2], body: body.join('\n'), line: i + 1, ...(m[4] ? { notExecutable: m[4] } : {}) });
    i = j;
  }
  return steps;
}

/** The steps of every page; a step id is unique across all of them. */
export function allSteps(root: string): RunbookStep[] {
  const steps = runbookPages(root).flatMap(parseSteps);
  const seen = new Map<string, RunbookStep>();
  for (const s of steps) {
    const first = seen.get(s.id);
    if (first) throw new Error(`${s.file}:${s.line}: step id ${s.id} is used already (${first.file}:${first.line})`);
    seen.set(s.id, s);
  }
  return steps;
}

export function parseQuotes(markdown: string): RunbookQuote[] {
  const out: RunbookQuote[] = [];
  markdown.split('\n').forEach((l, i) => {
    for (const m of l.matchAll(QUOTE)) out.push({ origin: m[2] ?? m[4], text: m[1] ?? m[3], line: i + 1 });
  });
  return out;
}

/** Step ids each runbooks*.test.ts file runs (`runStep('<id>'`), keyed by id. */
export function stepReferences(root: string): Map<string, string[]> {
  const dir = path.join(root, 'test', 'integration');
  const refs = new Map<string, string[]>();
  for (const f of fs.readdirSync(dir).filter((x) => /^runbooks.*\.test\.ts$/.test(x)).sort()) {
    const rel = path.join('test', 'integration', f);
    for (const m of fs.readFileSync(path.join(dir, f), 'utf8').matchAll(/\brunStep\(\s*'([a-z0-9-]+)'/g)) {
      const files = refs.get(m[1]) ?? [];
      if (!files.includes(rel)) files.push(rel);
      refs.set(m[1], files);
    }
  }
  return refs;
}

export interface StepReport {
  lines: string[];
  executed: number;
  total: number;
  /** Steps neither run by a test nor marked not executable. */
  unaccounted: string[];
}

export function stepReport(root: string): StepReport {
  const steps = allSteps(root);
  const refs = stepReferences(root);
  const lines: string[] = [];
  const unaccounted: string[] = [];
  let executed = 0;
  for (const s of steps) {
    const by = refs.get(s.id);
    if (by && !s.notExecutable) {
      executed++;
      lines.push(`${s.alert} ${s.id} executed-by ${by.join(',')}`);
    } else if (s.notExecutable) {
      lines.push(`${s.alert} ${s.id} not-executable ${s.notExecutable}`);
    } else {
      unaccounted.push(s.id);
      lines.push(`${s.alert} ${s.id} not-executed no test runs it and it is not marked not-executable`);
    }
  }
  lines.push(`${executed} of ${steps.length} command steps executed by tests`);
  return { lines, executed, total: steps.length, unaccounted };
}

if (require.main === module) {
  const root = path.resolve(__dirname, '..', '..');
  const r = stepReport(fs.existsSync(path.join(root, RUNBOOKS_DIR)) ? root : process.cwd());
  process.stdout.write(`${r.lines.join('\n')}\n`);
  process.exit(r.unaccounted.length > 0 ? 1 : 0);
}
