/**
 * The Helm chart and the kustomize base installed into a real kube-apiserver (v1.33.5 on etcd, loopback; built by
 * scripts/install-deploy-tools.sh, cold ~7 min once, then cached): `helm install` (which reads the server's API
 * versions, as in a cluster) and `kubectl apply --server-side --validate=strict` of rendered manifests. One
 * apiserver for every case; no controllers run, so objects are admitted and stored, pods never start.
 * Cases: without the Prometheus Operator CRDs, with them, as a subchart with `global` values, two releases as two
 * shards, OpenShift-style security contexts; every rendered variant also passes kubernetes-validate --strict
 * (1.33/1.35/1.37) and the strict CRD schemas (scripts/check-deploy.sh validate).
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { DeployTools, deployTools, KubeApiserver, run, startKubeApiserver } from '../harness/kube-apiserver';
import { waitFor } from '../harness/proc';
import { tmpDir } from '../helpers/tmp';
import { repoRoot } from '../../src/util/repo-root';

jest.setTimeout(1_800_000);
const root = repoRoot();
const chart = path.join(root, 'deploy/helm/hypha-serve-exporter');
const base = path.join(root, 'deploy/kubernetes');
/** The rules' exporter selector (rules/config/mixin.yml exporter_selector). */
const JOB_RE = /^hypha-serve-exporter.*$/;

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, any>;
  [k: string]: unknown;
}

/** A failed command fails the test with its output. */
function expectOk(r: { code: number; out: string }): void {
  if (r.code !== 0) throw new Error(`exit code ${r.code}:\n${r.out}`);
}

function parse(text: string): K8sObject[] {
  return YAML.parseAllDocuments(text).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
}

