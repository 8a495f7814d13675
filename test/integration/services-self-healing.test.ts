// Issue 37 part 3 on the real stack: Hypha 0.21.137 with its artifact manager (moto S3), BioEngine worker
// stand-ins (real hypha-rpc clients answering get_status with a bioengine_version) and the exporter in-process,
// exactly as main.ts builds it. The artifact manager re-registers for real: Hypha restarts without a fixed
// server id, so its built-in services come back under a new client id (incident 2).
//  - one worker reporting 0.16.43: the discovered worker is the service's holder, self_healing; the stale canary
//    is a self-healing witness (hypha_serve_service_witness_self_healing 1), `check` reports no critical
//    condition, and the exporter releases the witness by itself after canary.self_healing_release;
//  - one worker reporting 0.16.1: the canary stays the witness past that bound, and the critical condition holds,
//    naming the worker.
import fs from 'node:fs';
import path from 'node:path';
import { alertConditions } from '../../src/cli/check-conditions';
import { STATE_FILE } from '../../src/snapshot/persisted';
import { ensureBuilt, runCli } from '../helpers/cli';
import { exporterWithConfig, InProcessExporter } from '../helpers/exporter';
import { samplesOf, seriesValue } from '../helpers/exposition';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { startWorkerStandIn, WorkerStandIn } from '../harness/hypha-registrant';
import { waitFor } from '../harness/proc';

jest.setTimeout(600_000);

const AM = 'public/artifact-manager';
const S = { service: AM };
const CANARY = { ...S, holder: 'exporter' };
const RELEASE_S = 8;

