// Sharding: several exporters split the Ray clusters, one configuration per shard
// (examples/ha/exporter-shard-*.yml) and one Prometheus job per shard (examples/ha/prometheus-shards.yml).
// Real peers on loopback: two Ray clusters (east with a BioEngine-like app, west idle), one Hypha, one
// exporter per shard, Prometheus running the example file with the rules (test override: `for:` ÷ 10),
// Alertmanager with the shipped routing, a webhook receiver. The west shard's exporter dies; an incident
// on east must still page once, with ray_cluster="east", and the dead shard pages as itself.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { startHypha, HyphaHandle } from '../harness/hypha';
import { startRay, RayCluster } from '../harness/ray';
import { Alertmanager, startAlertmanager } from '../harness/alertmanager';
import { overriddenRuleFiles } from '../harness/rules-override';
import { startWebhookReceiver } from '../harness/webhook-receiver';
import { artifactsDir, waitFor, startTogether } from '../harness/proc';
import { PrometheusServer } from '../harness/prometheus';
import { freePort } from '../harness/ports';
import { ExporterProcess, spawnExporter } from '../harness/exporter-process';
import { HA_EXAMPLES, startPrometheusFromExample } from '../harness/ha-stack';
import { BIOENGINE_PREFIX, bioengineApp } from '../helpers/bioengine-apps';
import { sleep } from '../helpers/e2e';
import { loadConfig } from '../../src/config/load';
import { repoRoot } from '../../src/util/repo-root';

jest.setTimeout(900_000);

const EAST = 'hypha-serve-exporter-east';
const WEST = 'hypha-serve-exporter-west';
const NOTIFY = 'HyphaServeAppRunningNotRegistered';
const DUPLICATE_WINDOW_MS = 20_000;

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

/** A shard's exporter config: its own clusters, the shared Hypha registry, no watched services. */
function shardConfig(clusters: Array<{ name: string; ray: RayCluster }>, hyphaUrl: string): string {
  return [
    'global: {interval: 1s, timeout: 3s}',
    'ray_clusters:',
    ...clusters.map((c) => `  - {name: ${c.name}, dashboard_url: "${c.ray.dashboardUrl}"}`),
    'hypha:',
    '  name: main',
    `  server_url: ${hyphaUrl}`,
    '  bearer_token_env: HYPHA_TOKEN',
    'hypha_registration:',
    '  reconnect_settle: 5s',
    '  workers: {discover: false}',
    // The exporter's waits, divided like the rules' for: (forDivisor 10), at their minimum.
    '  page_waits: {uncertain: 30s}',
    '  clusters:',
    ...clusters.map((c) => `    - {cluster: ${c.name}, bioengine: {worker_client_id: ${BIOENGINE_PREFIX}}}`),
    'watched_services: []',
  ].join('\n') + '\n';
}

