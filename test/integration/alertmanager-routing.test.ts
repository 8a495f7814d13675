// examples/alertmanager.yml loaded into a real Alertmanager, each version the suite runs (Debian's
// 0.25 and 0.35 from scripts/setup-engines.sh, test/harness/engines.ts): alerts posted through its
// v2 API are routed by severity to the pager and chat webhooks, and the inhibition rules hold (the
// inhibited alerts are reported as such and never delivered), and one Hypha outage is one notification.
// And examples/alertmanagerconfig.yaml as the Prometheus Operator renders it (its route under a
// namespace="monitoring" matcher): the pages of that namespace reach its receivers, another namespace's do not.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { freePorts } from '../harness/ports';
import { Proc, startProc, waitFor } from '../harness/proc';
import { alertmanagerVersions, AlertmanagerVersion, assertEngine } from '../harness/engines';
import { AlertmanagerConfigObject, renderAlertmanagerConfig } from '../helpers/alertmanagerconfig';
import { repoRoot } from '../../src/util/repo-root';

jest.setTimeout(120_000);

const EXAMPLE_WEBHOOK_BASE = 'http://127.0.0.1:5001';

interface Delivery {
  path: string;
  at: number;
  body: WebhookPayload;
}

interface WebhookAlert {
  status: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

interface WebhookPayload {
  version: string;
  receiver: string;
  status: string;
  alerts: WebhookAlert[];
}

interface ApiAlert {
  labels: Record<string, string>;
  status: { state: string; inhibitedBy: string[]; silencedBy: string[] };
}

const JOB = 'hypha-serve-exporter';

/** An alert as the shipped rules would send it (labels the rules produce, plus severity). */
function alert(alertname: string, severity: string, labels: Record<string, string>): { labels: Record<string, string>; annotations: Record<string, string> } {
  return {
    labels: { alertname, severity, job: JOB, ...labels },
    annotations: { summary: `${alertname} (test)`, description: 'posted by alertmanager-routing.test.ts' },
  };
}

// Fact alerts carry no instance (the rules aggregate it away); each scenario runs under its own job.
// A (job -a): Hypha is down - the registry connection and two watched services. The registration
//   alert of that Hypha server and the stale proxy of a down service are inhibited, and the three
//   HyphaServeSourceDown alerts arrive as one notification (defect 6: not one per upstream).
// B (job -b): Ray cluster kth is down: kth's Serve alerts are inhibited, ebi's are not; the worker
//   view of ebi's unregistered app is inhibited by the Ray view of the same (ray_cluster, app, hypha).
// C (job -c): a stale cached proxy inhibits its cached-probe symptom.
// D (job -d): only the watched service ws-lab/model-registry is down (defect 1): it silences
//   neither another service's stale proxy nor a registration alert.
const ALERTS = {
  hyphaDownA: alert('HyphaServeSourceDown', 'critical', { job: `${JOB}-a`, source: 'hypha', hypha: 'main' }),
  amDownA: alert('HyphaServeSourceDown', 'critical', { job: `${JOB}-a`, source: 'hypha_service', service: 'public/artifact-manager', hypha: 'main' }),
  registryDownA: alert('HyphaServeSourceDown', 'critical', { job: `${JOB}-a`, source: 'hypha_service', service: 'ws-lab/model-registry', hypha: 'main' }),
  notRegisteredA: alert('HyphaServeAppRunningNotRegistered', 'critical', { job: `${JOB}-a`, ray_cluster: 'kth', app: 'model-runner', hypha: 'main' }),
  staleA: alert('HyphaServiceCachedProxyStale', 'critical', { job: `${JOB}-a`, service: 'public/artifact-manager', holder: 'exporter' }),
  rayDownB: alert('HyphaServeSourceDown', 'critical', { job: `${JOB}-b`, source: 'ray', ray_cluster: 'kth' }),
  unhealthyKthB: alert('HyphaServeAppUnhealthy', 'warning', { job: `${JOB}-b`, ray_cluster: 'kth', app: 'model-runner' }),
  noProxyKthB: alert('HyphaServeAllProxiesUnready', 'critical', { job: `${JOB}-b`, ray_cluster: 'kth' }),
  unhealthyEbiB: alert('HyphaServeAppUnhealthy', 'warning', { job: `${JOB}-b`, ray_cluster: 'ebi', app: 'cellpose' }),
  notRegisteredEbiB: alert('HyphaServeAppRunningNotRegistered', 'critical', { job: `${JOB}-b`, ray_cluster: 'ebi', app: 'cellpose', hypha: 'main' }),
  workerViewEbiB: alert('HyphaServeWorkerAppRunningNotRegistered', 'critical', {
    job: `${JOB}-b`, hypha: 'main', worker: 'bioimage-io/w:bioengine-worker', ray_cluster: 'ebi', app: 'cellpose',
  }),
  staleC: alert('HyphaServiceCachedProxyStale', 'critical', { job: `${JOB}-c`, service: 'public/artifact-manager', holder: 'exporter' }),
  cachedProbeC: alert('HyphaServiceCachedProbeFailing', 'critical', { job: `${JOB}-c`, service: 'public/artifact-manager', via: 'cached' }),
  registryDownD: alert('HyphaServeSourceDown', 'critical', { job: `${JOB}-d`, source: 'hypha_service', service: 'ws-lab/model-registry', hypha: 'main' }),
  staleD: alert('HyphaServiceCachedProxyStale', 'critical', { job: `${JOB}-d`, service: 'public/artifact-manager', holder: 'exporter' }),
  notRegisteredD: alert('HyphaServeAppRunningNotRegistered', 'critical', { job: `${JOB}-d`, ray_cluster: 'kth', app: 'model-runner', hypha: 'main' }),
};
type Key = keyof typeof ALERTS;
const INHIBITED: Key[] = ['notRegisteredA', 'staleA', 'unhealthyKthB', 'noProxyKthB', 'workerViewEbiB', 'cachedProbeC'];
const TO_PAGER: Key[] = ['hyphaDownA', 'amDownA', 'registryDownA', 'rayDownB', 'notRegisteredEbiB', 'staleC', 'registryDownD', 'staleD', 'notRegisteredD'];
const TO_CHAT: Key[] = ['unhealthyEbiB'];
/** HyphaServeSourceDown of Hypha-side sources (no ray_cluster): one group, one notification. */
const ONE_HYPHA_OUTAGE: Key[] = ['hyphaDownA', 'amDownA', 'registryDownA', 'registryDownD'];

/** A webhook receiver on `port` that records every delivery. */
async function startDeliveryReceiver(port: number, deliveries: Delivery[]): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c: Buffer) => (data += c.toString('utf8')));
    req.on('end', () => {
      deliveries.push({ path: req.url ?? '', at: Date.now(), body: JSON.parse(data) as WebhookPayload });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return server;
}

function sameAlert(labels: Record<string, string>, key: Key): boolean {
  const want = ALERTS[key].labels;
  return Object.keys(want).length === Object.keys(labels).length && Object.entries(want).every(([k, v]) => labels[k] === v);
}

describe.each(alertmanagerVersions().map((v) => [v.label, v] as const))('Alertmanager %s', (label, version: AlertmanagerVersion) => {
  let am: Proc | undefined;
  let receiver: http.Server | undefined;
  let tmp = '';
  let amUrl = '';
  const deliveries: Delivery[] = [];

  beforeAll(async () => {
    if (version !== alertmanagerVersions()[0]) assertEngine('alertmanager');
    const [receiverPort, amPort] = await freePorts(2);
    receiver = await startDeliveryReceiver(receiverPort, deliveries);

    // The shipped example, with two documented test overrides: the webhooks point at this
    // test's receiver, and grouping waits are shortened so the test takes seconds.
    const example = fs.readFileSync(path.join(repoRoot(), 'examples', 'alertmanager.yml'), 'utf8');
    expect(example).toContain(EXAMPLE_WEBHOOK_BASE);
    const cfg = parse(example.split(EXAMPLE_WEBHOOK_BASE).join(`http://127.0.0.1:${receiverPort}`)) as { route: Record<string, unknown> };
    cfg.route.group_wait = '1s';
    cfg.route.group_interval = '2s';
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hse-am-'));
    const cfgFile = path.join(tmp, 'alertmanager.yml');
    fs.writeFileSync(cfgFile, stringify(cfg));

    amUrl = `http://127.0.0.1:${amPort}`;
    am = startProc(`alertmanager-${label}`, version.alertmanager, [
      `--config.file=${cfgFile}`,
      `--storage.path=${path.join(tmp, 'data')}`,
      `--web.listen-address=127.0.0.1:${amPort}`,
      '--cluster.listen-address=', // a single instance: no gossip port
      '--log.level=warn',
    ]);
    await waitFor('alertmanager ready', async () => (await fetch(`${amUrl}/-/ready`)).ok, 30_000);
    const status = (await (await fetch(`${amUrl}/api/v2/status`)).json()) as { versionInfo: { version: string } };
    expect(status.versionInfo.version).toMatch(new RegExp(`^${label.replace('.', '\\.')}\\.`));
  });

  afterAll(async () => {
    await am?.stop();
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('routes by severity and holds every inhibition rule', async () => {
    const posted = Date.now();
    const res = await fetch(`${amUrl}/api/v2/alerts`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(Object.values(ALERTS)),
    });
    expect(res.status).toBe(200);

    // Alertmanager's own verdict, through the API. The inhibitor learns about source alerts
    // asynchronously, so poll until it settles; then compare alert by alert.
    let listed: ApiAlert[] = [];
    await waitFor(
      'all alerts listed with their inhibition computed',
      async () => {
        listed = (await (await fetch(`${amUrl}/api/v2/alerts`)).json()) as ApiAlert[];
        const inhibitedCount = listed.filter((a) => a.status.inhibitedBy.length > 0).length;
        return listed.length === Object.keys(ALERTS).length && inhibitedCount === INHIBITED.length;
      },
      10_000,
    ).catch(() => undefined); // a wrong outcome is reported precisely by the checks below
    for (const key of Object.keys(ALERTS) as Key[]) {
      const a = listed.find((x) => sameAlert(x.labels, key));
      expect({ key, found: a !== undefined }).toEqual({ key, found: true });
      const inhibited = INHIBITED.includes(key);
      expect({ key, state: a?.status.state, inhibited: (a?.status.inhibitedBy.length ?? 0) > 0 }).toEqual({
        key,
        state: inhibited ? 'suppressed' : 'active',
        inhibited,
      });
    }

    // What reaches the webhooks.
    const delivered = (p: string) => deliveries.filter((d) => d.path === p).flatMap((d) => d.body.alerts.map((a) => a.labels));
    await waitFor(
      'pager and chat notifications',
      async () =>
        TO_PAGER.every((k) => delivered('/pager').some((l) => sameAlert(l, k))) &&
        TO_CHAT.every((k) => delivered('/chat').some((l) => sameAlert(l, k))),
      30_000,
    );
    // Let a further group interval pass: an inhibited alert must still not have been sent.
    await new Promise((r) => setTimeout(r, 3_000));
    const all = [...delivered('/pager'), ...delivered('/chat')];
    for (const k of INHIBITED) expect({ k, delivered: all.some((l) => sameAlert(l, k)) }).toEqual({ k, delivered: false });
    for (const k of TO_PAGER) expect({ k, inChat: delivered('/chat').some((l) => sameAlert(l, k)) }).toEqual({ k, inChat: false });
    // Defect 6: the Hypha-side HyphaServeSourceDown alerts share one notification (group_by has no
    // source/service), while the Ray cluster's outage is its own.
    const withHyphaOutage = deliveries.filter((d) => d.body.alerts.some((a) => ONE_HYPHA_OUTAGE.some((k) => sameAlert(a.labels, k))));
    expect(withHyphaOutage.length).toBe(1);
    for (const k of ONE_HYPHA_OUTAGE) expect({ k, inIt: withHyphaOutage[0].body.alerts.some((a) => sameAlert(a.labels, k)) }).toEqual({ k, inIt: true });
    expect(withHyphaOutage[0].body.alerts.some((a) => sameAlert(a.labels, 'rayDownB'))).toBe(false);
    for (const d of deliveries) {
      expect(d.body.version).toBe('4');
      expect(d.body.status).toBe('firing');
      expect(d.body.receiver).toBe(d.path === '/pager' ? 'pager' : 'chat');
    }
    const first = Math.min(...deliveries.map((d) => d.at));
    console.log(`alertmanager ${label}: ${deliveries.length} notifications (${deliveries.filter((d) => d.path === '/pager').length} pager, ` +
      `${deliveries.filter((d) => d.path === '/chat').length} chat); first ${first - posted} ms after posting (group_wait 1s)`);
  });
});

/** Routes of the AlertmanagerConfig example: the namespace its route matches, and one the operator keeps out. */
const AMC_ALERTS = {
  page: alert('HyphaServeAppRunningNotRegistered', 'critical', { namespace: 'monitoring', ray_cluster: 'kth', app: 'model-runner', hypha: 'main' }),
  warning: alert('HyphaServeAppUnhealthy', 'warning', { namespace: 'monitoring', ray_cluster: 'kth', app: 'cellpose' }),
  otherNamespace: alert('HyphaServeAppRunningNotRegistered', 'critical', { namespace: 'ml-staging', ray_cluster: 'kth', app: 'model-runner', hypha: 'main' }),
};

describe.each(alertmanagerVersions().map((v) => [v.label, v] as const))('Alertmanager %s with the AlertmanagerConfig example', (label, version: AlertmanagerVersion) => {
  let am: Proc | undefined;
  let receiver: http.Server | undefined;
  let tmp = '';
  let amUrl = '';
  const deliveries: Delivery[] = [];

  beforeAll(async () => {
    if (version !== alertmanagerVersions()[0]) assertEngine('alertmanager');
    const [receiverPort, amPort] = await freePorts(2);
    receiver = await startDeliveryReceiver(receiverPort, deliveries);
    const text = fs.readFileSync(path.join(repoRoot(), 'examples', 'alertmanagerconfig.yaml'), 'utf8');
    expect(text).toContain(EXAMPLE_WEBHOOK_BASE);
    const amc = parse(text.split(EXAMPLE_WEBHOOK_BASE).join(`http://127.0.0.1:${receiverPort}`)) as AlertmanagerConfigObject;
    amc.spec.route.groupWait = '1s';
    amc.spec.route.groupInterval = '2s';
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hse-amc-'));
    const cfgFile = path.join(tmp, 'alertmanager.yml');
    fs.writeFileSync(cfgFile, stringify(renderAlertmanagerConfig(amc)));
    amUrl = `http://127.0.0.1:${amPort}`;
    am = startProc(`alertmanager-amc-${label}`, version.alertmanager, [
      `--config.file=${cfgFile}`,
      `--storage.path=${path.join(tmp, 'data')}`,
      `--web.listen-address=127.0.0.1:${amPort}`,
      '--cluster.listen-address=',
      '--log.level=warn',
    ]);
    await waitFor('alertmanager ready', async () => (await fetch(`${amUrl}/-/ready`)).ok, 30_000);
  });

  afterAll(async () => {
    await am?.stop();
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('a page with namespace="monitoring" reaches the pager of the namespace\'s route; the same page from another namespace does not', async () => {
    const res = await fetch(`${amUrl}/api/v2/alerts`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(Object.values(AMC_ALERTS)),
    });
    expect(res.status).toBe(200);
    const delivered = (p: string) => deliveries.filter((d) => d.path === p).flatMap((d) => d.body.alerts.map((a) => a.labels));
    const is = (l: Record<string, string>, a: { labels: Record<string, string> }) => JSON.stringify(Object.entries(l).sort()) === JSON.stringify(Object.entries(a.labels).sort());
    await waitFor('pager and chat notifications', async () =>
      delivered('/pager').some((l) => is(l, AMC_ALERTS.page)) && delivered('/chat').some((l) => is(l, AMC_ALERTS.warning)), 30_000);
    // A further group interval: the other namespace's page must still not have been sent.
    await new Promise((r) => setTimeout(r, 3_000));
    const all = [...delivered('/pager'), ...delivered('/chat')];
    expect(all.some((l) => is(l, AMC_ALERTS.otherNamespace))).toBe(false);
    expect(delivered('/chat').some((l) => is(l, AMC_ALERTS.page))).toBe(false);
    for (const d of deliveries) expect(d.body.receiver).toBe(d.path === '/pager' ? 'monitoring/hypha-serve-exporter/pager' : 'monitoring/hypha-serve-exporter/chat');
    // Alertmanager did receive it: routed to the root receiver, which sends nothing.
    const listed = (await (await fetch(`${amUrl}/api/v2/alerts?receiver=null`)).json()) as ApiAlert[];
    expect(listed.some((a) => a.labels.namespace === 'ml-staging')).toBe(true);
  });
});