describe('self-healing witness: discovered BioEngine workers as the artifact manager\'s holders', () => {
  let hypha: HyphaHandle;
  const tmp = tmpDir('hse-self-healing-');
  let tokenFile: string;
  let worker: WorkerStandIn | undefined;

  const config = () => `hypha:
  name: test-hypha
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
    canary: {self_healing_release: ${RELEASE_S}s}
`;

  const amClientId = async () => {
    const ids = (await (await fetch(`${hypha.url}/public/services/`)).json() as Array<{ id: string }>).map((s) => s.id);
    return ids.find((id) => id.endsWith(':artifact-manager'))?.split(':')[0];
  };

  /** An exporter whose canary and worker holder are in place before the artifact manager re-registers. */
  async function exporterWithWorker(clientId: string, version: string, storage: string): Promise<{ e: InProcessExporter; oldId: string }> {
    worker = await startWorkerStandIn({ serverUrl: hypha.url, token: hypha.rootToken, clientId, apps: {}, version });
    const e = exporterWithConfig(config(), { storagePath: storage, logArtifact: `services-self-healing-${version}` });
    e.exporter.start();
    const oldId = await waitFor('canary resolved and the worker its holder', async () => {
      const t = await e.scrape();
      const holders = samplesOf(t, 'hypha_serve_service_holder_info', S).map((s) => s.labels);
      const id = samplesOf(t, 'hypha_serve_service_cached_info', CANARY)[0]?.labels.client_id;
      return id !== undefined && holders.length === 1 && holders[0].holder === clientId && holders[0].version === version ? id : undefined;
    }, 60_000, 200);
    expect(seriesValue(await e.scrape(), 'hypha_serve_service_witness_self_healing', { ...S, hypha: 'test-hypha' })).toBe(0);
    return { e, oldId };
  }

  /** What `hypha-serve-exporter check --storage.path` says beside the running exporter, once its witness is on disk. */
  async function check(storage: string): Promise<{ code: number | null; json: { conditions: Array<{ alert: string; holder?: string; text: string }>; watched_services: Array<Record<string, unknown>> } }> {
    await waitFor('the witness in the state file', async () => {
      try {
        const saved = JSON.parse(fs.readFileSync(path.join(storage, STATE_FILE), 'utf8')) as { witnesses?: Record<string, { staleSinceSeconds?: number }> };
        return saved.witnesses?.[AM]?.staleSinceSeconds !== undefined;
      } catch {
        return false;
      }
    }, 30_000, 250);
    const r = await runCli(['check', `--config.file=${path.join(tmp.dir, 'check.yml')}`, `--storage.path=${storage}`, '--output=json', '--timeout=30s']);
    process.stdout.write(`check exit ${r.code}\n${r.stdout}${r.stderr}\n`);
    return { code: r.code, json: JSON.parse(r.stdout) as never };
  }

  beforeAll(async () => {
    ensureBuilt();
    hypha = await startHypha({ enableS3: true });
    tokenFile = tmp.write('hypha-token', hypha.rootToken);
    fs.chmodSync(tokenFile, 0o600);
  });

  afterEach(async () => {
    await worker?.disconnect().catch(() => undefined);
    worker = undefined;
  });

  afterAll(async () => {
    await hypha?.stop();
    tmp.cleanup();
  });

  test('a 0.16.43 worker: a re-registration is a self-healing witness, no critical condition, released by itself after the bound', async () => {
    const storage = path.join(tmp.dir, 'state-new');
    const { e, oldId } = await exporterWithWorker('worker-new', '0.16.43', storage);
    try {
      expect(samplesOf(await e.scrape(), 'hypha_serve_service_holder_info', S)[0].labels).toMatchObject({ hypha: 'test-hypha', recovery: 'self_healing' });
      await hypha.restart({ serverId: undefined });
      const newId = await waitFor('artifact manager back under a new client id', amClientId, 120_000, 500);
      expect(newId).not.toBe(oldId);

      // The canary is the witness, and self-healing once the worker is listed again after its own reconnect.
      const text = await waitFor('stale canary, self-healing witness', async () => {
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_cached_stale', CANARY) === 1
          && seriesValue(t, 'hypha_serve_service_witness_self_healing', { ...S, hypha: 'test-hypha' }) === 1 ? t : undefined;
      }, 120_000, 100);
      const selfHealingSeen = Date.now() / 1000;
      expect(samplesOf(text, 'hypha_serve_service_cached_info', CANARY)[0].labels.client_id).toBe(oldId);
      expect(samplesOf(text, 'hypha_serve_service_holder_info', S).map((s) => s.labels))
        .toEqual([{ service: AM, hypha: 'test-hypha', holder: 'worker-new', version: '0.16.43', recovery: 'self_healing' }]);
      const staleSince = seriesValue(text, 'hypha_serve_service_cached_stale_since_timestamp_seconds', CANARY) as number;

      // No critical condition in the running exporter's snapshot, nor in `check` beside it.
      const snapshotConditions = alertConditions(e.exporter.store.get()).filter((c) => c.service === AM);
      expect(snapshotConditions).toEqual([]);
      fs.writeFileSync(path.join(tmp.dir, 'check.yml'), config().replace(`${RELEASE_S}s`, '5m'));
      const c = await check(storage);
      expect(c.json.conditions.filter((x) => x.alert.startsWith('HyphaService'))).toEqual([]);
      const svc = c.json.watched_services.find((w) => w.service === AM);
      expect(svc).toMatchObject({ witness_self_healing: true, worker_holders: [{ holder: 'worker-new', version: '0.16.43', recovery: 'self_healing' }] });
      expect(c.code).toBe(0);

      // Released by the exporter itself once the witness has been self-healing for the bound.
      const released = await waitFor('the witness released by itself', async () => {
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_witness_releases_total', { ...S, reason: 'self_healing' }) === 1 ? t : undefined;
      }, 60_000, 100);
      const releasedAt = Date.now() / 1000;
      expect(releasedAt - staleSince).toBeGreaterThanOrEqual(RELEASE_S);
      expect(releasedAt - selfHealingSeen).toBeLessThan(RELEASE_S + 10);
      expect(seriesValue(released, 'hypha_serve_service_cached_stale', CANARY)).toBe(0);
      expect(samplesOf(released, 'hypha_serve_service_cached_info', CANARY)[0].labels.client_id).toBe(newId);
      expect(seriesValue(released, 'hypha_serve_service_witness_self_healing', { ...S, hypha: 'test-hypha' })).toBe(0);
      expect(seriesValue(released, 'hypha_serve_service_canary_reresolves_total', S)).toBe(1);
      for (const reason of ['returned', 'holders_agree', 'max_age', 'operator']) {
        expect(seriesValue(released, 'hypha_serve_service_witness_releases_total', { ...S, reason })).toBe(0);
      }
      expect(e.lines.some((l) => l.includes('witness released') && l.includes('"reason":"self_healing"'))).toBe(true);
      await waitFor('cached path ok again', async () => seriesValue(await e.scrape(), 'hypha_serve_service_probe_success', { ...S, via: 'cached' }) === 1, 30_000, 200);
    } finally {
      await e.close();
    }
  });

  test('a 0.16.1 worker: the canary stays the witness past the bound and the critical condition holds, naming the worker', async () => {
    const storage = path.join(tmp.dir, 'state-old');
    const { e, oldId } = await exporterWithWorker('worker-old', '0.16.1', storage);
    try {
      await hypha.restart({ serverId: undefined });
      await waitFor('artifact manager back under a new client id', async () => {
        const id = await amClientId();
        return id !== undefined && id !== oldId;
      }, 120_000, 500);
      await waitFor('stale canary with the old worker as its holder', async () => {
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_cached_stale', CANARY) === 1
          && samplesOf(t, 'hypha_serve_service_holder_info', { ...S, holder: 'worker-old', recovery: 'stays_stale' }).length === 1;
      }, 120_000, 100);
      // Well past the bound a self-healing witness would have been released after.
      await new Promise((r) => setTimeout(r, (RELEASE_S + 4) * 1000));
      const text = await e.scrape();
      expect(seriesValue(text, 'hypha_serve_service_cached_stale', CANARY)).toBe(1);
      expect(samplesOf(text, 'hypha_serve_service_cached_info', CANARY)[0].labels.client_id).toBe(oldId);
      expect(seriesValue(text, 'hypha_serve_service_witness_self_healing', { ...S, hypha: 'test-hypha' })).toBe(0);
      expect(seriesValue(text, 'hypha_serve_service_witness_releases_total', { ...S, reason: 'self_healing' })).toBe(0);
      expect(seriesValue(text, 'hypha_serve_service_canary_reresolves_total', S)).toBe(0);

      const stale = alertConditions(e.exporter.store.get()).filter((c) => c.alert === 'HyphaServiceCachedProxyStale');
      expect(stale).toHaveLength(1);
      expect(stale[0]).toMatchObject({ service: AM, holder: 'exporter' });
      expect(stale[0].text).toContain('worker-old (BioEngine 0.16.1, stays_stale)');
      fs.writeFileSync(path.join(tmp.dir, 'check.yml'), config());
      const c = await check(storage);
      expect(c.code).toBe(1);
      const fromCheck = c.json.conditions.find((x) => x.alert === 'HyphaServiceCachedProxyStale');
      expect(fromCheck).toMatchObject({ holder: 'exporter' });
      expect(fromCheck?.text).toContain('worker-old (BioEngine 0.16.1, stays_stale)');
    } finally {
      await e.close();
    }
  });
});
