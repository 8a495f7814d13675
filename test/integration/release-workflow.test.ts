/**
 * The GitHub workflows (.github/workflows): actionlint, pinned by scripts/install-deploy-tools.sh with
 * Debian's shellcheck so the `run:` scripts are checked too, must report nothing; broken copies in a
 * temporary directory must be caught (a bad expression, a shell bug, a YAML key typo, a job that needs an
 * unknown job). The release workflow's shape is checked against what docs/install.md and CHANGELOG.md promise:
 * a v* tag, both image platforms, the ghcr.io repository the chart pulls from, pinned actions.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { tmpDir } from '../helpers/tmp';
import { repoRoot } from '../../src/util/repo-root';

jest.setTimeout(900_000);
const execFileP = promisify(execFile);
const root = repoRoot();
const workflowsDir = path.join(root, '.github', 'workflows');
const cacheDir = path.join(process.env.HSE_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'hypha-serve-exporter'), 'deploy-tools');

interface Finding {
  message: string;
  filepath: string;
  line: number;
  kind: string;
}

/** KEY="value" lines of the env file the install script writes. */
function readEnvFile(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of fs.readFileSync(file, 'utf8').matchAll(/^([A-Z_]+)="?([^"\n]*)"?$/gm)) out[m[1]] = m[2];
  return out;
}

