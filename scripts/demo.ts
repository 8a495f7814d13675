// The local demo stack (README's main command): real Ray Serve with sample apps and the exporter,
// on loopback with free ports. Ctrl-C stops everything it started, by PID.
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../test/harness/ports';
import { Proc, repoRoot, startProc, waitFor } from '../test/harness/proc';
import { RayCluster, rayAppConfig, startRay } from '../test/harness/ray';

const started = Date.now();
function step(msg: string): void {
  process.stdout.write(`[demo +${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);
}

async function main(): Promise<void> {
  const root = repoRoot();
  const work = path.join(root, '.tmp', 'demo');
  fs.mkdirSync(work, { recursive: true });
  let ray: RayCluster | undefined;
  let exporter: Proc | undefined;
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    step('stopping everything the demo started');
    await exporter?.stop();
    await ray?.stop();
    step('stopped; no process left behind');
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
  try {
    step('starting Ray (head node, loopback, free ports) — takes 10-30 s');
    ray = await startRay();
    step(`Ray ${ray.rayVersion} up: dashboard ${ray.dashboardUrl}`);
    step('deploying sample Serve app "two-step" (Front → Worker autoscaling with min_replicas 0)');
    await ray.deploy(rayAppConfig('two-step.yaml'));
    await ray.waitApp('two-step', (a) => a.status === 'RUNNING', 180_000);
    step('two-step is RUNNING');
    const port = await freePort();
    const cfg = path.join(work, 'exporter.yml');
    fs.writeFileSync(cfg, `ray_clusters:\n  - name: demo\n    dashboard_url: ${ray.dashboardUrl}\n    interval: 2s\n    timeout: 2s\n`);
    step('starting the exporter');
    exporter = startProc('demo-exporter', process.execPath, [path.join(root, 'dist', 'src', 'main.js'), `--config.file=${cfg}`, `--web.listen-address=127.0.0.1:${port}`]);
    const base = `http://127.0.0.1:${port}`;
    await waitFor('exporter ready', async () => (await fetch(`${base}/-/ready`)).ok, 30_000);
    step('ready');
    process.stdout.write(`
  Exporter:        ${base}/            metrics: ${base}/metrics
  Ray dashboard:   ${ray.dashboardUrl}
  Serve app:       ${ray.serveUrl}/two-step?text=hi   (a request wakes the Worker from zero)
  Exporter config: ${cfg}  (edit, then: curl -X POST ${base}/-/reload)
  Exporter log:    ${exporter.logFile}

  Try:  curl -s ${base}/metrics | grep -E 'scaled_to_zero|app_status\\{.*RUNNING'
  Ctrl-C stops everything.
`);
    await exporter.exited;
    if (!stopping) {
      step('the exporter exited unexpectedly; see its log');
      await stopAll(1);
    }
  } catch (e) {
    process.stderr.write(`demo failed: ${(e as Error).message}\n`);
    await stopAll(1);
  }
}

void main();
