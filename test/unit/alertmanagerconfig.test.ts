// examples/alertmanagerconfig.yaml, the namespaced AlertmanagerConfig of the Prometheus Operator: valid against the
// operator's strict v0.85.0 CRD schema (deploy/check/validate-crds.js, which makes every listed object closed), and the
// Alertmanager configuration the operator renders from it (test/helpers/alertmanagerconfig.ts) passes amtool
// check-config, routes by namespace as well as severity (amtool config routes test) and groups and inhibits as
// examples/alertmanager.yml does. test/integration/alertmanager-routing.test.ts runs it in a real Alertmanager.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { AlertmanagerConfigObject, renderAlertmanagerConfig } from '../helpers/alertmanagerconfig';
import { DEBIAN_ALERTMANAGER } from '../harness/engines';

const ROOT = path.resolve(__dirname, '..', '..');
const EXAMPLE = path.join(ROOT, 'examples', 'alertmanagerconfig.yaml');
const CACHE = process.env.HSE_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'hypha-serve-exporter');
/** scripts/install-deploy-tools.sh puts it there. */
const AMC_CRD_DIR = path.join(CACHE, 'deploy-tools', 'prometheus-operator-alertmanagerconfig-crd-v0.85.0');

function run(cmd: string, args: string[]): { code: number | null; out: string } {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  if (r.error) throw r.error;
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

const amc = parse(fs.readFileSync(EXAMPLE, 'utf8')) as AlertmanagerConfigObject;
const rendered = renderAlertmanagerConfig(amc);

describe('examples/alertmanagerconfig.yaml', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hse-amc-'));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  test('is valid against the strict AlertmanagerConfig CRD schema; a typo is not', () => {
    expect(fs.existsSync(AMC_CRD_DIR)).toBe(true); // bash scripts/install-deploy-tools.sh
    const ok = run('node', ['deploy/check/validate-crds.js', AMC_CRD_DIR, EXAMPLE]);
    expect(ok.out).toContain('valid against the strict monitoring.coreos.com/v1alpha1/AlertmanagerConfig CRD schema');
    expect(ok.code).toBe(0);
    const typo = path.join(tmp, 'typo.yaml');
    fs.writeFileSync(typo, fs.readFileSync(EXAMPLE, 'utf8').replace('groupBy:', 'group_by:'));
    const bad = run('node', ['deploy/check/validate-crds.js', AMC_CRD_DIR, typo]);
    expect(bad.code).toBe(1);
    expect(bad.out).toContain('must NOT have additional properties (group_by)');
  });

  test('the configuration the operator renders from it passes amtool check-config and routes only its namespace\'s pages', () => {
    expect(amc.metadata.namespace).toBe('monitoring');
    const file = path.join(tmp, 'alertmanager.yml');
    fs.writeFileSync(file, stringify(rendered));
    const check = run(DEBIAN_ALERTMANAGER.amtool, ['check-config', file]);
    if (check.code !== 0) throw new Error(check.out);
    const routes = (labels: Record<string, string>) => {
      // stdout: the receiver (amtool may warn on stderr that --config.file overrides --alertmanager.url).
      const r = spawnSync(DEBIAN_ALERTMANAGER.amtool, ['config', 'routes', 'test', `--config.file=${file}`, ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)], { encoding: 'utf8' });
      return r.stdout.trim();
    };
    const page = { alertname: 'HyphaServeAppRunningNotRegistered', severity: 'critical', job: 'hypha-serve-exporter-hse', ray_cluster: 'kth', app: 'model-runner', hypha: 'main' };
    expect(routes({ ...page, namespace: 'monitoring' })).toBe('monitoring/hypha-serve-exporter/pager');
    expect(routes({ ...page, namespace: 'monitoring', severity: 'warning' })).toBe('monitoring/hypha-serve-exporter/chat');
    // Another namespace's page, a page without a namespace (the pack before it carried one) and another pack's alert
    // in this namespace are not this AlertmanagerConfig's.
    expect(routes({ ...page, namespace: 'other' })).toBe('null');
    expect(routes(page)).toBe('null');
    expect(routes({ alertname: 'KubePodCrashLooping', severity: 'critical', namespace: 'monitoring' })).toBe('null');
  });

  test('groups and inhibits as examples/alertmanager.yml does, within its namespace', () => {
    const plain = parse(fs.readFileSync(path.join(ROOT, 'examples', 'alertmanager.yml'), 'utf8')) as {
      route: { group_by: string[] }; inhibit_rules: { source_matchers: string[]; target_matchers: string[]; equal: string[] }[];
    };
    expect(amc.spec.route.groupBy).toEqual(plain.route.group_by);
    expect(plain.route.group_by).toContain('namespace');
    const ns = 'namespace="monitoring"';
    expect(rendered.inhibit_rules).toEqual(plain.inhibit_rules.map((r) => ({ ...r, source_matchers: [...r.source_matchers, ns], target_matchers: [...r.target_matchers, ns] })));
    for (const r of plain.inhibit_rules) expect(r.equal).toContain('namespace');
  });
});
