// Issue 19 §2 (first warning) and §4, live: real Ray Serve, real Hypha, BioEngine 0.16.1-shaped apps
// whose ProxyDeployment registers itself (test/ray-apps/bioengine_like.py, behaviour "upstream"),
// the worker stand-in (a real Hypha client answering get_status/get_app_status), the exporter CLI,
// and Prometheus with the shipped rules under the documented test override (durations ÷ 10).
//  - the warning fact: an app at min_replicas 0 is a warning, one at min_replicas 1 is not, and a
//    plain Serve app at min_replicas 0 whose registrant is unknown is not;
//  - the worker page keeps its identity through a worker restart (new client id): one alert, its
//    activeAt unchanged, never absent from ALERTS; the departed worker's series end at once;
//  - the real fix (the app woken through a DeploymentHandle, its proxy registered again) resolves
//    every page of the app at the same evaluation.
import fs from 'node:fs';
import path from 'node:path';
import { bioengineApp, callViaDeploymentHandle } from '../helpers/bioengine-apps';
import { seriesValue } from '../helpers/exposition';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { Registrant, startRegistrant, startWorkerStandIn, WorkerAppReport, WorkerStandIn } from '../harness/hypha-registrant';
import { spawnExporter } from '../harness/exporter-process';
import { Proc, startTogether, waitFor } from '../harness/proc';
import { PrometheusServer, startPrometheus } from '../harness/prometheus';
import { RayCluster, rayAppConfig, startRay } from '../harness/ray';
import { overriddenRuleFiles } from '../harness/rules-override';

jest.setTimeout(900_000);

const JOB = 'hypha-serve-exporter';
const PREFIX = 'wk-ident';
const ZERO = 'be-zero';
const ONE = 'be-one';
const PLAIN = 'two-step';
const WORKER_ALERT = 'HyphaServeWorkerAppRunningNotRegistered';
const WARNING = 'HyphaServeAppWillDeregisterAtZero';
/** The exporter's decision the warning reads (metric contract v0.4). */
const FACT = 'hypha_serve_app_will_deregister_at_zero';

