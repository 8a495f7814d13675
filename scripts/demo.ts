// The local demo stack (README's main command): real Hypha (with its artifact manager),
// real Ray Serve with BioEngine-style apps, the exporter, Prometheus with the shipped rules,
// Alertmanager with the example routing and a webhook receiver that prints each page.
// Loopback and free ports only; Ctrl-C (or q) stops everything it started, by PID.
import readline from 'node:readline';
import { Stack, startStack } from '../test/harness/stack';
import { rayAppConfig, ServeAppConfig } from '../test/harness/ray';
import { callViaDeploymentHandle, lineApp, ReleaseLine, ReleaseWorkers, startReleaseWorkers } from '../test/helpers/bioengine-apps';

const t0 = Date.now();
const step = (msg: string) => process.stdout.write(`[demo +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
const shipped = process.argv.includes('--shipped-timers');

async function main(): Promise<void> {
  step(shipped ? 'rules with the shipped timers (pages after minutes)' : 'rules with the documented test override: every `for:` ÷ 10, 1-2 s intervals, so pages arrive in seconds (--shipped-timers for the real ones)');
  let stack: Stack | undefined;
  let workers: ReleaseWorkers | undefined;
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    step('stopping everything the demo started');
    await workers?.disconnect();
    await stack?.stop();
    step('stopped; no process left behind');
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
  try {
    stack = await startStack({
      forDivisor: shipped ? 1 : 10,
      sampleInterval: shipped ? '15s' : '2s',
      sampleTimeout: shipped ? '5s' : '3s',
      scrapeInterval: shipped ? '15s' : '2s',
      evaluationInterval: shipped ? '15s' : '2s',
      groupWait: shipped ? undefined : '2s',
      groupInterval: shipped ? undefined : '5s',
      canaryWitnessMax: shipped ? undefined : '1m',
      hyphaServerId: 'demo',
      // Each BioEngine worker (one per release line) reports the apps it deployed; the exporter tells their gates apart.
      exporterExtraConfig: 'hypha_registration:\n  workers: {interval: 5s}\n',
      log: step,
    });
    const s = stack;
    workers = await startReleaseWorkers(s.hypha.url, s.hypha.rootToken, s.ray);
    const lines = new Map<string, ReleaseLine>();
    const be = (name: string, line: ReleaseLine, initial: number | null) => {
      lines.set(name, line);
      return lineApp(line, { name, hyphaUrl: s.hypha.url, tokenFile: s.hyphaTokenFile, initialReplicas: initial });
    };
    const apps: ServeAppConfig[] = [...rayAppConfig('two-step.yaml').applications, be('model-runner', 'fixed', 1)];
    const deploy = async (extra: ServeAppConfig[] = []) => {
      const all = [...apps, ...extra];
      workers?.report(all.flatMap((a) => (lines.has(a.name) ? [{ app: a.name, line: lines.get(a.name) as ReleaseLine }] : [])));
      await s.ray.deploy({ applications: all });
    };
    step('deploying sample apps: two-step (plain Serve, Worker autoscales to zero) and model-runner (BioEngine-style on a fixed '
      + 'release: its ProxyDeployment registers it in Hypha and keeps it registered while its Model, min_replicas 0, idles at zero)');
    await deploy();
    await s.ray.waitApp('model-runner', (a) => a.status === 'RUNNING', 240_000);
    step('apps RUNNING');
    let seen = 0;
    setInterval(() => {
      for (const p of s.receiver.pages.slice(seen)) {
        for (const a of p.alerts) step(`PAGE ${p.path} ${a.status.toUpperCase()} ${a.labels.alertname} ${a.labels.app ?? a.labels.service ?? a.labels.ray_cluster ?? a.labels.hypha ?? ''} ${a.annotations.cause ? `cause=${a.annotations.cause}` : ''}`);
      }
      seen = s.receiver.pages.length;
    }, 1000).unref();
    process.stdout.write(`
  Exporter status page: ${s.exporterUrl}/        metrics: ${s.exporterUrl}/metrics
  Prometheus:           ${s.prometheus.url}/alerts
  Alertmanager:         ${s.alertmanager.url}
  Hypha:                ${s.hypha.url}
  Ray dashboard:        ${s.ray.dashboardUrl}
  Pages are printed here and logged to ${s.pagesLog}

  Inject a fault (type the key, then Enter):
    1  incident 1a: an app on BioEngine 0.16.1 that idles at zero         → HyphaServeAppWillDeregisterAtZero, then HyphaServeAppRunningNotRegistered (missing_scaled_to_zero)
    2  incident 1b: an app on BioEngine 0.16.1 deployed at 0              → HyphaServeAppRunningNotRegistered (missing_never_registered, proven)
    3  incident 2:  restart Hypha under a new server id                    → HyphaServiceCachedProxyStale
    4  Hypha down for 60 s                                                 → HyphaServeSourceDown only
    5  a deployment that crashes in its constructor                        → HyphaServeAppUnhealthy
    6  benign: restart Hypha with the same server id                       → nothing
    7  benign: wake two-step from zero with a request                      → nothing
    8  benign: wake model-runner (fixed release) from zero with a call     → nothing
    9  benign: an app on a fixed release deployed at 0                     → nothing (registered within seconds)
    0  remove the fault apps
    q  quit (or Ctrl-C)
`);
    const faultApps: ServeAppConfig[] = [];
    const actions: Record<string, () => Promise<void>> = {
      1: async () => { faultApps.push(be('be-buggy', 'old', 1)); await deploy(faultApps); },
      2: async () => { faultApps.push(be('be-wait', 'old', null)); await deploy(faultApps); },
      3: () => s.hypha.restart({ serverId: undefined }),
      4: async () => { await s.hypha.stopServer(); step('Hypha stopped; starting it again in 60 s'); await new Promise((r) => setTimeout(r, 60_000)); await s.hypha.startServer(); },
      5: async () => { faultApps.push(...rayAppConfig('crash-on-start.yaml').applications); await deploy(faultApps); },
      6: async () => s.hypha.restart({}),
      7: async () => { const r = await s.ray.request('/two-step?text=hi', 120_000); step(`two-step answered ${r.status}`); },
      8: async () => { await callViaDeploymentHandle(s.ray.dashboardUrl, 'model-runner'); step('model-runner answered; it idles to zero again after its downscale delay'); },
      9: async () => { faultApps.push(be('be-cold-fixed', 'fixed', null)); await deploy(faultApps); },
      0: async () => { faultApps.length = 0; await deploy(); },
    };
    // Choices come from stdin, a terminal or a pipe; when stdin ends the stack keeps running until Ctrl-C.
    const rl = readline.createInterface({ input: process.stdin });
    rl.on('line', (line) => {
      const key = line.trim();
      if (key === 'q') return void stopAll(0);
      const act = actions[key];
      if (!act) return step(`unknown choice "${key}"`);
      step(`injecting ${key}`);
      act().then(() => step(`done: ${key}`), (e: Error) => step(`failed: ${e.message}`));
    });
  } catch (e) {
    process.stderr.write(`demo failed: ${(e as Error).message}\n`);
    await stopAll(1);
  }
}

void main();
