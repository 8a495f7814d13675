/**
 * The real Prometheus Operator (v0.85.0, built by scripts/setup-engines.sh) renders the chart's ServiceMonitor and
 * PrometheusRule, a Prometheus CR, an Alertmanager CR and a namespaced AlertmanagerConfig against a real
 * kube-apiserver (no kubelet: the StatefulSets it creates never run). The test reads back what the operator
 * generated (Secret prometheus-<name>, ConfigMaps prometheus-<name>-rulefiles-*, Secret alertmanager-<name>-generated)
 * and runs real Prometheus and Alertmanager on exactly that, rewriting only the rule file paths, the config
 * reloader's $(POD_NAME)/$(SHARD) and the service discovery.
 * Neither Prometheus here has kubernetes_sd_configs, so each SD block becomes the static target the endpointslice
 * role would find, with its __meta_kubernetes_* labels made from the Service and EndpointSlice read back from the
 * apiserver; the operator's relabelings run unchanged, so the series get `namespace` from the ServiceMonitor's target
 * labels. The page reaches the AlertmanagerConfig's webhook only if the alert keeps `namespace` (the operator adds
 * namespace="<ns>" to that route); an alert without it is asserted to fall to the generated root route.
 * Incident 1 (HyphaServeAppRunningNotRegistered) comes from a running exporter over a real Hypha and a replayed
 * recorded Ray Serve answer (an app RUNNING whose service is missing), with the registration wait scaled down.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import YAML from 'yaml';
import { assertEngine, engineBinary, engineListed, ENGINE_VERSIONS, operatorCrdsDir, alertmanagerVersions } from '../harness/engines';
import { spawnExporter, ExporterProcess } from '../harness/exporter-process';
import { startHypha, HyphaHandle } from '../harness/hypha';
import { deployTools, KubeApiserver, run, startKubeApiserver } from '../harness/kube-apiserver';
import { freePorts } from '../harness/ports';
import { artifactsDir, Proc, startProc, waitFor } from '../harness/proc';
import { repoRoot } from '../../src/util/repo-root';
import { DEBIAN_PROMETHEUS, prometheusVersions } from '../harness/prometheus-versions';
import { prometheusBuildVersion } from '../harness/prometheus';
import { startWebhookReceiver } from '../harness/webhook-receiver';
import { json, startUpstream } from '../helpers/http-upstream';
import { tmpDir } from '../helpers/tmp';

jest.setTimeout(300_000);

const NS = 'monitoring';
const NAME = 'hse';
const ALERT = 'HyphaServeAppRunningNotRegistered';
const APP = 'two-step'; // the RUNNING app of the recorded answer
/** The apiserver refuses loopback endpoint addresses: the exporter and Alertmanager listen on this host's first other IPv4. */
const HOST_IP = Object.values(os.networkInterfaces()).flat().find((a) => a?.family === 'IPv4' && !a.internal)?.address ?? '';
const RECORDED_RAY = path.join(repoRoot(), 'test', 'fixtures', 'ray', '2.60', 'app-running.json');

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;
interface Secret { data: Record<string, string> }
interface ConfigMap { metadata: { name: string }; data: Record<string, string> }
interface SdConfig { role?: string; api_server?: string; [k: string]: unknown }
interface PromConfig {
  rule_files?: string[];
  scrape_configs?: Array<{ job_name: string; kubernetes_sd_configs?: SdConfig[] }>;
  alerting?: { alertmanagers?: Array<{ kubernetes_sd_configs?: SdConfig[] }> };
}
interface AmRoute { receiver?: string; matchers?: string[]; routes?: AmRoute[] }
interface ApiAlert { labels: Record<string, string>; receivers: Array<{ name: string }> }

/** The newest Prometheus this run has (3.x when built, else Debian's 2.42) and the newest Alertmanager. */
const prom = prometheusVersions().at(-1) ?? DEBIAN_PROMETHEUS;
const am = alertmanagerVersions().at(-1) ?? alertmanagerVersions()[0];

const maybe = engineListed('prometheus-operator') ? describe : describe.skip;
if (!engineListed('prometheus-operator')) {
  process.stdout.write(`[engines] NOT checked: the Prometheus Operator renders the chart (prometheus-operator ${ENGINE_VERSIONS['prometheus-operator']} not built: bash scripts/setup-engines.sh)\n`);
}

