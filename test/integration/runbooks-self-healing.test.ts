// The runbook docs/runbooks/HyphaServiceCachedProxySelfHealing.md run as written (steps by id) against a real
// Hypha 0.21.137 with its artifact manager (moto S3), a BioEngine worker stand-in reporting 0.16.43 and the
// exporter (in-process, served over HTTP, its state in --storage.path as the runbooks assume). The artifact
// manager re-registers for real (Hypha restarts without a fixed server id); the steps read the self-healing
// witness, and the confirmation step reads its release by the exporter itself (canary.self_healing_release,
// shortened to 40 s here: long enough that `check` and the reading, two CLI starts, come before it on a loaded
// 2-core machine, where 8 s ran out between them in CI).
import fs from 'node:fs';
import path from 'node:path';
import { STATE_FILE } from '../../src/snapshot/persisted';
import { ensureBuilt } from '../helpers/cli';
import { exporterWithConfig, InProcessExporter } from '../helpers/exporter';
import { seriesValue } from '../helpers/exposition';
import { runStep, StepEnv } from '../helpers/runbook-step';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { startWorkerStandIn, WorkerStandIn } from '../harness/hypha-registrant';
import { waitFor } from '../harness/proc';

jest.setTimeout(600_000);

const AM = 'public/artifact-manager';
const S = { service: AM };

describe('runbook of HyphaServiceCachedProxySelfHealing, run against the real stack', () => {
  let hypha: HyphaHandle;
  let worker: WorkerStandIn;
  let e: InProcessExporter;
  let env: StepEnv;
  const tmp = tmpDir('hse-runbooks-self-healing-');
  const storage = path.join(tmp.dir, 'state');

  beforeAll(async () => {
    ensureBuilt();
    hypha = await startHypha({ enableS3: true });
    const tokenFile = tmp.write('hypha-token', hypha.rootToken);
    fs.chmodSync(tokenFile, 0o600);
    worker = await startWorkerStandIn({ serverUrl: hypha.url, token: hypha.rootToken, clientId: 'rb-worker', apps: {}, version: '0.16.43' });
    const config = tmp.write('exporter.yml', `hypha:
  name: local
  server_url: ${hypha.url}
  bearer_token_file: ${tokenFile}
hypha_registration:
  interval: 1s
  timeout: 3s
  workers: {interval: 1s, timeout: 3s}
watched_services:
  - service: ${AM}
    interval: 1s
    timeout: 3s
    canary: {self_healing_release: 40s}
`);
    e = exporterWithConfig({ file: config }, { storagePath: storage, logArtifact: 'runbooks-self-healing' });
    e.exporter.start();
    const served = await e.serve();
    env = {
      cwd: tmp.dir, prometheusUrl: 'http://127.0.0.1:9', // no promql step in this runbook
      vars: { HYPHA: hypha.url, EXPORTER: served.url, CONFIG: config, STATE: storage, HYPHA_TOKEN: hypha.rootToken },
    };
  });

  afterAll(async () => {
    await e?.close();
    await worker?.disconnect().catch(() => undefined);
    await hypha?.stop();
    tmp.cleanup();
  });

  test('a re-registered artifact manager with a 0.16.43 worker: check, the reading, and the release by itself confirmed', async () => {
    await waitFor('canary resolved, the worker its holder', async () => {
      const t = await e.scrape();
      return seriesValue(t, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' }) === 0
        && seriesValue(t, 'hypha_serve_service_holder_info', { ...S, holder: 'rb-worker', recovery: 'self_healing' }) === 1;
    }, 60_000, 200);
    await hypha.restart({ serverId: undefined });
    await waitFor('self-healing witness', async () => {
      const t = await e.scrape();
      return seriesValue(t, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' }) === 1
        && seriesValue(t, 'hypha_serve_service_witness_self_healing', { ...S, hypha: 'local' }) === 1;
    }, 120_000, 100);
    await waitFor('the witness in the state file', async () => {
      try {
        const saved = JSON.parse(fs.readFileSync(path.join(storage, STATE_FILE), 'utf8')) as { witnesses?: Record<string, { staleSinceSeconds?: number }> };
        return saved.witnesses?.[AM]?.staleSinceSeconds !== undefined;
      } catch {
        return false;
      }
    }, 30_000, 250);

    // `check` (the exporter's witness continued from the state file): the canary STALE, the worker self_healing, no condition.
    const check = await runStep('hyphaservicecachedproxyselfhealing-check', env);
    expect(check.stdout).toMatch(/cached \(exporter\): +\S+ STALE/);
    expect(check.stdout).toMatch(/worker holder: +rb-worker \(BioEngine 0\.16\.43\): self_healing/);
    expect(check.stdout).toMatch(/witness: +self-healing/);
    expect(check.stdout).not.toContain('HyphaServiceCachedProxyStale');
    expect(check.code).toBe(0);

    const reading = await runStep('hyphaservicecachedproxyselfhealing-sh', env, { service: AM });
    expect(reading.code).toBe(0);
    expect(reading.stdout).toMatch(/^hypha_serve_service_holder_info\{[^}]*holder="rb-worker",version="0\.16\.43",recovery="self_healing"\} 1$/m);
    expect(reading.stdout).toMatch(/^hypha_serve_service_witness_self_healing\{[^}]*\} 1$/m);
    expect(reading.stdout).toMatch(/^hypha_serve_service_cached_stale\{[^}]*holder="exporter"\} 1$/m);

    // The fix is to wait: the exporter releases the witness by itself.
    await waitFor('released by itself', async () => seriesValue(await e.scrape(), 'hypha_serve_service_witness_releases_total',
      { ...S, reason: 'self_healing' }) === 1, 90_000, 200);
    const fix = await runStep('hyphaservicecachedproxyselfhealing-confirm-fix', env, { service: AM });
    expect(fix.code).toBe(0);
    expect(fix.stdout).toMatch(/^hypha_serve_service_witness_self_healing\{[^}]*\} 0$/m);
    expect(fix.stdout).toMatch(/^hypha_serve_service_witness_releases_total\{[^}]*reason="self_healing"\} 1$/m);
    expect(fix.stdout).toMatch(/^hypha_serve_service_cached_stale\{[^}]*holder="exporter"\} 0$/m);
  });
});
