/**
 * The Helm chart and the kustomize base, checked offline with pinned tools (scripts/check-deploy.sh):
 * helm lint --strict, helm template, kustomize build, kubernetes-validate --strict for 1.33/1.35/1.37,
 * and ServiceMonitor/PrometheusRule against strict Prometheus Operator v0.85.0 CRD schemas.
 * Known-bad manifests and values must be rejected by the same checks, or the checks prove nothing.
 * The same artifacts installed into a real kube-apiserver: install-kubernetes-apiserver.test.ts.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { tmpDir } from '../helpers/tmp';
import { repoRoot } from '../../src/util/repo-root';

jest.setTimeout(1_800_000);
const execFileP = promisify(execFile);
const root = repoRoot();
const chart = path.join(root, 'deploy/helm/hypha-serve-exporter');
const cacheDir = process.env.HSE_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'hypha-serve-exporter');

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  [k: string]: unknown;
}

async function sh(cmd: string, args: string[], timeoutMs = 900_000) {
  try {
    const r = await execFileP(cmd, args, { cwd: root, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout: r.stdout.toString(), out: `${r.stdout.toString()}${r.stderr.toString()}` };
  } catch (e) {
    const err = e as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

function tools(): { HELM: string; KUSTOMIZE: string } {
  const env = fs.readFileSync(path.join(cacheDir, 'deploy-tools', 'env.sh'), 'utf8');
  const pick = (k: string) => /^(\w+)="(.*)"$/m.exec(env.split('\n').find((l) => l.startsWith(`${k}=`)) ?? '')?.[2] ?? '';
  return { HELM: pick('HELM'), KUSTOMIZE: pick('KUSTOMIZE') };
}

function objects(file: string): K8sObject[] {
  return YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

describe('install: Kubernetes artifacts (Helm chart, kustomize base), validated offline', () => {
  const tmp = tmpDir('hse-k8s-');
  const out = path.join(root, 'test-artifacts', 'deploy');
  afterAll(() => tmp.cleanup());

  it('helm lint --strict, helm template and kustomize build pass kubernetes-validate --strict and the strict CRD schemas', async () => {
    const t0 = Date.now();
    // Cold, check-deploy.sh first builds the tools (scripts/install-deploy-tools.sh; setup.sh normally has).
    const r = await sh('bash', ['scripts/check-deploy.sh'], 1_500_000);
    console.log(`scripts/check-deploy.sh: ${Date.now() - t0} ms\n${r.out.split('\n').filter((l) => !/go: downloading|valid against the strict/.test(l)).join('\n')}`);
    expect(r.code).toBe(0);
    expect(r.out).toContain('deploy check OK');
  });

  it('every rendering has a hardened StatefulSet with a state volume per replica, probes, a Service, ServiceMonitor, PrometheusRule, config and dashboards, and no Secret', () => {
    const generatedRules = YAML.parse(fs.readFileSync(path.join(root, 'deploy/kubernetes/prometheusrule.yaml'), 'utf8')) as K8sObject;
    const dashboards = fs.readdirSync(path.join(root, 'dashboards/json')).sort();
    for (const file of ['helm-default-1.33.0.yaml', 'helm-ha-1.33.0.yaml', 'helm-nocrd-1.33.0.yaml', 'kustomize-base.yaml', 'kustomize-ha.yaml']) {
      const objs = objects(path.join(out, file));
      const kinds = objs.map((o) => o.kind);
      expect(kinds).not.toContain('Secret');
      expect(kinds).not.toContain('Deployment');
      for (const k of ['StatefulSet', 'Service', 'ServiceAccount', 'ConfigMap']) expect(kinds).toContain(k);
      // Without the Prometheus Operator API the chart renders no monitoring objects (NOTES say so).
      const crd = !file.includes('nocrd');
      expect(kinds.includes('ServiceMonitor')).toBe(crd);
      expect(kinds.includes('PrometheusRule')).toBe(crd);
      const ha = file.includes('-ha');
      expect(kinds.includes('PodDisruptionBudget')).toBe(ha);
      expect(kinds.includes('NetworkPolicy')).toBe(ha);

      const sts = objs.find((o) => o.kind === 'StatefulSet')!;
      const spec = sts.spec as { replicas: number; minReadySeconds: number; serviceName: string; template: { spec: Record<string, any> }; volumeClaimTemplates: Array<Record<string, any>> };
      expect(spec.replicas).toBe(ha ? 2 : 1);
      // A volume per replica for --storage.path; one pod at a time replaced, each Ready for 30 s first.
      expect(spec.volumeClaimTemplates.map((v) => v.metadata.name)).toEqual(['state']);
      expect(spec.volumeClaimTemplates[0].spec.accessModes).toEqual(['ReadWriteOnce']);
      expect(spec.minReadySeconds).toBe(30);
      expect(objs.find((o) => o.kind === 'Service' && o.metadata.name === spec.serviceName)).toBeDefined();
      const pod = spec.template.spec;
      expect(pod.volumes.find((v: { name: string }) => v.name === 'state')).toBeUndefined();
      expect(pod.containers[0].image).toMatch(/^ghcr\.io\/aicell-lab\/hypha-serve-exporter(:0\.2\.0|@sha256:[0-9a-f]{64})$/);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
      expect(pod.automountServiceAccountToken).toBe(false);
      const c = pod.containers[0];
      expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      expect(c.livenessProbe.httpGet.path).toBe('/-/healthy');
      expect(c.readinessProbe.httpGet.path).toBe('/-/ready');
      expect(c.resources.requests.memory).toBeDefined();
      expect(c.resources.limits.memory).toBeDefined();
      expect(c.ports[0].containerPort).toBe(9731);
      // Tokens: only references to Secrets, mounted as files.
      const tokenVol = (pod.volumes as Array<Record<string, any>>).find((v) => v.name === 'tokens');
      if (ha) expect(JSON.stringify(tokenVol)).toMatch(/"secret":\{"name":"[^"]+"|"secretName":"[^"]+"/);

      const boardsOf = (list: K8sObject[]) => list.filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard === '1');
      expect(boardsOf(objs).length).toBe(dashboards.length);
      if (!crd) continue;
      const rule = objs.find((o) => o.kind === 'PrometheusRule')!;
      // The chart with its ServiceMonitor gives HyphaServeExporterDown's absent() its release namespace (the
      // targets' namespace), so the page of a missing exporter reaches a namespaced AlertmanagerConfig too.
      const expected = structuredClone(generatedRules.spec) as { groups: { rules: { alert?: string; expr: string }[] }[] };
      if (file.startsWith('helm')) {
        const down = expected.groups.flatMap((g) => g.rules).find((r) => r.alert === 'HyphaServeExporterDown')!;
        const namespaced = down.expr.replace(/absent\(up\{([^}]*)\}\)/, 'absent(up{$1, namespace="monitoring"})');
        expect(namespaced).not.toBe(down.expr);
        down.expr = namespaced;
      }
      expect(rule.spec).toEqual(expected);
      const sm = objs.find((o) => o.kind === 'ServiceMonitor')!;
      const ep = (sm.spec as { endpoints: Array<Record<string, any>> }).endpoints[0];
      expect(ep).toMatchObject({ port: 'http', path: '/metrics' });
      // HA replicas differ only in `instance` (the rules aggregate it away); the exporter's own `service` label survives.
      expect(ep.relabelings).toEqual([
        { sourceLabels: ['__meta_kubernetes_pod_name'], targetLabel: 'instance' },
        { action: 'labeldrop', regex: 'pod|service' },
      ]);
      // The rules select job=~"hypha-serve-exporter.*"; the job comes from this Service label's value
      // (hypha-serve-exporter for the kustomize base, hypha-serve-exporter-<release> for the chart).
      const jobLabel = (sm.spec as { jobLabel: string }).jobLabel;
      const svc = objs.find((o) => o.kind === 'Service')!;
      const job = svc.metadata.labels?.[jobLabel];
      expect(job).toBe(file.startsWith('helm') ? 'hypha-serve-exporter-hse' : 'hypha-serve-exporter');
      const jobMatchers = [...YAML.stringify(generatedRules.spec, { lineWidth: 0 }).matchAll(/job=~"([^"]+)"/g)].map((m) => m[1]);
      expect(jobMatchers.length).toBeGreaterThan(0);
      for (const re of new Set(jobMatchers)) expect(job).toMatch(new RegExp(`^(?:${re})$`));

      const boards = boardsOf(objs);
      const keys = boards.flatMap((b) => Object.keys(b.data ?? {})).sort();
      expect(keys).toEqual(dashboards);
      for (const b of boards) {
        for (const [k, v] of Object.entries(b.data ?? {})) {
          expect(JSON.parse(v)).toEqual(JSON.parse(fs.readFileSync(path.join(root, 'dashboards/json', k), 'utf8')));
        }
      }
      const config = objs.find((o) => o.kind === 'ConfigMap' && o.data?.['config.yml'] !== undefined);
      expect(YAML.parse(config!.data!['config.yml'])).toHaveProperty('ray_clusters');
    }
  });

  it('rejects a typo in a StatefulSet field and a StatefulSet without its required selector', async () => {
    const good = fs.readFileSync(path.join(out, 'kustomize-base.yaml'), 'utf8');
    const typo = tmp.write('typo.yaml', good.replace('imagePullPolicy: IfNotPresent', 'imagePullPolicyy: IfNotPresent'));
    const r1 = await sh('bash', ['scripts/check-deploy.sh', 'validate', typo]);
    expect(r1.code).not.toBe(0);
    expect(r1.out).toMatch(/'imagePullPolicyy' was unexpected/);
    for (const v of ['1.33', '1.35', '1.37']) expect(r1.out).toContain(`against version ${v}`);

    const objs = objects(path.join(out, 'kustomize-base.yaml'));
    for (const o of objs) if (o.kind === 'StatefulSet') delete (o.spec as Record<string, unknown>).selector;
    const noSel = tmp.write('no-selector.yaml', objs.map((o) => YAML.stringify(o)).join('---\n'));
    const r2 = await sh('bash', ['scripts/check-deploy.sh', 'validate', noSel]);
    expect(r2.code).not.toBe(0);
    expect(r2.out).toMatch(/'selector' is a required property/);

    const ok = await sh('bash', ['scripts/check-deploy.sh', 'validate', path.join(out, 'kustomize-base.yaml')]);
    expect(ok.code).toBe(0);
  });

  it('rejects a ServiceMonitor typo, a rule without expr and a bad enum, and accepts the Go (?i) enum', async () => {
    const objs = objects(path.join(out, 'kustomize-base.yaml'));
    const sm = objs.find((o) => o.kind === 'ServiceMonitor')!;
    const rule = objs.find((o) => o.kind === 'PrometheusRule')!;
    const groups = (rule.spec as { groups: Array<Record<string, any>> }).groups;

    const smTypo = structuredClone(sm);
    const ep = (smTypo.spec as { endpoints: Array<Record<string, unknown>> }).endpoints[0];
    ep.intervall = ep.interval;
    delete ep.interval;
    const r1 = await sh('bash', ['scripts/check-deploy.sh', 'validate', tmp.write('sm-typo.yaml', YAML.stringify(smTypo))]);
    expect(r1.code).not.toBe(0);
    expect(r1.out).toContain('must NOT have additional properties (intervall)');

    const noExpr = structuredClone(rule);
    delete (noExpr.spec as { groups: Array<Record<string, any>> }).groups[0].rules[0].expr;
    const r2 = await sh('bash', ['scripts/check-deploy.sh', 'validate', tmp.write('rule-no-expr.yaml', YAML.stringify(noExpr))]);
    expect(r2.code).not.toBe(0);
    expect(r2.out).toContain("must have required property 'expr'");

    const fro = structuredClone(rule);
    const alerting = (fro.spec as { groups: Array<Record<string, any>> }).groups.flatMap((g) => g.rules).find((x) => x.alert && x.for);
    alerting.fro = alerting.for;
    delete alerting.for;
    const r3 = await sh('bash', ['scripts/check-deploy.sh', 'validate', tmp.write('rule-fro.yaml', YAML.stringify(fro))]);
    expect(r3.code).not.toBe(0);
    expect(r3.out).toContain('(fro)');

    // partial_response_strategy has the Go pattern ^(?i)(abort|warn)?$: WARN passes, anything else fails.
    const warn = structuredClone(rule);
    (warn.spec as { groups: Array<Record<string, any>> }).groups[0].partial_response_strategy = 'WARN';
    expect((await sh('bash', ['scripts/check-deploy.sh', 'validate', tmp.write('rule-warn.yaml', YAML.stringify(warn))])).code).toBe(0);
    const bogus = structuredClone(rule);
    (bogus.spec as { groups: Array<Record<string, any>> }).groups[0].partial_response_strategy = 'bogus';
    const r4 = await sh('bash', ['scripts/check-deploy.sh', 'validate', tmp.write('rule-bogus.yaml', YAML.stringify(bogus))]);
    expect(r4.code).not.toBe(0);
    expect(r4.out).toContain('must match pattern');
    expect(groups.length).toBeGreaterThan(0);
  });

  it('the chart rejects a typo in its values and never renders token values', async () => {
    const { HELM } = tools();
    const typo = tmp.write('typo-values.yaml', 'replicaCnt: 2\n');
    const r1 = await sh(HELM, ['template', 'hse', chart, '-f', typo]);
    expect(r1.code).not.toBe(0);
    expect(r1.out).toMatch(/replicaCnt/);
    const lint = await sh(HELM, ['lint', '--strict', chart, '-f', typo]);
    expect(lint.code).not.toBe(0);

    // A literal token in values has nowhere to go: secrets.* accepts only a Secret name and key.
    const literal = tmp.write('literal-token.yaml', 'secrets:\n  hypha:\n    existingSecret: s\n    key: token\n    value: hunter2\n');
    const r2 = await sh(HELM, ['template', 'hse', chart, '-f', literal]);
    expect(r2.code).not.toBe(0);
    expect(r2.out).toMatch(/value/);

    const r3 = await sh(HELM, ['template', 'hse', chart, '--kube-version', '1.33.0', '--set', 'replicaCount=2']);
    expect(r3.code).toBe(0);
    const objs = YAML.parseAllDocuments(r3.stdout).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
    expect(objs.find((o) => o.kind === 'PodDisruptionBudget')?.spec).toMatchObject({ minAvailable: 1 });
    expect((objs.find((o) => o.kind === 'StatefulSet')?.spec as { replicas: number }).replicas).toBe(2);
    // One replica: no PDB (minAvailable 1 over one pod would block every node drain).
    const single = await sh(HELM, ['template', 'hse', chart, '--kube-version', '1.33.0', '--set', 'podDisruptionBudget.enabled=true']);
    expect(single.code).toBe(0);
    expect(single.stdout).not.toContain('kind: PodDisruptionBudget');
  });

  it('the image reference: registry, repository, tag (default appVersion) and a digest that wins', async () => {
    const { HELM } = tools();
    const image = async (...set: string[]) => {
      const r = await sh(HELM, ['template', 'hse', chart, '--kube-version', '1.33.0', '--show-only', 'templates/statefulset.yaml', ...set.flatMap((x) => ['--set', x])]);
      expect(r.code).toBe(0);
      return (YAML.parse(r.stdout) as { spec: { template: { spec: { containers: Array<{ image: string }> } } } }).spec.template.spec.containers[0].image;
    };
    const appVersion = (YAML.parse(fs.readFileSync(path.join(chart, 'Chart.yaml'), 'utf8')) as { appVersion: string }).appVersion;
    expect(appVersion).toBe(JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version);
    expect(await image()).toBe(`ghcr.io/aicell-lab/hypha-serve-exporter:${appVersion}`);
    expect(await image('image.tag=0.2.1')).toBe('ghcr.io/aicell-lab/hypha-serve-exporter:0.2.1');
    const digest = `sha256:${'ab'.repeat(32)}`;
    expect(await image('image.tag=0.2.1', `image.digest=${digest}`)).toBe(`ghcr.io/aicell-lab/hypha-serve-exporter@${digest}`);
    expect(await image('image.registry=', 'image.repository=hypha-serve-exporter')).toBe(`hypha-serve-exporter:${appVersion}`);
    expect(await image('global.imageRegistry=mirror.example.org')).toBe(`mirror.example.org/aicell-lab/hypha-serve-exporter:${appVersion}`);
    const bad = await sh(HELM, ['template', 'hse', chart, '--kube-version', '1.33.0', '--set', 'image.digest=latest']);
    expect(bad.code).not.toBe(0);
    expect(bad.out).toMatch(/digest/);
    // Any job name: the rules follow it (test/integration/deploy-rule-values.test.ts).
    const anyJob = await sh(HELM, ['template', 'hse', chart, '--kube-version', '1.33.0', '--set', 'serviceMonitor.jobName=exporter', '--set', 'prometheusRule.enabled=true']);
    expect(anyJob.code).toBe(0);
    expect(anyJob.stdout).toContain('job="exporter"');
    expect(anyJob.stdout).not.toContain('hypha-serve-exporter.*');
  });

  it('the chart fails with a clear message when files/ (generated rules, dashboards) is missing; it holds real copies, no symlinks', async () => {
    const { HELM } = tools();
    for (const f of ['files/prometheusrule.yaml', ...fs.readdirSync(path.join(chart, 'files/dashboards')).map((d) => `files/dashboards/${d}`)]) {
      expect(fs.lstatSync(path.join(chart, f)).isFile()).toBe(true);
    }
    const copy = path.join(tmp.dir, 'chart-without-files');
    fs.cpSync(chart, copy, { recursive: true });
    fs.rmSync(path.join(copy, 'files'), { recursive: true });
    const r = await sh(HELM, ['template', 'hse', copy, '--kube-version', '1.33.0']);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain('files/prometheusrule.yaml is missing or empty');
    // Only the dashboards gone (a packaging step that drops a directory) fails too.
    const copy2 = path.join(tmp.dir, 'chart-without-dashboards');
    fs.cpSync(chart, copy2, { recursive: true });
    fs.rmSync(path.join(copy2, 'files/dashboards'), { recursive: true });
    const r2 = await sh(HELM, ['template', 'hse', copy2, '--kube-version', '1.33.0', '--set', 'prometheusRule.enabled=false']);
    expect(r2.code).not.toBe(0);
    expect(r2.out).toContain('files/dashboards/*.json is missing');
    // The intact chart renders.
    expect((await sh(HELM, ['template', 'hse', chart, '--kube-version', '1.33.0'])).code).toBe(0);
  });

  it('the chart README documents every value in values.yaml', () => {
    const values = YAML.parse(fs.readFileSync(path.join(chart, 'values.yaml'), 'utf8')) as Record<string, unknown>;
    const readme = fs.readFileSync(path.join(chart, 'README.md'), 'utf8');
    const keys: string[] = [];
    const walk = (o: Record<string, unknown>, prefix: string) => {
      for (const [k, v] of Object.entries(o)) {
        const key = `${prefix}${k}`;
        // `config` is the exporter's own file (docs/config.schema.json); maps of free-form labels end here.
        const leaf = v === null || typeof v !== 'object' || Array.isArray(v) || Object.keys(v).length === 0
          || ['config', 'resources', 'podSecurityContext', 'securityContext', 'dashboards.labels'].includes(key);
        if (leaf) keys.push(key);
        else walk(v as Record<string, unknown>, `${key}.`);
      }
    };
    walk(values, '');
    expect(keys.length).toBeGreaterThan(50);
    const missing = keys.filter((k) => !readme.includes(`| \`${k}\` |`));
    expect(missing).toEqual([]);
  });
});