maybe(`Prometheus Operator ${ENGINE_VERSIONS['prometheus-operator']}: the chart's monitoring objects as the operator renders them page through an AlertmanagerConfig`, () => {
  const tmp = tmpDir('hse-operator-');
  const tools = deployTools();
  let api: KubeApiserver;
  let hypha: HyphaHandle;
  let ray: Awaited<ReturnType<typeof startUpstream>>;
  let exporter: ExporterProcess;
  let receiver: Receiver;
  const procs: Proc[] = [];
  const timings: string[] = [];
  const t0 = Date.now();
  const mark = (what: string) => timings.push(`${what}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const r = await api.kubectl(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.out}`);
    return r.stdout;
  };
  const apply = (docs: unknown[]) => kubectl(['apply', '--server-side', '--field-manager=hse-test', '-n', NS, '-f', '-'], docs.map((d) => YAML.stringify(d)).join('---\n'));
  const getJson = async <T>(kind: string, name: string): Promise<T> => JSON.parse(await kubectl(['get', kind, name, '-n', NS, '-o', 'json'])) as T;
  const sanitize = (k: string) => k.replace(/[^a-zA-Z0-9_]/g, '_');
  /** What Prometheus' kubernetes_sd_configs (role endpointslice) would find in NS: a static target per endpoint port. */
  const discovered = async () => {
    type Slice = { metadata: { name: string; labels: Record<string, string> }; addressType: string; endpoints: Array<{ addresses: string[]; conditions: { ready: boolean } }>; ports: Array<{ name: string; port: number; protocol: string }> };
    type Svc = { metadata: { name: string; labels?: Record<string, string> } };
    const slices = (JSON.parse(await kubectl(['get', 'endpointslices', '-n', NS, '-o', 'json'])) as { items: Slice[] }).items;
    const out: Array<{ targets: string[]; labels: Record<string, string> }> = [];
    for (const sl of slices) {
      const svcName = sl.metadata.labels['kubernetes.io/service-name'];
      const svc = await getJson<Svc>('service', svcName);
      const meta: Record<string, string> = { __meta_kubernetes_namespace: NS, __meta_kubernetes_endpointslice_name: sl.metadata.name, __meta_kubernetes_endpointslice_address_type: sl.addressType, __meta_kubernetes_service_name: svcName };
      for (const [k, v] of Object.entries(sl.metadata.labels)) Object.assign(meta, { [`__meta_kubernetes_endpointslice_label_${sanitize(k)}`]: v, [`__meta_kubernetes_endpointslice_labelpresent_${sanitize(k)}`]: 'true' });
      for (const [k, v] of Object.entries(svc.metadata.labels ?? {})) Object.assign(meta, { [`__meta_kubernetes_service_label_${sanitize(k)}`]: v, [`__meta_kubernetes_service_labelpresent_${sanitize(k)}`]: 'true' });
      for (const ep of sl.endpoints) {
        for (const port of sl.ports) {
          out.push({
            targets: ep.addresses.map((a) => `${a}:${port.port}`),
            labels: { ...meta, __meta_kubernetes_endpointslice_port_name: port.name, __meta_kubernetes_endpointslice_port_protocol: port.protocol, __meta_kubernetes_endpointslice_port: String(port.port), __meta_kubernetes_endpointslice_endpoint_conditions_ready: String(ep.conditions.ready) },
          });
        }
      }
    }
    return out;
  };
  const gunzipKey = (s: Secret, key: string): string => zlib.gunzipSync(Buffer.from(s.data[key], 'base64')).toString('utf8');
  /** An EndpointSlice for a Service (no controller runs here to make one): a port on this host's HOST_IP. */
  const endpointSlice = (service: string, port: string, number: number) => ({
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { name: `${service}-test`, namespace: NS, labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints: [{ addresses: [HOST_IP], conditions: { ready: true } }],
    ports: [{ name: port, port: number, protocol: 'TCP' }],
  });

  beforeAll(async () => {
    assertEngine('prometheus-operator');
    if (!HOST_IP) throw new Error('no non-loopback IPv4 address: Kubernetes endpoints cannot point at 127.0.0.1');
    const rayBody = JSON.parse(fs.readFileSync(RECORDED_RAY, 'utf8')) as unknown;
    [api, hypha, ray, receiver] = await Promise.all([
      startKubeApiserver(tools, tmp.dir), startHypha({}), startUpstream(json(rayBody)), startWebhookReceiver(),
    ]);
    mark('kube-apiserver, Hypha, recorded Ray, webhook receiver up');
    exporter = await spawnExporter({
      name: 'operator-exporter', host: HOST_IP, logLevel: 'info', env: { HYPHA_TOKEN: hypha.rootToken },
      config: [
        'global: {interval: 1s, timeout: 3s}',
        'ray_clusters:',
        `  - {name: rec, dashboard_url: "${ray.url}", proxy_probe: {enabled: false}}`,
        'hypha:',
        '  name: main',
        `  server_url: ${hypha.url}`,
        '  bearer_token_env: HYPHA_TOKEN',
        'hypha_registration:',
        '  reconnect_settle: 1s',
        '  workers: {discover: false}',
        // Scaled down from 5m to its minimum: the page is the exporter's decision; proven here is the path it takes.
        '  page_waits: {uncertain: 30s}',
        // A plain Serve app (no BioEngine ProxyDeployment): its expected service comes from a template.
        '  clusters: [{cluster: rec, templates: [{service: "{workspace}/serve-bridge:{app}"}]}]',
        'watched_services: []',
        '',
      ].join('\n'),
    });
    await kubectl(['apply', '--server-side', '-f', operatorCrdsDir()]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
    await kubectl(['create', 'namespace', NS]);
    mark('exporter ready, CRDs established');

    const [operatorPort] = await freePorts(1);
    procs.push(startProc('prometheus-operator', engineBinary('prometheus-operator', 'operator'), [
      `--web.listen-address=127.0.0.1:${operatorPort}`, `--namespaces=${NS}`, '--log-level=info',
    ], { env: { ...process.env, KUBECONFIG: api.kubeconfig } }));
  });

  afterAll(async () => {
    console.log(`prometheus-operator.test.ts timings (Prometheus ${prom.label}, Alertmanager ${am.label}):\n  ${timings.join('\n  ')}`);
    for (const p of procs.reverse()) await p.stop('SIGTERM', 10_000);
    await exporter?.stop();
    await receiver?.close();
    await ray?.close();
    await hypha?.stop();
    await api?.stop();
    tmp.cleanup();
  });

  test(`${ALERT} fires on what the operator generated and is routed by the AlertmanagerConfig's namespace matcher`, async () => {
    // The chart, rendered as for a cluster with the operator; its Service, ServiceMonitor and PrometheusRule.
    const rendered = await run(tools.helm, ['template', NAME, path.join(repoRoot(), 'deploy/helm/hypha-serve-exporter'), '-n', NS,
      '--api-versions', 'monitoring.coreos.com/v1', '--set', 'serviceMonitor.interval=1s', '--set', 'serviceMonitor.scrapeTimeout=1s']);
    if (rendered.code !== 0) throw new Error(rendered.out);
    const chart = YAML.parseAllDocuments(rendered.stdout).map((d) => d.toJS() as { kind: string; metadata: { name: string; labels: Record<string, string> } } | null)
      .filter((o) => o !== null && ['Service', 'ServiceMonitor', 'PrometheusRule'].includes(o.kind));
    expect(chart.map((o) => o?.kind).sort()).toEqual(['PrometheusRule', 'Service', 'ServiceMonitor']);
    const service = chart.find((o) => o?.kind === 'Service');
    const selectorLabels = { 'app.kubernetes.io/name': 'hypha-serve-exporter', 'app.kubernetes.io/instance': NAME };
    await apply([...chart, endpointSlice(service?.metadata.name ?? '', 'http', exporter.port)]);

    const pv = prometheusBuildVersion(prom.prometheus);
    const promVersion = `v${pv.major}.${pv.minor}.${pv.patch}`;
    const amVersion = am.label === '0.25' ? 'v0.25.0' : ENGINE_VERSIONS.alertmanager;
    await apply([
      {
        apiVersion: 'monitoring.coreos.com/v1', kind: 'Prometheus', metadata: { name: NAME, namespace: NS },
        spec: {
          version: promVersion, serviceDiscoveryRole: 'EndpointSlice', evaluationInterval: '1s', scrapeInterval: '1s',
          serviceMonitorSelector: { matchLabels: selectorLabels }, ruleSelector: { matchLabels: selectorLabels },
          alerting: { alertmanagers: [{ namespace: NS, name: 'alertmanager-operated', port: 'web', apiVersion: 'v2' }] },
        },
      },
      {
        apiVersion: 'monitoring.coreos.com/v1', kind: 'Alertmanager', metadata: { name: NAME, namespace: NS },
        spec: { version: amVersion, alertmanagerConfigSelector: { matchLabels: { 'hse-test': 'pager' } } },
      },
      {
        apiVersion: 'monitoring.coreos.com/v1alpha1', kind: 'AlertmanagerConfig', metadata: { name: 'pager', namespace: NS, labels: { 'hse-test': 'pager' } },
        spec: {
          route: { receiver: 'pager', matchers: [{ name: 'severity', value: 'critical', matchType: '=' }], groupWait: '1s', groupInterval: '2s', repeatInterval: '1h' },
          receivers: [{ name: 'pager', webhookConfigs: [{ url: `${receiver.url}/pager`, sendResolved: true }] }],
        },
      },
    ]);

    // What the operator generated (names as in pkg/prometheus/server/rules.go, pkg/alertmanager/statefulset.go).
    let promSecret: Secret | undefined;
    let amSecret: Secret | undefined;
    let amYaml = '';
    await waitFor('the operator renders Secret prometheus-hse, alertmanager-hse-generated with the AlertmanagerConfig', async () => {
      promSecret = await getJson<Secret>('secret', `prometheus-${NAME}`).catch(() => undefined);
      amSecret = await getJson<Secret>('secret', `alertmanager-${NAME}-generated`).catch(() => undefined);
      amYaml = amSecret === undefined ? '' : gunzipKey(amSecret, 'alertmanager.yaml.gz');
      return promSecret !== undefined && amYaml.includes('pager');
    }, 90_000, 1_000).catch((e: Error) => { throw new Error(`${e.message}\noperator log:\n${procs[0].output().slice(-4000)}`); });
    mark('operator rendered the Secrets');
    const promYaml = gunzipKey(promSecret as Secret, 'prometheus.yaml.gz');
    const ruleMaps = (JSON.parse(await kubectl(['get', 'configmap', '-n', NS, '-o', 'json'])) as { items: ConfigMap[] }).items
      .filter((c) => c.metadata.name.startsWith(`prometheus-${NAME}-rulefiles-`));
    expect(ruleMaps.map((c) => c.metadata.name)).toEqual([`prometheus-${NAME}-rulefiles-0`]);
    const ruleText = Object.values(ruleMaps[0].data).join('\n');
    expect(ruleText).toContain(`alert: ${ALERT}`);
    fs.writeFileSync(path.join(artifactsDir(), 'operator-prometheus.yaml'), promYaml);
    fs.writeFileSync(path.join(artifactsDir(), 'operator-alertmanager.yaml'), amYaml);

    // The AlertmanagerConfig's route, as the operator rewrote it: scoped to its namespace.
    const amCfg = YAML.parse(amYaml) as { route: AmRoute };
    const route = (amCfg.route.routes ?? []).find((r) => r.receiver === `${NS}/pager/pager`);
    expect(route?.matchers).toEqual(expect.arrayContaining([`namespace="${NS}"`, 'severity="critical"']));

    const [promPort, amPort] = await freePorts(2);
    const amFile = tmp.write('alertmanager.yaml', amYaml);
    procs.push(startProc(`alertmanager-${am.label}`, am.alertmanager, [
      `--config.file=${amFile}`, `--storage.path=${path.join(tmp.dir, 'am-data')}`, `--web.listen-address=${HOST_IP}:${amPort}`, '--cluster.listen-address=',
    ]));
    // The operator's Service alertmanager-operated exists; its endpoints are this Alertmanager.
    await waitFor('alertmanager-operated Service', async () => (await api.kubectl(['get', 'service', 'alertmanager-operated', '-n', NS])).code === 0, 30_000, 500);
    await apply([endpointSlice('alertmanager-operated', 'web', amPort)]);

    // Prometheus on the generated config: rule files where the operator mounts them go to the temp dir.
    const rulesRoot = path.join(tmp.dir, 'rules');
    for (const c of ruleMaps) {
      fs.mkdirSync(path.join(rulesRoot, c.metadata.name), { recursive: true });
      for (const [k, v] of Object.entries(c.data)) fs.writeFileSync(path.join(rulesRoot, c.metadata.name, k), v);
    }
    // $(POD_NAME) and $(SHARD) are the config reloader's substitutions (one pod, shard 0).
    const pc = YAML.parse(promYaml.split('$(POD_NAME)').join(`prometheus-${NAME}-0`).split('$(SHARD)').join('0')) as PromConfig;
    expect(pc.rule_files).toEqual([`/etc/prometheus/rules/prometheus-${NAME}-rulefiles-0/*.yaml`]);
    pc.rule_files = (pc.rule_files ?? []).map((f) => f.replace('/etc/prometheus/rules', rulesRoot));
    // Neither Prometheus here has kubernetes_sd_configs (Debian's 2.42 is built without it, the 3.x of
    // scripts/setup-prometheus3.sh with -tags remove_all_sd): each SD block becomes the static target it would
    // discover, with the __meta_kubernetes_* labels Prometheus' endpointslice role gives, made from the Service
    // and EndpointSlice read back from the apiserver. The operator's relabelings then run unchanged.
    const jobs: Array<{ kubernetes_sd_configs?: SdConfig[]; static_configs?: unknown[]; relabel_configs?: unknown[] }> = [...(pc.scrape_configs ?? []), ...(pc.alerting?.alertmanagers ?? [])];
    expect(jobs.filter((j) => j.kubernetes_sd_configs !== undefined).length).toBe(2);
    for (const j of jobs) {
      const sd = j.kubernetes_sd_configs;
      if (sd === undefined) continue;
      expect(sd.map((c) => [c.role, c.api_server])).toEqual([['endpointslice', undefined]]);
      j.static_configs = await discovered();
      delete j.kubernetes_sd_configs;
    }
    const promFile = tmp.write('prometheus.yaml', YAML.stringify(pc));

    procs.push(startProc(`prometheus-${prom.label}`, prom.prometheus, [
      `--config.file=${promFile}`, `--storage.tsdb.path=${path.join(tmp.dir, 'prom-data')}`, `--web.listen-address=127.0.0.1:${promPort}`,
    ]));
    const promUrl = `http://127.0.0.1:${promPort}`;
    const amUrl = `http://${HOST_IP}:${amPort}`;
    await waitFor('Prometheus and Alertmanager ready', async () => {
      for (const p of procs) if (p.child.exitCode !== null) throw new Error(`${p.name} exited: ${p.output().slice(-3000)}`);
      return (await fetch(`${promUrl}/-/ready`)).ok && (await fetch(`${amUrl}/-/ready`)).ok;
    }, 60_000, 500);

    // The operator's relabelings keep the exporter's endpoint for the ServiceMonitor's job, labelled with its namespace.
    type Target = { labels: Record<string, string>; health: string; lastError: string };
    let targets: Target[] = [];
    await waitFor('the exporter a target of the ServiceMonitor and up', async () => {
      const r = (await (await fetch(`${promUrl}/api/v1/targets?state=active`)).json()) as { data: { activeTargets: Target[] } };
      targets = r.data.activeTargets;
      return targets.some((t) => t.health === 'up');
    }, 60_000, 500).catch((e: Error) => { throw new Error(`${e.message}: ${JSON.stringify(targets)}`); });
    expect(targets.map((t) => [t.labels.job, t.labels.namespace])).toEqual([[`hypha-serve-exporter-${NAME}`, NS]]);
    await waitFor('Alertmanager discovered', async () => {
      const r = (await (await fetch(`${promUrl}/api/v1/alertmanagers`)).json()) as { data: { activeAlertmanagers: Array<{ url: string }> } };
      return r.data.activeAlertmanagers.some((a) => a.url.includes(`${HOST_IP}:${amPort}`));
    }, 60_000, 500);
    mark('exporter scraped, Alertmanager selected');

    // Incident 1 fires in Prometheus on the operator's rule file and reaches Alertmanager.
    let inAm: ApiAlert | undefined;
    await waitFor(`${ALERT} in Alertmanager`, async () => {
      const alerts = (await (await fetch(`${amUrl}/api/v2/alerts`)).json()) as ApiAlert[];
      inAm = alerts.find((a) => a.labels.alertname === ALERT && a.labels.app === APP);
      return inAm !== undefined;
    }, 120_000, 1_000).catch(async (e: Error) => {
      const q = async (expr: string) => JSON.stringify(await (await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`)).json());
      throw new Error(`${e.message}\npage: ${await q('hypha_serve_app_running_not_registered_page')}\nALERTS: ${await q('ALERTS')}`);
    });
    mark(`${ALERT} in Alertmanager`);
    console.log(`${ALERT} as Alertmanager holds it: ${JSON.stringify(inAm)}`);
    expect(inAm?.labels).toMatchObject({ severity: 'critical', ray_cluster: 'rec', hypha: 'main', job: `hypha-serve-exporter-${NAME}` });

    // The alert keeps the scrape's `namespace` (every alert's identity carries it): the AlertmanagerConfig's route,
    // which the operator scopes with namespace=NS, takes it. Without it the page fell to the generated root route's
    // `null` receiver and the webhook got nothing.
    expect(inAm?.labels.namespace).toBe(NS);
    expect(inAm?.receivers.map((r) => r.name)).toEqual([`${NS}/pager/pager`]);
    await waitFor('the page at the AlertmanagerConfig webhook', async () => receiver.firing(ALERT, '/pager').length > 0, 60_000, 500);
    mark('page delivered');
    const page = receiver.firing(ALERT, '/pager')[0];
    expect(page.receiver).toBe(`${NS}/pager/pager`);
    expect(page.alerts.find((a) => a.labels.alertname === ALERT)?.labels).toMatchObject({ namespace: NS, app: APP, ray_cluster: 'rec' });
  });
});
