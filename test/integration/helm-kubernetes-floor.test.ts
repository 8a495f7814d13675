/**
 * The chart's Kubernetes floor (templates/kubernetes-floor.yaml): a first `helm template` with no flags
 * renders (Helm's offline default is 1.20, which a Chart.yaml `kubeVersion:` failed), a preview never
 * fails, and the same check fails an install into a cluster below 1.23. helm from
 * scripts/install-deploy-tools.sh (run by scripts/setup.sh).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { tmpDir } from '../helpers/tmp';
import { repoRoot } from '../../src/util/repo-root';

jest.setTimeout(300_000);
const execFileP = promisify(execFile);
const root = repoRoot();
const chart = path.join(root, 'deploy/helm/hypha-serve-exporter');
const cacheDir = process.env.HSE_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'hypha-serve-exporter');

function helmBin(): string {
  const env = fs.readFileSync(path.join(cacheDir, 'deploy-tools', 'env.sh'), 'utf8');
  const helm = /^HELM="(.*)"$/m.exec(env)?.[1];
  if (!helm) throw new Error('no HELM in deploy-tools/env.sh: run scripts/install-deploy-tools.sh');
  return helm;
}

async function helm(args: string[]): Promise<{ code: number; stdout: string; out: string }> {
  try {
    const r = await execFileP(helmBin(), args, { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout: r.stdout, out: r.stdout + r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

describe('the chart\'s Kubernetes floor', () => {
  const tmp = tmpDir('hse-helm-floor-');
  afterAll(() => tmp.cleanup());

  it('helm template with no flags renders the chart (the StatefulSet among it)', async () => {
    const r = await helm(['template', 't', chart]);
    expect(r.out).not.toContain('Error');
    expect(r.code).toBe(0);
    const kinds = YAML.parseAllDocuments(r.stdout).map((d) => (d.toJS() as { kind?: string } | null)?.kind).filter(Boolean);
    expect(kinds).toContain('StatefulSet');
    // No kubeVersion constraint left for Helm to match against its offline default.
    expect(YAML.parse(fs.readFileSync(path.join(chart, 'Chart.yaml'), 'utf8'))).not.toHaveProperty('kubeVersion');
  });

  it('a preview never fails, whatever --kube-version it assumes', async () => {
    for (const v of ['1.20.0', '1.22.0', '1.33.0']) expect({ v, code: (await helm(['template', 't', chart, '--kube-version', v])).code }).toEqual({ v, code: 0 });
  });

  it('below 1.23 on a cluster that lacks the marker API, the same check fails with the floor in its message', async () => {
    // Offline, Helm lists every API its client library knows, autoscaling/v2 included; a cluster below
    // 1.23 does not serve it. The chart copy swaps the marker for an API no list has, as such a cluster's would.
    const copy = path.join(tmp.dir, 'chart');
    fs.cpSync(chart, copy, { recursive: true });
    const floor = path.join(copy, 'templates', 'kubernetes-floor.yaml');
    const text = fs.readFileSync(floor, 'utf8');
    expect(text).toContain('.Capabilities.APIVersions.Has "autoscaling/v2"');
    fs.writeFileSync(floor, text.replace('.Capabilities.APIVersions.Has "autoscaling/v2"', '.Capabilities.APIVersions.Has "absent.example.org/v1"'));
    const old = await helm(['template', 't', copy, '--kube-version', '1.22.9']);
    expect(old.code).not.toBe(0);
    expect(old.out).toContain('needs Kubernetes 1.23 or later');
    expect(old.out).toContain('v1.22.9');
    // At the floor it renders.
    expect((await helm(['template', 't', copy, '--kube-version', '1.23.0'])).code).toBe(0);
  });
});