describe('release: GitHub workflows checked by actionlint', () => {
  let actionlint = '';
  let shellcheck = '';
  const tmp = tmpDir('hse-actionlint-');

  beforeAll(async () => {
    await execFileP('bash', [path.join(root, 'scripts/install-deploy-tools.sh'), '--actionlint-only'], { cwd: root, timeout: 900_000 });
    const env = readEnvFile(path.join(cacheDir, 'actionlint.env'));
    actionlint = env.ACTIONLINT;
    shellcheck = env.SHELLCHECK;
  });
  afterAll(() => tmp.cleanup());

  /** actionlint's findings for the workflows under `dir` (its own .github/workflows), as JSON. */
  async function lint(dir: string): Promise<{ code: number; findings: Finding[]; stderr: string }> {
    try {
      const r = await execFileP(actionlint, ['-shellcheck', shellcheck, '-format', '{{json .}}'], { cwd: dir, timeout: 120_000 });
      return { code: 0, findings: JSON.parse(r.stdout.toString() || '[]') as Finding[], stderr: r.stderr.toString() };
    } catch (e) {
      const err = e as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof err.code === 'number' ? err.code : -1, findings: JSON.parse(err.stdout || '[]') as Finding[], stderr: err.stderr ?? '' };
    }
  }

  it('the pinned actionlint and shellcheck are the ones installed', async () => {
    expect(actionlint).toMatch(/actionlint-v1\.7\.12\/bin\/actionlint$/);
    expect((await execFileP(actionlint, ['-version'])).stdout.toString().split('\n')[0]).toBe('v1.7.12');
    expect((await execFileP(shellcheck, ['--version'])).stdout.toString()).toMatch(/^version: \d+\.\d+/m);
  });

  it('reports nothing for .github/workflows (run: scripts included)', async () => {
    const files = fs.readdirSync(workflowsDir).filter((f) => /\.ya?ml$/.test(f)).sort();
    expect(files).toEqual(expect.arrayContaining(['ci.yml', 'release.yml']));
    const r = await lint(root);
    for (const f of r.findings) console.log(`actionlint: ${f.filepath}:${f.line} [${f.kind}] ${f.message}`);
    expect(r.findings).toEqual([]);
    expect(r.code).toBe(0);
  });

  it('catches a broken copy: expression, shell, key typo, unknown needs', async () => {
    const dir = path.join(tmp.dir, 'broken');
    fs.mkdirSync(path.join(dir, '.github', 'workflows'), { recursive: true });
    const release = fs.readFileSync(path.join(workflowsDir, 'release.yml'), 'utf8');
    const put = (name: string, text: string) => fs.writeFileSync(path.join(dir, '.github', 'workflows', name), text);
    // Each file differs from release.yml in one place, so each finding is traced to its cause.
    const broken: Record<string, string> = {
      'expression.yml': release.replace('${{ github.ref_name }}', '${{ github.ref_nme }}'),
      'shell.yml': release.replace('if [ "$TAG" != "v$version" ]; then', 'if [ $TAG != "v$version" ]; then'),
      'typo.yml': release.replace('    timeout-minutes: 15\n', '    timeout-minutse: 15\n'),
      'needs.yml': release.replace('needs: [version, image]', 'needs: [version, images]'),
    };
    for (const [name, text] of Object.entries(broken)) {
      expect(text).not.toBe(release);
      put(name, text);
    }
    // ci.yml is needed by release.yml's `uses: ./.github/workflows/ci.yml`; actionlint looks for the
    // workflows of the git work tree it runs in.
    fs.copyFileSync(path.join(workflowsDir, 'ci.yml'), path.join(dir, '.github', 'workflows', 'ci.yml'));
    await execFileP('git', ['init', '-q', dir]);
    const r = await lint(dir);
    expect(r.code).not.toBe(0);
    const by = (file: string) => r.findings.filter((f) => path.basename(f.filepath) === file);
    expect(by('expression.yml').map((f) => f.kind)).toContain('expression');
    expect(by('expression.yml').map((f) => f.message).join('\n')).toMatch(/ref_nme/);
    // SC2086 from shellcheck: only when shellcheck really runs on the run: scripts.
    expect(by('shell.yml').some((f) => f.kind === 'shellcheck' && /SC2086/.test(f.message))).toBe(true);
    expect(by('typo.yml').map((f) => f.message).join('\n')).toMatch(/timeout-minutse/);
    expect(by('needs.yml').map((f) => f.message).join('\n')).toMatch(/images/);
    expect(by('ci.yml')).toEqual([]);
  });

  it('release.yml: on a v* tag, tests first, npm + a two-platform image on ghcr.io + the chart, actions pinned to commits', () => {
    interface Step { uses?: string; with?: Record<string, unknown>; run?: string }
    interface Job { needs?: string | string[]; uses?: string; steps?: Step[]; permissions?: Record<string, string> }
    const wf = parse(fs.readFileSync(path.join(workflowsDir, 'release.yml'), 'utf8')) as {
      on: { push: { tags: string[] } };
      env: Record<string, string>;
      permissions: Record<string, string>;
      jobs: Record<string, Job>;
    };
    expect(wf.on.push.tags).toEqual(['v*']);
    expect(wf.permissions).toEqual({ contents: 'read' });
    expect(wf.env.IMAGE).toBe('ghcr.io/aicell-lab/hypha-serve-exporter');
    expect(wf.env.CHART_REPOSITORY).toBe('oci://ghcr.io/aicell-lab/charts');
    expect(wf.jobs.test.uses).toBe('./.github/workflows/ci.yml');
    const needs = (j: Job) => ([] as string[]).concat(j.needs ?? []);
    expect(needs(wf.jobs.npm)).toContain('test');
    expect(needs(wf.jobs.image)).toContain('test');
    const build = wf.jobs.image.steps!.find((s) => s.uses?.startsWith('docker/build-push-action@'));
    expect(String(build?.with?.platforms).split(',').sort()).toEqual(['linux/amd64', 'linux/arm64']);
    expect(build?.with?.push).toBe(true);
    expect(wf.jobs.image.steps!.some((s) => s.uses?.startsWith('docker/setup-qemu-action@'))).toBe(true);
    expect(wf.jobs.image.permissions).toMatchObject({ packages: 'write' });
    expect(wf.jobs.npm.steps!.some((s) => /npm publish/.test(s.run ?? ''))).toBe(true);
    expect(wf.jobs.chart.steps!.some((s) => /"\$HELM" push \S+ "\$CHART_REPOSITORY"/.test(s.run ?? ''))).toBe(true);

    // Every third-party action in every workflow is pinned to a full commit id.
    for (const f of fs.readdirSync(workflowsDir)) {
      const text = fs.readFileSync(path.join(workflowsDir, f), 'utf8');
      for (const m of text.matchAll(/^\s*(?:-\s+)?uses:\s*(\S+)/gm)) {
        if (m[1].startsWith('./')) continue;
        expect(`${f}: ${m[1]}`).toMatch(/@[0-9a-f]{40}$/);
      }
    }
    // The image the chart installs by default is the one this workflow pushes.
    const values = parse(fs.readFileSync(path.join(root, 'deploy/helm/hypha-serve-exporter/values.yaml'), 'utf8')) as {
      image: { registry?: string; repository: string };
    };
    expect(`${values.image.registry ? `${values.image.registry}/` : ''}${values.image.repository}`).toBe(wf.env.IMAGE);
  });
});
