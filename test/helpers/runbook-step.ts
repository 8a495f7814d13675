/**
 * Runs a step of the runbooks (docs/runbooks/*.md) as written: the block is taken from its page by its
 * id (scripts/runbook-steps.ts), only its `<placeholders>` are filled in, and it runs the way a reader
 * runs it: `sh` with bash in an environment holding the variables of docs/runbooks/README.md, `promql` one
 * query per line against Prometheus, `python` with the hypha venv's interpreter (hypha-rpc 0.21.47),
 * `js` written to the file its first comment names (a script the following steps run).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { allSteps, RUNBOOKS_DIR, RunbookStep } from '../../scripts/runbook-steps';
import { EXPORTER_BIN } from '../harness/exporter-process';
import { repoRoot } from '../../src/util/repo-root';

export interface StepEnv {
  /** Directory the step runs in (files a step writes land here). */
  cwd: string;
  /** The shell variables of docs/runbooks/README.md (RAY, HYPHA, WS, EXPORTER, CONFIG, STATE, ...). */
  vars: Record<string, string>;
  /** Base URL of the Prometheus that the promql steps query. */
  prometheusUrl: string;
}

export interface PromqlLine {
  expr: string;
  series: Array<{ metric: Record<string, string>; value: string }>;
}

export interface StepResult {
  id: string;
  lang: string;
  code: number | null;
  stdout: string;
  stderr: string;
  /** promql steps: the result of each line. */
  queries: PromqlLine[];
}

let cached: RunbookStep[] | undefined;
function steps(): RunbookStep[] {
  cached ??= allSteps(repoRoot());
  return cached;
}

/** The block of step `id`, with `<name>` replaced by placeholders[name]; an unfilled placeholder throws. */
function stepText(id: string, placeholders: Record<string, string>): RunbookStep & { text: string } {
  const s = steps().find((x) => x.id === id);
  if (!s) throw new Error(`no step ${id} in ${RUNBOOKS_DIR}`);
  if (s.notExecutable) throw new Error(`step ${id} is marked not-executable: ${s.notExecutable}`);
  let text = s.body;
  for (const [k, v] of Object.entries(placeholders)) text = text.split(`<${k}>`).join(v);
  // A js step is a file the reader saves as is (its <placeholders> are in its usage comment).
  const left = s.lang === 'js' ? null : /<([A-Za-z][\w -]*)>/.exec(text);
  if (left) throw new Error(`step ${id}: placeholder <${left[1]}> not filled in`);
  return { ...s, text };
}

/** A bin directory with `hypha-serve-exporter` (the compiled CLI) next to the Ray venv's `serve` and `ray`. */
function toolsPath(cwd: string): string {
  const bin = path.join(cwd, '.runbook-bin');
  if (!fs.existsSync(bin)) {
    fs.mkdirSync(bin, { recursive: true });
    fs.writeFileSync(path.join(bin, 'hypha-serve-exporter'), `#!/bin/sh\nexec "${process.execPath}" "${EXPORTER_BIN}" "$@"\n`, { mode: 0o755 });
  }
  return [bin, path.join(repoRoot(), '.venv', 'ray', 'bin'), process.env.PATH ?? ''].join(':');
}

function run(cmd: string, args: string[], env: StepEnv, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, {
      cwd: env.cwd, detached: true,
      env: { ...process.env, ...env.vars, PATH: toolsPath(env.cwd), NODE_PATH: path.join(repoRoot(), 'node_modules') },
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      stderr += `\n[runbook-step] timed out after ${timeoutMs} ms`;
      try { process.kill(-(p.pid ?? 0), 'SIGKILL'); } catch { /* gone */ }
    }, timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function promql(expr: string, prometheusUrl: string): Promise<PromqlLine> {
  const res = await fetch(`${prometheusUrl}/api/v1/query`, { method: 'POST', body: new URLSearchParams({ query: expr }) });
  const body = await res.json() as { status: string; error?: string; data?: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
  if (body.status !== 'success' || !body.data) throw new Error(`promql ${expr}: ${body.error ?? res.status}`);
  const result = body.data.resultType === 'vector' ? body.data.result : [];
  return { expr, series: result.map((r) => ({ metric: r.metric, value: r.value[1] })) };
}

/**
 * Runs step `id` (see the module comment). Every run is logged with its output, so a failing
 * assertion shows what the reader would have seen.
 */
export async function runStep(id: string, env: StepEnv, placeholders: Record<string, string> = {}, timeoutMs = 180_000): Promise<StepResult> {
  const s = stepText(id, placeholders);
  let r: { code: number | null; stdout: string; stderr: string };
  let queries: PromqlLine[] = [];
  if (s.lang === 'sh') {
    r = await run('bash', ['-c', s.text], env, timeoutMs);
  } else if (s.lang === 'python') {
    r = await run(path.join(repoRoot(), '.venv', 'hypha', 'bin', 'python'), ['-c', s.text], env, timeoutMs);
  } else if (s.lang === 'promql') {
    const exprs = s.text.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l !== '');
    queries = [];
    for (const e of exprs) queries.push(await promql(e, env.prometheusUrl));
    const stdout = queries.map((q) => `${q.expr}\n${q.series.map((x) => `  ${JSON.stringify(x.metric)} ${x.value}`).join('\n') || '  (empty)'}`).join('\n');
    r = { code: 0, stdout, stderr: '' };
  } else if (s.lang === 'js') {
    const file = /^\s*\/\/\s*(\S+\.js)\b/.exec(s.text)?.[1];
    if (!file) throw new Error(`step ${id}: a js step names its file in its first comment`);
    fs.writeFileSync(path.join(env.cwd, file), s.text);
    r = { code: 0, stdout: `wrote ${file}`, stderr: '' };
  } else {
    throw new Error(`step ${id}: no runner for ${s.lang}`);
  }
  process.stdout.write(`[runbook step ${id}] exit ${r.code}\n${r.stdout}${r.stderr ? `\n[stderr]\n${r.stderr}` : ''}\n`);
  return { id, lang: s.lang, ...r, queries };
}