describe('warning before incident 1a, and a worker page that keeps its identity (real stack)', () => {
  let ray: RayCluster;
  let hypha: HyphaHandle;
  let worker: WorkerStandIn | undefined;
  let plain: Registrant | undefined;
  let exporter: Proc;
  let exporterUrl: string;
  let prom: PrometheusServer;
  let rules: { files: string[]; dir: string };
  const tmp = tmpDir('wk-ident-');
  const t0 = Date.now();
  const log = (m: string) => process.stdout.write(`[worker-identity +${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}\n`);
  const scrape = async () => (await fetch(`${exporterUrl}/metrics`)).text();
  const report = (): Record<string, WorkerAppReport> => ({
    [ZERO]: { status: 'RUNNING', deployed_by_worker_client_id: PREFIX },
    [ONE]: { status: 'RUNNING', deployed_by_worker_client_id: PREFIX },
  });
  const startWorker = (clientId: string) => startWorkerStandIn({ serverUrl: hypha.url, token: hypha.rootToken, clientId, apps: report() });
  const alertsOf = async (app: string) => (await prom.alerts()).filter((a) => a.labels.app === app);
  const fact = async (app: string) => (await prom.vector(`${FACT}{job="${JOB}",app="${app}"}`)).map((s) => Number(s.value[1]));

  beforeAll(async () => {
    [ray, hypha] = await startTogether([startRay(), startHypha({ serverId: 'wk-ident-server' })]);
    const tokenFile = tmp.write('hypha-token', hypha.rootToken);
    fs.chmodSync(tokenFile, 0o600);
    worker = await startWorker(PREFIX);
    plain = await startRegistrant({ serverUrl: hypha.url, token: hypha.rootToken, prefix: 'unused', app: PLAIN, clientId: 'plain', type: 'generic' });
    await plain.register();
    const cfg = tmp.write('exporter.yml', [
      'global: {interval: 1s, timeout: 3s}',
      'ray_clusters:',
      `  - {name: local, dashboard_url: "${ray.dashboardUrl}"}`,
      'hypha:',
      '  name: local',
      `  server_url: "${hypha.url}"`,
      `  bearer_token_file: "${tokenFile}"`,
      'watched_services: []',
      'hypha_registration:',
      '  workers: {interval: 1s}',
      // The worker's wait divided like the rules' for: (the test override), at its minimum. The app's own page waits
      // longer: while it fires the worker's view of the same app is covered by it (one page per app), and this file
      // is about the worker page.
      '  page_waits: {proven: 10m, uncertain: 10m, worker: 30s}',
      '  clusters:',
      '    - cluster: local',
      `      templates: [{service: "{workspace}/plain:{app}", include: "^${PLAIN}$"}]`,
      '',
    ].join('\n'));
    const ex = await spawnExporter({ name: 'wk-ident-exporter', config: { file: cfg } });
    exporterUrl = ex.url;
    exporter = ex.proc;
    rules = overriddenRuleFiles({ forDivisor: 10, minFor: '5s' });
    prom = await startPrometheus({ scrapeTargets: [{ job: JOB, targets: [ex.instance], honorLabels: true }], ruleFiles: rules.files, scrapeInterval: '1s', evaluationInterval: '1s' });
    await prom.waitForTargetsUp(60_000, JOB);
    log(`Ray ${ray.dashboardUrl}, Hypha ${hypha.url}, exporter ${exporterUrl}, Prometheus ${prom.url} (${prom.version.raw})`);
  });

  afterAll(async () => {
    await prom?.stop();
    await exporter?.stop();
    await worker?.disconnect().catch(() => undefined);
    await plain?.disconnect().catch(() => undefined);
    await ray?.stop();
    await hypha?.stop();
    if (rules?.dir) fs.rmSync(rules.dir, { recursive: true, force: true });
    tmp.cleanup();
  });

  it('min_replicas 0 behind a BioEngine proxy: warning fact 1; min_replicas 1 and a plain Serve app at min_replicas 0: 0, no warning', async () => {
    const be = (name: string, minReplicas: number, downscaleDelayS: number) =>
      bioengineApp({ name, behaviour: 'upstream', hyphaUrl: hypha.url, tokenFile: path.join(tmp.dir, 'hypha-token'), initialReplicas: 1, downscaleDelayS, minReplicas, clientIdPrefix: PREFIX });
    // be-zero's Model stays up 35 s after its last call: long enough to be seen registered and warned about first.
    await ray.deploy({ applications: [...rayAppConfig('two-step.yaml').applications, be(ZERO, 0, 35), be(ONE, 1, 2)] });
    await waitFor('all three registered (Prometheus)', async () => {
      const v = await prom.vector(`hypha_serve_app_registration_state{job="${JOB}",state="registered"} == 1`);
      return [ZERO, ONE, PLAIN].every((a) => v.some((s) => s.metric.app === a));
    }, 300_000, 500);
    const t = await scrape();
    expect(seriesValue(t, 'hypha_serve_app_bioengine_proxy', { app: ZERO })).toBe(1);
    expect(seriesValue(t, 'hypha_serve_app_bioengine_proxy', { app: PLAIN })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_deployment_min_replicas', { app: PLAIN, deployment: 'Worker' })).toBe(0);
    // Recorded at the evaluation after Prometheus scraped the registration.
    await waitFor('warning fact recorded', async () => (await fact(ZERO))[0] === 1 && (await fact(ONE)).length > 0 && (await fact(PLAIN)).length > 0, 30_000, 250);
    expect(await fact(ZERO)).toEqual([1]);
    expect(await fact(ONE)).toEqual([0]);
    expect(await fact(PLAIN)).toEqual([0]);
    const warned = await waitFor('warning fires for be-zero', async () => (await alertsOf(ZERO)).find((a) => a.labels.alertname === WARNING && a.state === 'firing'), 30_000, 250);
    expect(warned.labels).toMatchObject({ severity: 'warning', ray_cluster: 'local', app: ZERO, hypha: 'local' });
    expect(warned.annotations.description).toContain('deployment(s) Model autoscale with min_replicas 0');
    // Registered for at least the warning's for: by now, and still 0: not a fact that has yet to turn.
    expect(await fact(ONE)).toEqual([0]);
    expect(await fact(PLAIN)).toEqual([0]);
    expect((await alertsOf(ONE)).filter((a) => a.labels.alertname === WARNING)).toEqual([]);
    expect((await alertsOf(PLAIN)).filter((a) => a.labels.alertname === WARNING)).toEqual([]);
    const page = await (await fetch(`${exporterUrl}/api/v1/status`)).text();
    expect(page).toContain('will be deregistered when Model idles to zero replicas');
    log('warning fact: be-zero 1, be-one 0, two-step 0; the warning fired for be-zero only');
  });

  it('a worker restart keeps the worker page (one alert, same activeAt), the departed worker ends at once, and the real fix resolves every page at one evaluation', async () => {
    await waitFor('be-zero deregistered at zero', async () => (await prom.vector(`hypha_serve_app_registration_state{job="${JOB}",app="${ZERO}",state="missing_scaled_to_zero"} == 1`)).length > 0, 180_000, 500);
    const firing = await waitFor('worker page firing', async () => (await alertsOf(ZERO)).find((a) => a.labels.alertname === WORKER_ALERT && a.state === 'firing'), 120_000, 250);
    expect(firing.labels).not.toHaveProperty('worker');
    const oldId = `${(worker as WorkerStandIn).serviceId}`;
    expect(firing.annotations.worker).toBe(oldId);
    log(`worker page firing (active since ${firing.activeAt}), worker ${oldId}`);

    // Watch ALERTS through the restart: the page must never leave.
    const seen: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const a = (await alertsOf(ZERO)).filter((x) => x.labels.alertname === WORKER_ALERT);
        seen.push(a.length === 1 ? `${a[0].state}@${a[0].activeAt}` : `count=${a.length}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();

    const tRestart = Date.now();
    await (worker as WorkerStandIn).disconnect();
    worker = undefined;
    await waitFor('departed worker gone from /metrics', async () => !(await scrape()).includes(oldId), 10_000, 100);
    const goneMs = Date.now() - tRestart;
    await new Promise((r) => setTimeout(r, 3000)); // the restart's gap: no worker answers
    worker = await startWorker(`${PREFIX}-restarted`);
    const newId = worker.serviceId;
    const after = await waitFor('worker page names the new worker', async () => (await alertsOf(ZERO)).find((a) => a.labels.alertname === WORKER_ALERT && a.annotations.worker === newId), 60_000, 250);
    watching = false;
    await watcher;
    log(`departed worker's series gone ${goneMs} ms after it left; page now names ${newId}; ${seen.length} polls`);
    expect(after.activeAt).toBe(firing.activeAt);
    expect(after.state).toBe('firing');
    expect(seen.filter((x) => x !== `firing@${firing.activeAt}`)).toEqual([]);
    expect((await prom.vector(`hypha_serve_worker_app_status{job="${JOB}",worker="${oldId}"}`))).toEqual([]);

    // The real fix: wake Model through a DeploymentHandle; the proxy registers again at its next health check.
    await callViaDeploymentHandle(ray.dashboardUrl, ZERO);
    const registeredAt = await waitFor('registered again (Prometheus)', async () => {
      const v = await prom.vector(`hypha_serve_app_registration_state{job="${JOB}",app="${ZERO}",state="registered"} == 1`);
      return v.length > 0 ? Date.now() : undefined;
    }, 120_000, 100);
    await waitFor('every page of be-zero resolved', async () => (await alertsOf(ZERO)).filter((a) => a.labels.alertname !== WARNING && a.state === 'firing').length === 0, 30_000, 100);
    const resolvedMs = Date.now() - registeredAt;
    const end = Date.now() / 1000;
    const r = await prom.queryRange(`ALERTS{job="${JOB}",app="${ZERO}",alertstate="firing",alertname!="${WARNING}"}`, end - 60, end, 1);
    const series = r.data.resultType === 'matrix' ? r.data.result : [];
    const lastFiring = series.map((s) => ({ alert: s.metric.alertname, last: Math.max(...s.values.map((v) => Number(v[0]))) }));
    log(`pages of be-zero resolved ${resolvedMs} ms after Prometheus saw the registration; last firing per alert: ${JSON.stringify(lastFiring)}`);
    expect(lastFiring.map((x) => x.alert).sort()).toEqual(expect.arrayContaining([WORKER_ALERT]));
    const lasts = lastFiring.map((x) => x.last);
    // One evaluation (1 s): every page of the app ended together.
    expect(Math.max(...lasts) - Math.min(...lasts)).toBeLessThanOrEqual(1);
  });
});