describe('sharding: exporters with disjoint Ray clusters, one job per shard', () => {
  let hypha: HyphaHandle;
  let rayEast: RayCluster;
  let rayWest: RayCluster;
  let receiver: Receiver;
  let am: Alertmanager;
  let prom: PrometheusServer;
  const exp: Record<'east' | 'west', ExporterProcess | undefined> = { east: undefined, west: undefined };
  let rulesDir = '';
  let tokenDir = '';

  beforeAll(async () => {
    [hypha, rayEast] = await startTogether([startHypha({}), startRay({ numCpus: 2 })]);
    // One Ray head at a time: two starting at once on 2 cores can miss the raylet's registration.
    rayWest = await startRay({ numCpus: 1 });
    tokenDir = fs.mkdtempSync(path.join(os.tmpdir(), 'shard-token-'));
    fs.writeFileSync(path.join(tokenDir, 'hypha-token'), hypha.rootToken, { mode: 0o600 });
    receiver = await startWebhookReceiver(path.join(artifactsDir(), `pages-sharding-${Date.now()}.log`));
    am = await startAlertmanager({ webhookBase: receiver.url, groupWait: '1s', groupInterval: '2s', repeatInterval: '1h' });
    // Serve running on both clusters (west with no apps): the dashboards list clusters by their proxies.
    await Promise.all([rayEast.deploy({ applications: [] }), rayWest.deploy({ applications: [] })]);
    const env = { HYPHA_TOKEN: hypha.rootToken };
    [exp.east, exp.west] = await Promise.all([
      spawnExporter({ name: 'shard-east', config: shardConfig([{ name: 'east', ray: rayEast }], hypha.url), env, logLevel: 'info' }),
      // West cannot reach Hypha (a closed port: a network policy on its node, say) while east can.
      spawnExporter({ name: 'shard-west', config: shardConfig([{ name: 'west', ray: rayWest }], `http://127.0.0.1:${await freePort()}`), env, logLevel: 'info' }),
    ]);
    const rules = overriddenRuleFiles({ forDivisor: 10, minFor: '5s' });
    rulesDir = rules.dir;
    prom = await startPrometheusFromExample('prometheus-shards.yml', {
      targets: { [EAST]: [exp.east.instance], [WEST]: [exp.west.instance] },
      alertmanagers: [new URL(am.url).host], ruleFiles: rules.files, scrapeInterval: '1s', evaluationInterval: '1s',
    });
  });

  afterAll(async () => {
    await prom?.stop().catch(() => undefined);
    await am?.stop().catch(() => undefined);
    for (const e of Object.values(exp)) await e?.stop().catch(() => undefined);
    await receiver?.close();
    for (const r of [rayEast, rayWest]) await r?.stop().catch(() => undefined);
    await hypha?.stop().catch(() => undefined);
    if (rulesDir) fs.rmSync(rulesDir, { recursive: true, force: true });
    if (tokenDir) fs.rmSync(tokenDir, { recursive: true, force: true });
  });

  const firing = (alert: string, since: number, labels: Record<string, string> = {}) =>
    receiver.pages.filter((p) => p.receivedAt >= since && p.alerts.some((a) => a.status === 'firing' && a.labels.alertname === alert && Object.entries(labels).every(([k, v]) => a.labels[k] === v)));

  test('the example shard configs load, are disjoint, and only one shard watches services', () => {
    const load = (f: string) => {
      const text = fs.readFileSync(path.join(HA_EXAMPLES, f), 'utf8').split('/run/credentials/hypha-serve-exporter/').join(`${tokenDir}/`);
      fs.writeFileSync(path.join(tokenDir, 'ray-token'), 'x', { mode: 0o600 });
      const file = path.join(tokenDir, f);
      fs.writeFileSync(file, text);
      loadConfig(file, {});
      return parse(text) as { ray_clusters: Array<{ name: string }>; watched_services?: unknown[] };
    };
    const east = load('exporter-shard-east.yml');
    const west = load('exporter-shard-west.yml');
    load('exporter.yml');
    const eastNames = east.ray_clusters.map((c) => c.name);
    expect(west.ray_clusters.filter((c) => eastNames.includes(c.name))).toEqual([]);
    // Omitted means the default (the artifact manager): both shards would watch it.
    expect([east.watched_services?.length ?? 1, west.watched_services?.length ?? 1].filter((n) => n > 0)).toHaveLength(1);
  });

  test('each cluster is reported by exactly one shard, under that shard\'s job; the dashboards\' variables list both', async () => {
    await waitFor('both shards sampled their clusters', async () => (await prom.vector('hypha_serve_source_up{source="ray"} == 1')).length === 2, 60_000, 500);
    await waitFor('both clusters\' Serve proxies seen', async () => (await prom.vector('group by (ray_cluster) (hypha_serve_proxy_status)')).length === 2, 120_000, 500);
    const up = await prom.vector('hypha_serve_source_up{source="ray"}');
    expect(up.map((s) => [s.metric.job, s.metric.ray_cluster]).sort()).toEqual([[EAST, 'east'], [WEST, 'west']]);
    // Both shards sample the Hypha registry, each under its own job (west cannot reach it).
    expect((await prom.vector('hypha_serve_source_up{source="hypha"}')).map((s) => [s.metric.job, s.value[1]]).sort()).toEqual([[EAST, '1'], [WEST, '0']]);
    // Dashboard template variables (label_values(expr, label)) with "All" selected (.+) upstream.
    // Each `$var` becomes that variable's own allValue, as Grafana substitutes it (`cluster` is `.*`:
    // these shards' series carry no cluster label).
    const dash = JSON.parse(fs.readFileSync(path.join(repoRoot(), 'dashboards', 'json', 'serve-hypha-overview.json'), 'utf8')) as { templating: { list: Array<{ name: string; query?: unknown; allValue?: string }> } };
    const values = async (name: string) => {
      const v = dash.templating.list.find((x) => x.name === name);
      const q = typeof v?.query === 'string' ? v.query : (v?.query as { query?: string } | undefined)?.query;
      const m = /^label_values\((.*),\s*(\w+)\)$/.exec(q ?? '');
      if (!m) throw new Error(`dashboard variable ${name}: unexpected query ${String(q)}`);
      const allValue = (ref: string) => {
        const all = dash.templating.list.find((x) => x.name === ref)?.allValue;
        if (all === undefined) throw new Error(`dashboard variable ${name} refers to $${ref}, which has no allValue`);
        return all;
      };
      const expr = m[1].replace(/\$(\w+)/g, (_, ref: string) => allValue(ref));
      return (await prom.vector(`group by (${m[2]}) (${expr})`)).map((s) => s.metric[m[2]]).sort();
    };
    expect(await values('job')).toEqual([EAST, WEST]);
    expect(await values('ray_cluster')).toEqual(['east', 'west']);
  });

  it('one shard losing Hypha is its own HyphaServeSourceDown (job per shard), once, and only for that shard', async () => {
    // With both shards in one job, `max without (instance)` would take east's 1 and west's clusters
    // would go unwatched for registration without a page.
    const page = await waitFor('west Hypha source down page', async () => firing('HyphaServeSourceDown', 0, { source: 'hypha' })[0], 180_000, 250);
    await sleep(DUPLICATE_WINDOW_MS);
    const pages = firing('HyphaServeSourceDown', 0);
    expect(pages).toHaveLength(1);
    expect(page.alerts.filter((a) => a.labels.alertname === 'HyphaServeSourceDown').map((a) => [a.labels.job, a.labels.source, a.labels.hypha])).toEqual([[WEST, 'hypha', 'main']]);
  });

  it('west shard down: its exporter pages as itself, an incident on east still pages once with ray_cluster="east"', async () => {
    const t0 = Date.now();
    await (exp.west as ExporterProcess).kill();
    await rayEast.deploy({ applications: [bioengineApp({ name: 'shard-buggy', behaviour: 'buggy_deregister_at_zero', hyphaUrl: hypha.url, tokenFile: path.join(tokenDir, 'hypha-token'), initialReplicas: 1, downscaleDelayS: 20 })] });
    const down = await waitFor('west exporter down page', async () => firing('HyphaServeExporterDown', t0, { job: WEST })[0], 180_000, 250);
    process.stdout.write(`[sharding] west exporter killed → HyphaServeExporterDown in ${((down.receivedAt - t0) / 1000).toFixed(1)} s\n`);
    await waitFor('shard-buggy deregistered at zero', async () => (await prom.vector('hypha_serve_app_registration_state{app="shard-buggy",state="missing_scaled_to_zero"} == 1')).length === 1, 300_000, 250);
    const page = await waitFor('east incident page', async () => firing(NOTIFY, t0, { app: 'shard-buggy' })[0], 240_000, 250);
    const since = await prom.vector('hypha_serve_app_unregistered_since_timestamp_seconds{app="shard-buggy"}');
    if (since.length) process.stdout.write(`[sharding] east incident 1a → page in ${((page.receivedAt - Number(since[0].value[1]) * 1000) / 1000).toFixed(1)} s\n`);
    await sleep(DUPLICATE_WINDOW_MS);
    const pages = firing(NOTIFY, t0, { app: 'shard-buggy' });
    expect(pages).toHaveLength(1);
    const alert = pages[0].alerts.find((a) => a.labels.app === 'shard-buggy');
    expect(alert?.labels).toMatchObject({ ray_cluster: 'east', job: EAST, severity: 'critical' });
    expect(alert?.annotations.cause).toBe('missing_scaled_to_zero');
    // The dead shard is one page naming its job and instance. West's Hypha-down alert (job west) neither
    // repeats nor mutes east's page (the inhibition is per job); nothing new claims a source down.
    expect(firing('HyphaServeExporterDown', t0)).toHaveLength(1);
    expect(down.alerts.filter((a) => a.labels.alertname === 'HyphaServeExporterDown').map((a) => [a.labels.job, a.labels.instance])).toEqual([[WEST, exp.west?.instance]]);
    expect(firing('HyphaServeSourceDown', t0)).toHaveLength(0);
    expect(receiver.pages.filter((p) => p.alerts.some((a) => a.status === 'firing' && a.labels.ray_cluster === 'west'))).toHaveLength(0);
  });
});