describe('install: the chart and the kustomize base in a real kube-apiserver', () => {
  const tmp = tmpDir('hse-k8s-api-');
  let t: DeployTools;
  let api: KubeApiserver;
  /** Every rendered variant, validated with kubernetes-validate --strict at the end. */
  const rendered: string[] = [];

  const helm = (args: string[]) => run(t.helm, [...args, '--kubeconfig', api.kubeconfig], { cwd: tmp.dir });
  const helmOffline = (args: string[]) => run(t.helm, args, { cwd: tmp.dir });
  const save = (name: string, text: string) => {
    const f = tmp.write(name, text);
    rendered.push(f);
    return f;
  };
  /** stdout of a command that must succeed */
  async function ok(p: Promise<{ code: number; stdout: string; out: string }>): Promise<string> {
    const r = await p;
    if (r.code !== 0) throw new Error(r.out);
    return r.stdout;
  }
  async function serverSideApply(ns: string, file: string) {
    return api.kubectl(['apply', '--server-side', '--field-manager=hse-test', '--validate=strict', '-n', ns, '-f', file]);
  }
  async function manifest(release: string, ns: string): Promise<K8sObject[]> {
    return parse(await ok(helm(['get', 'manifest', release, '-n', ns])));
  }
  /** A kustomize overlay in the temp dir over the base and the given components (paths relative to the base). */
  async function kustomize(name: string, components: string[], extra = ''): Promise<string> {
    const dir = path.join(tmp.dir, name);
    fs.mkdirSync(dir, { recursive: true });
    const rel = (p: string) => path.relative(dir, p);
    fs.writeFileSync(path.join(dir, 'kustomization.yaml'), [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      `resources: [${rel(base)}]`,
      `components: [${components.map((c) => rel(path.join(base, c))).join(', ')}]`,
      extra,
    ].join('\n'));
    return save(`${name}.yaml`, await ok(run(t.kustomize, ['build', dir])));
  }

  beforeAll(async () => {
    const t0 = Date.now();
    const r = await run('bash', [path.join(root, 'scripts/install-deploy-tools.sh')], { cwd: root, timeoutMs: 1_800_000 });
    if (r.code !== 0) throw new Error(r.out);
    t = deployTools();
    const t1 = Date.now();
    api = await startKubeApiserver(t, tmp.dir);
    console.log(`install-deploy-tools.sh ${t1 - t0} ms; kube-apiserver ready in ${Date.now() - t1} ms`);
    for (const ns of ['plain', 'kustomize-plain', 'operator', 'kustomize-operator', 'monitoring', 'umbrella', 'shards', 'openshift']) {
      await ok(api.kubectl(['create', 'namespace', ns]));
    }
  });
  afterAll(async () => {
    await api?.stop();
    tmp.cleanup();
  });

  describe('without the Prometheus Operator CRDs', () => {
    it('helm install succeeds with a StatefulSet and a volume claim per replica, no monitoring objects, and NOTES say why', async () => {
      const r = await helm(['install', 'hse', chart, '-n', 'plain']);
      expectOk(r);
      console.log(`helm install without the CRDs:\n${r.out.slice(r.out.indexOf('NOTES:'))}`);
      expect(r.out).toContain('STATUS: deployed');
      expect(r.out).toMatch(/does not serve monitoring\.coreos\.com\/v1[^]*the ServiceMonitor and the PrometheusRule were NOT rendered/);
      expect(r.out).toContain('one PersistentVolumeClaim per replica');
      const objs = await manifest('hse', 'plain');
      const kinds = objs.map((o) => o.kind).sort();
      expect(kinds).not.toContain('ServiceMonitor');
      expect(kinds).not.toContain('PrometheusRule');
      expect(kinds).not.toContain('PodDisruptionBudget'); // one replica: a PDB would block node drains
      expect(kinds).toEqual(expect.arrayContaining(['StatefulSet', 'Service', 'ServiceAccount', 'ConfigMap']));
      // Stored by the apiserver as rendered, defaults filled in.
      const sts = JSON.parse(await ok(api.kubectl(['-n', 'plain', 'get', 'statefulset', 'hse-hypha-serve-exporter', '-o', 'json']))) as K8sObject;
      expect(sts.spec?.serviceName).toBe('hse-hypha-serve-exporter');
      expect(sts.spec?.updateStrategy?.type).toBe('RollingUpdate');
      expect(sts.spec?.podManagementPolicy).toBe('Parallel');
      expect(sts.spec?.minReadySeconds).toBe(30);
      expect(sts.spec?.volumeClaimTemplates).toHaveLength(1);
      expect(sts.spec?.volumeClaimTemplates[0]).toMatchObject({ metadata: { name: 'state' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '128Mi' } } } });
      const pod = sts.spec?.template.spec;
      expect(pod.volumes.find((v: { name: string }) => v.name === 'state')).toBeUndefined();
      expect(pod.containers[0].image).toBe('ghcr.io/aicell-lab/hypha-serve-exporter:0.2.0');
      expect(pod.serviceAccountName).toBe('hse-hypha-serve-exporter');
      expect(pod.automountServiceAccountToken).toBe(false);
      // The dashboards are ConfigMaps: no CRD needed.
      expect(objs.filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard === '1')).toHaveLength(
        fs.readdirSync(path.join(root, 'dashboards/json')).length,
      );
    });

    it('the offline rendering applies server-side too; persistence.enabled=false gives an emptyDir', async () => {
      const def = save('helm-plain.yaml', await ok(helmOffline(['template', 'ssa', chart, '-n', 'plain', '--kube-version', '1.33.0'])));
      const r = await serverSideApply('plain', def);
      expect(r.out).toMatch(/statefulset\.apps\/ssa-hypha-serve-exporter serverside-applied/);
      expectOk(r);

      const ephemeral = save('helm-emptydir.yaml', await ok(helmOffline(['template', 'eph', chart, '-n', 'plain', '--kube-version', '1.33.0', '--set', 'persistence.enabled=false'])));
      expect((await serverSideApply('plain', ephemeral)).code).toBe(0);
      const sts = parse(fs.readFileSync(ephemeral, 'utf8')).find((o) => o.kind === 'StatefulSet')!;
      expect(sts.spec?.volumeClaimTemplates).toBeUndefined();
      expect(sts.spec?.template.spec.volumes.find((v: { name: string }) => v.name === 'state')).toEqual({ name: 'state', emptyDir: { sizeLimit: '16Mi' } });
    });

    it('the kustomize base needs components/no-prometheus-operator there: without it the apply fails, with it it installs', async () => {
      const bare = await kustomize('kustomize-base-bare', []);
      const fail = await serverSideApply('kustomize-plain', bare);
      expect(fail.code).not.toBe(0);
      expect(fail.out).toMatch(/no matches for kind "(ServiceMonitor|PrometheusRule)"|ensure CRDs are installed first/);

      const plain = await kustomize('kustomize-no-operator', ['components/no-prometheus-operator']);
      const r = await serverSideApply('kustomize-plain', plain);
      expectOk(r);
      expect(r.out).toMatch(/statefulset\.apps\/hypha-serve-exporter serverside-applied/);
      expect(r.out).not.toMatch(/servicemonitor|prometheusrule/);

      const eph = await kustomize('kustomize-emptydir', ['components/no-prometheus-operator', 'components/emptydir-state']);
      const sts = parse(fs.readFileSync(eph, 'utf8')).find((o) => o.kind === 'StatefulSet')!;
      expect(sts.spec?.volumeClaimTemplates).toBeUndefined();
      expect(sts.spec?.template.spec.volumes.find((v: { name: string }) => v.name === 'state')?.emptyDir).toBeDefined();
    });
  });

  describe('with the Prometheus Operator v0.85.0 CRDs', () => {
    beforeAll(async () => {
      await ok(api.kubectl(['apply', '--server-side', '-f', t.crds]));
      await ok(api.kubectl(['wait', '--for', 'condition=established', '--timeout=60s',
        'crd/servicemonitors.monitoring.coreos.com', 'crd/prometheusrules.monitoring.coreos.com']));
      // Established comes a moment before the group is in discovery, which Helm's capabilities and kubectl's
      // REST mapping read: wait for both kinds to be listable.
      await waitFor('monitoring.coreos.com/v1 in discovery', async () => {
        const apis = await api.kubectl(['get', '--raw', '/apis/monitoring.coreos.com/v1']);
        const list = await api.kubectl(['get', 'servicemonitors,prometheusrules', '-A']);
        return apis.code === 0 && /"servicemonitors"/.test(apis.stdout) && /"prometheusrules"/.test(apis.stdout) && list.code === 0;
      }, 60_000, 250);
    });

    it('helm install renders and the apiserver admits the ServiceMonitor and PrometheusRule; NOTES warn without a release label', async () => {
      const r = await helm(['install', 'hse', chart, '-n', 'operator']);
      expectOk(r);
      console.log(`helm install with the CRDs:\n${r.out.slice(r.out.indexOf('NOTES:'))}`);
      expect(r.out).not.toContain('NOT rendered');
      expect(r.out).toContain('WARNING: serviceMonitor.additionalLabels has no `release` label');
      expect(r.out).toContain('WARNING: prometheusRule.additionalLabels has no `release` label');
      const listed = await ok(api.kubectl(['-n', 'operator', 'get', 'servicemonitors,prometheusrules', '-o', 'name']));
      expect(listed).toContain('servicemonitor.monitoring.coreos.com/hse-hypha-serve-exporter');
      expect(listed).toContain('prometheusrule.monitoring.coreos.com/hse-hypha-serve-exporter');

      const up = await helm(['upgrade', 'hse', chart, '-n', 'operator', '--set', 'serviceMonitor.additionalLabels.release=kps', '--set', 'prometheusRule.additionalLabels.release=kps']);
      expectOk(up);
      expect(up.out).toContain('ServiceMonitor (job hypha-serve-exporter-hse)');
      expect(up.out).not.toContain('has no `release` label');
      const sm = JSON.parse(await ok(api.kubectl(['-n', 'operator', 'get', 'servicemonitor', 'hse-hypha-serve-exporter', '-o', 'json']))) as K8sObject;
      expect(sm.metadata.labels?.release).toBe('kps');
    });

    it('the HA values and the kustomize base and HA overlay apply server-side; unknown fields are rejected', async () => {
      // ci/ha-values.yaml puts the dashboards into `monitoring`: the release goes there too.
      const ha = save('helm-ha.yaml', await ok(helmOffline(['template', 'ha', chart, '-n', 'monitoring', '--kube-version', '1.33.0',
        '--api-versions', 'monitoring.coreos.com/v1', '-f', path.join(chart, 'ci/ha-values.yaml')])));
      const r = await serverSideApply('monitoring', ha);
      expectOk(r);
      expect(r.out).toMatch(/poddisruptionbudget\.policy\/ha-hypha-serve-exporter serverside-applied/);
      expect(r.out).toMatch(/servicemonitor\.monitoring\.coreos\.com\/ha-hypha-serve-exporter serverside-applied/);

      const kbase = await kustomize('kustomize-base', []);
      expect((await serverSideApply('kustomize-operator', kbase)).code).toBe(0);
      const kha = save('kustomize-ha.yaml', await ok(run(t.kustomize, ['build', path.join(root, 'deploy/examples/kubernetes-ha')])));
      const r2 = await serverSideApply('monitoring', kha);
      expectOk(r2);
      expect(r2.out).toMatch(/poddisruptionbudget\.policy\/hypha-serve-exporter serverside-applied/);

      // Known-bad: a typo in the StatefulSet and in the ServiceMonitor (a CRD: strict field validation).
      const objs = parse(fs.readFileSync(ha, 'utf8'));
      const sts = structuredClone(objs.find((o) => o.kind === 'StatefulSet')!);
      sts.spec!.minReadySecond = sts.spec!.minReadySeconds;
      delete sts.spec!.minReadySeconds;
      const bad1 = await serverSideApply('monitoring', tmp.write('bad-sts.yaml', YAML.stringify(sts)));
      expect(bad1.code).not.toBe(0);
      expect(bad1.out).toMatch(/minReadySecond\b[^]*(field not declared in schema|unknown field)|(field not declared in schema|unknown field)[^]*minReadySecond\b/);
      const sm = structuredClone(objs.find((o) => o.kind === 'ServiceMonitor')!);
      sm.spec!.endpoints[0].intervall = sm.spec!.endpoints[0].interval;
      delete sm.spec!.endpoints[0].interval;
      const bad2 = await serverSideApply('monitoring', tmp.write('bad-sm.yaml', YAML.stringify(sm)));
      expect(bad2.code).not.toBe(0);
      expect(bad2.out).toMatch(/intervall[^]*(field not declared in schema|unknown field)|(field not declared in schema|unknown field)[^]*intervall/);
    });

    it('installs as a subchart of an umbrella chart with global values', async () => {
      const umbrella = path.join(tmp.dir, 'umbrella');
      fs.mkdirSync(umbrella);
      fs.writeFileSync(path.join(umbrella, 'Chart.yaml'), [
        'apiVersion: v2', 'name: observability', 'version: 1.0.0',
        'dependencies:', `  - {name: hypha-serve-exporter, version: 0.2.0, repository: "file://${chart}"}`, '',
      ].join('\n'));
      fs.writeFileSync(path.join(umbrella, 'values.yaml'), YAML.stringify({
        global: { imageRegistry: 'registry.example.org', imagePullSecrets: ['umbrella-pull'], team: 'imaging' },
        'hypha-serve-exporter': {
          replicaCount: 2,
          serviceMonitor: { additionalLabels: { release: 'kps' } },
          prometheusRule: { additionalLabels: { release: 'kps' } },
        },
      }));
      await ok(helmOffline(['dependency', 'update', umbrella, '--skip-refresh']));
      const r = await helm(['install', 'obs', umbrella, '-n', 'umbrella']);
      expectOk(r);
      save('helm-umbrella.yaml', await ok(helmOffline(['template', 'obs', umbrella, '-n', 'umbrella', '--kube-version', '1.33.0', '--api-versions', 'monitoring.coreos.com/v1'])));
      const objs = await manifest('obs', 'umbrella');
      const sts = objs.find((o) => o.kind === 'StatefulSet')!;
      expect(sts.metadata.name).toBe('obs-hypha-serve-exporter');
      const pod = sts.spec?.template.spec;
      expect(pod.containers[0].image).toBe('registry.example.org/aicell-lab/hypha-serve-exporter:0.2.0');
      expect(pod.imagePullSecrets).toEqual([{ name: 'umbrella-pull' }]);
      expect(objs.map((o) => o.kind)).toEqual(expect.arrayContaining(['ServiceMonitor', 'PrometheusRule', 'PodDisruptionBudget']));
      // The packaged dependency carries the generated files themselves.
      expect(objs.find((o) => o.kind === 'PrometheusRule')?.spec?.groups.length).toBeGreaterThan(0);
    });

    it('two releases are two shards: two jobs, both selected by the rules, no name clash', async () => {
      const shard = (name: string, cluster: string, extra: string[]) =>
        helm(['install', name, chart, '-n', 'shards', '--set', `config.ray_clusters[0].name=${cluster}`,
          '--set', `config.ray_clusters[0].dashboard_url=http://${cluster}-head-svc.ray.svc:8265`, ...extra]);
      const a = await shard('shard-a', 'prod-a', []);
      expectOk(a);
      // The rules and dashboards once per namespace: the second shard ships none (identical recording rules
      // loaded twice would write the same series from two groups).
      const b = await shard('shard-b', 'prod-b', ['--set', 'prometheusRule.enabled=false', '--set', 'dashboards.enabled=false']);
      expectOk(b);
      const services = JSON.parse(await ok(api.kubectl(['-n', 'shards', 'get', 'services', '-o', 'json']))) as { items: K8sObject[] };
      const sms = JSON.parse(await ok(api.kubectl(['-n', 'shards', 'get', 'servicemonitors', '-o', 'json']))) as { items: K8sObject[] };
      expect(sms.items).toHaveLength(2);
      const jobs = sms.items.map((sm) => {
        const svc = services.items.find((s) => Object.entries(sm.spec?.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v))!;
        return svc.metadata.labels?.[sm.spec?.jobLabel];
      }).sort();
      expect(jobs).toEqual(['hypha-serve-exporter-shard-a', 'hypha-serve-exporter-shard-b']);
      for (const j of jobs) expect(j).toMatch(JOB_RE);
      const mixin = fs.readFileSync(path.join(root, 'rules/config/mixin.yml'), 'utf8');
      const selector = /exporter_selector: 'job=~"([^"]+)"'/.exec(mixin)?.[1];
      expect(selector).toBeDefined();
      for (const j of jobs) expect(j).toMatch(new RegExp(`^(?:${selector})$`));
      save('helm-shard-b.yaml', await ok(helmOffline(['template', 'shard-b', chart, '-n', 'shards', '--kube-version', '1.33.0', '--api-versions', 'monitoring.coreos.com/v1', '--set', 'prometheusRule.enabled=false'])));
    });
  });

  it('OpenShift: the fixed uid/gid/fsGroup go (auto on security.openshift.io/v1, or null values), restricted-v2 holds', async () => {
    const variants = {
      auto: ['--api-versions', 'security.openshift.io/v1'],
      nulls: ['--set', 'podSecurityContext.runAsUser=null', '--set', 'podSecurityContext.runAsGroup=null', '--set', 'podSecurityContext.fsGroup=null'],
    };
    for (const [name, args] of Object.entries(variants)) {
      const f = save(`helm-openshift-${name}.yaml`, await ok(helmOffline(['template', `os-${name}`, chart, '-n', 'openshift', '--kube-version', '1.33.0', ...args])));
      const r = await serverSideApply('openshift', f);
      expectOk(r);
      const pod = parse(fs.readFileSync(f, 'utf8')).find((o) => o.kind === 'StatefulSet')!.spec?.template.spec;
      expect(pod.securityContext.runAsUser).toBeUndefined();
      expect(pod.securityContext.runAsGroup).toBeUndefined();
      expect(pod.securityContext.fsGroup).toBeUndefined();
      // What restricted-v2 still demands, kept.
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.containers[0].securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      expect(pod.containers[0].securityContext.runAsUser).toBeUndefined();
    }
    // Negative control: off OpenShift the defaults keep the image's uid.
    const plain = parse(await ok(helmOffline(['template', 'x', chart, '--kube-version', '1.33.0'])));
    expect(plain.find((o) => o.kind === 'StatefulSet')!.spec?.template.spec.securityContext).toMatchObject({ runAsUser: 10001, fsGroup: 10001 });
  });

  it('every rendered variant passes kubernetes-validate --strict (1.33, 1.35, 1.37) and the strict CRD schemas', async () => {
    expect(rendered.length).toBeGreaterThanOrEqual(10);
    const r = await run('bash', [path.join(root, 'scripts/check-deploy.sh'), 'validate', ...rendered], { cwd: root });
    if (r.code !== 0) console.log(r.out);
    expectOk(r);
  });
});
