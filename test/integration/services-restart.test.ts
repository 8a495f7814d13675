// Watched services against a real Hypha 0.21.137 with its artifact manager
// (moto S3): the seed-003 incident reproduced by restarting Hypha without a
// fixed --server-id, and the benign look-alike with a fixed one.
import { hyphaWebsocketClient } from 'hypha-rpc';
import { ensureWebSocketGlobal } from '../../src/sources/hypha/client';
import { exporterWithConfig } from '../helpers/exporter';
import { samplesOf, seriesCount, seriesValue } from '../helpers/exposition';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { waitFor } from '../harness/proc';

jest.setTimeout(300_000);

const AM = 'public/artifact-manager';
const S = { service: AM };
const TIMEOUT_S = 3;

interface RawServer {
  config: { workspace?: string; client_id?: string };
  getService(id: string): Promise<{ id: string; create?: (a: Record<string, unknown>) => Promise<unknown>; read?: (a: Record<string, unknown>) => Promise<unknown> }>;
  registerService(svc: Record<string, unknown>, cfg?: Record<string, unknown>): Promise<{ id: string }>;
  disconnect(): Promise<void>;
}
const rawConnect = hyphaWebsocketClient.connectToServer as unknown as (cfg: Record<string, unknown>) => Promise<RawServer>;
const quiet = { debug() {}, info() {}, warn() {}, error() {}, log() {} };

/**
 * A long-lived client like a BioEngine worker: resolves the artifact manager
 * once and keeps the proxy; it reports the id it holds through its own service.
 */
async function startWorkerLikeHolder(url: string, token: string): Promise<{ heldId: string; server: RawServer }> {
  ensureWebSocketGlobal();
  const server = await rawConnect({ server_url: url, token, logger: quiet, method_timeout: 10, client_id: 'svc-test-holder' });
  const am = await server.getService(AM);
  await server.registerService({ id: 'am-holder', config: { visibility: 'protected' }, get_cached: () => ({ artifact_manager: { id: am.id } }) });
  return { heldId: am.id, server };
}

function exporterFor(hypha: HyphaHandle, witnessMax = 'none', probe = '') {
  const h = exporterWithConfig(`
hypha:
  name: test-hypha
  server_url: ${hypha.url}
  bearer_token_env: SVC_TEST_TOKEN
watched_services:
  - service: ${AM}
    interval: 1s
    timeout: ${TIMEOUT_S}s
    canary:
      witness_max: ${witnessMax}
${probe}    holders:
      - name: test-worker
        service: ws-user-root/am-holder
        method: get_cached
        field: artifact_manager.id
`, { env: { SVC_TEST_TOKEN: hypha.rootToken } });
  h.exporter.start();
  return h;
}

/** client_id label of the single series of name (with labels), or undefined. */
function clientIdOf(text: string, name: string, labels: Record<string, string>): string | undefined {
  return samplesOf(text, name, labels).find((s) => s.labels.client_id !== undefined)?.labels.client_id;
}

function lastSeconds(text: string, via: string, outcome: string): { count: number; sum: number } {
  const l = { ...S, via, outcome };
  return {
    count: seriesValue(text, 'hypha_serve_service_call_duration_seconds_count', l) ?? 0,
    sum: seriesValue(text, 'hypha_serve_service_call_duration_seconds_sum', l) ?? 0,
  };
}

describe('watched artifact manager across Hypha restarts', () => {
  let hypha: HyphaHandle;
  let holder: { heldId: string; server: RawServer } | undefined;
  let ex: ReturnType<typeof exporterFor> | undefined;

  beforeAll(async () => {
    hypha = await startHypha({ enableS3: true });
    process.stdout.write(`hypha (with moto S3) ready in ${hypha.startupMs[0]} ms\n`);
  });

  afterAll(async () => {
    await ex?.close();
    await holder?.server.disconnect().catch(() => undefined);
    await hypha?.stop();
  });

  test('steady state: one provider, resolved = canary = holder, both probes ok, nothing stale', async () => {
    holder = await startWorkerLikeHolder(hypha.url, hypha.rootToken);
    ex = exporterFor(hypha);
    const text = await waitFor('both probes ok and the holder read', async () => {
      const t = await ex!.scrape();
      return seriesValue(t, 'hypha_serve_service_probe_success', { ...S, via: 'cached' }) === 1 &&
        seriesValue(t, 'hypha_serve_service_probe_success', { ...S, via: 'fresh' }) === 1 &&
        seriesValue(t, 'hypha_serve_service_cached_stale', { ...S, holder: 'test-worker' }) === 0 ? t : undefined;
    }, 60_000, 200);
    const provider = clientIdOf(text, 'hypha_serve_service_provider_info', S);
    expect(seriesValue(text, 'hypha_serve_source_up', { source: 'hypha_service', service: AM })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_service_providers', S)).toBe(1);
    expect(provider).toBeDefined();
    expect(`public/${provider}:artifact-manager`).toBe(holder.heldId);
    expect(clientIdOf(text, 'hypha_serve_service_resolved_info', S)).toBe(provider);
    expect(seriesValue(text, 'hypha_serve_service_cached_info', { ...S, holder: 'exporter', client_id: provider! })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_service_cached_info', { ...S, holder: 'test-worker', client_id: provider! })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' })).toBe(0);
    expect(seriesValue(text, 'hypha_serve_service_client_id_changes_total', S)).toBe(0);
    const ok = { cached: lastSeconds(text, 'cached', 'ok'), fresh: lastSeconds(text, 'fresh', 'ok') };
    process.stdout.write(`steady state: list(limit=1, silent) mean ${(1000 * ok.cached.sum / ok.cached.count).toFixed(1)} ms via cached, ` +
      `${(1000 * ok.fresh.sum / ok.fresh.count).toFixed(1)} ms via fresh\n`);
  });

  test('restart WITHOUT a fixed --server-id: new provider and resolution, canary and holder stale, cached probe times out, fresh ok', async () => {
    const e = ex!;
    const before = await e.scrape();
    const oldId = clientIdOf(before, 'hypha_serve_service_provider_info', S)!;
    const changesBefore = seriesValue(before, 'hypha_serve_service_client_id_changes_total', S) ?? 0;
    const timeoutsBefore = lastSeconds(before, 'cached', 'timeout');

    const t0 = Date.now();
    await hypha.restart({ serverId: undefined });
    const tReady = Date.now();
    const text = await waitFor('canary stale', async () => {
      const t = await e.scrape();
      return seriesValue(t, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' }) === 1 ? t : undefined;
    }, 60_000, 100);
    const tStale = Date.now();
    const newId = clientIdOf(text, 'hypha_serve_service_provider_info', S);
    expect(newId).toBeDefined();
    expect(newId).not.toBe(oldId);
    expect(seriesCount(text, 'hypha_serve_service_provider_info', S)).toBe(1);
    expect(clientIdOf(text, 'hypha_serve_service_resolved_info', S)).toBe(newId);
    // The canary still addresses the old provider: exactly the worker's situation in the seed.
    expect(seriesValue(text, 'hypha_serve_service_cached_info', { ...S, holder: 'exporter', client_id: oldId })).toBe(1);
    expect(seriesValue(text, 'hypha_serve_service_client_id_changes_total', S)).toBe(changesBefore + 1);
    expect(seriesValue(text, 'hypha_serve_service_client_id_last_change_timestamp_seconds', S)).toBeGreaterThanOrEqual(Math.floor(t0 / 1000));
    expect(seriesValue(text, 'hypha_serve_service_canary_reresolves_total', S)).toBe(0);

    // Stale is published before the cycle's probes; they follow within the probe timeout:
    // the cached path hits the deadline, the fresh path answers.
    const probed = await waitFor('cached probe failed, fresh ok', async () => {
      const t = await e.scrape();
      return seriesValue(t, 'hypha_serve_service_probe_success', { ...S, via: 'cached' }) === 0 &&
        seriesValue(t, 'hypha_serve_service_probe_success', { ...S, via: 'fresh' }) === 1 ? t : undefined;
    }, 30_000, 100);
    const tProbed = Date.now();
    const timeouts = lastSeconds(probed, 'cached', 'timeout');
    expect(timeouts.count).toBe(timeoutsBefore.count + 1);
    const cachedMs = 1000 * (timeouts.sum - timeoutsBefore.sum);
    expect(cachedMs).toBeGreaterThanOrEqual(TIMEOUT_S * 1000 - 50);
    expect(cachedMs).toBeLessThan(TIMEOUT_S * 1000 + 2000);
    const status = e.exporter.store.get().services?.get(AM);
    const fresh = status?.lastProbes.fresh;
    expect(fresh).toMatchObject({ outcome: 'ok', target: `public/${newId}:artifact-manager` });
    expect(status?.lastProbes.cached).toMatchObject({ outcome: 'timeout', target: `public/${oldId}:artifact-manager` });

    process.stdout.write(
      `restart without --server-id: ${oldId} -> ${newId}; restart took ${tReady - t0} ms; ` +
      `cached_stale 1 seen ${tStale - t0} ms after the restart began (${tStale - tReady} ms after Hypha was ready), ` +
      `probe_success{via="cached"} 0 ${tProbed - t0} ms after; ` +
      `probe latency via cached: ${cachedMs.toFixed(0)} ms (timeout), via fresh: ${(fresh!.seconds * 1000).toFixed(1)} ms (ok)\n`);

    // The worker-like holder reconnected under its old client id and still reports the old id.
    const h = await waitFor('holder stale', async () => {
      const t = await e.scrape();
      return seriesValue(t, 'hypha_serve_service_cached_stale', { ...S, holder: 'test-worker' }) === 1 ? t : undefined;
    }, 60_000, 200);
    expect(seriesValue(h, 'hypha_serve_service_cached_info', { ...S, holder: 'test-worker', client_id: oldId })).toBe(1);

    // The rule's condition in PromQL terms holds on the same data: a cached id that is no provider.
    const cachedIds = samplesOf(h, 'hypha_serve_service_cached_info').map((s) => s.labels.client_id);
    const providerIds = samplesOf(h, 'hypha_serve_service_provider_info').map((s) => s.labels.client_id);
    expect(cachedIds.filter((c) => !providerIds.includes(c))).toEqual([oldId, oldId]);

    // Secrets never reach the logs.
    expect(e.lines.join('').includes(hypha.rootToken)).toBe(false);
  });

  test('restart WITH a fixed --server-id: same provider id, no stale signal at any scrape', async () => {
    await ex?.close();
    ex = undefined;
    await holder?.server.disconnect().catch(() => undefined);
    holder = undefined;
    await hypha.restart({ serverId: 'svc-fixed-id' });
    const e = exporterFor(hypha, 'none');
    ex = e;
    await waitFor('probes ok on the fixed id', async () => {
      const t = await e.scrape();
      return seriesValue(t, 'hypha_serve_service_probe_success', { ...S, via: 'cached' }) === 1 &&
        seriesValue(t, 'hypha_serve_service_cached_info', { ...S, holder: 'exporter', client_id: 'svc-fixed-id' }) === 1;
    }, 60_000, 200);

    let staleSeen = 0;
    let scrapes = 0;
    let downSeen = false;
    const watch = setInterval(() => {
      void e.scrape().then((t) => {
        scrapes++;
        if (seriesValue(t, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' }) === 1) staleSeen++;
        if (seriesValue(t, 'hypha_serve_source_up', { source: 'hypha_service', service: AM }) === 0) downSeen = true;
      });
    }, 100);
    try {
      const t0 = Date.now();
      await hypha.restart({ serverId: 'svc-fixed-id' });
      // Wait until a cycle after the restart has probed the canary successfully again.
      const since = Date.now() / 1000;
      await waitFor('cached probe ok after the restart', async () => {
        const p = e.exporter.store.get().services?.get(AM)?.lastProbes.cached;
        return p !== undefined && p.atSeconds > since && p.outcome === 'ok';
      }, 60_000, 100);
      const recovered = Date.now() - t0;
      // A few more cycles on the recovered server.
      await new Promise((r) => setTimeout(r, 3000));
      const text = await e.scrape();
      expect(staleSeen).toBe(0);
      expect(scrapes).toBeGreaterThan(20);
      // The scrapes ran from before the restart until a probe made after it succeeded, so they
      // covered the outage whether or not a sample happened to fall inside it (downSeen).
      expect(seriesValue(text, 'hypha_serve_service_client_id_changes_total', S)).toBe(0);
      expect(seriesValue(text, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' })).toBe(0);
      expect(clientIdOf(text, 'hypha_serve_service_resolved_info', S)).toBe('svc-fixed-id');
      expect(seriesValue(text, 'hypha_serve_service_probe_success', { ...S, via: 'cached' })).toBe(1);
      process.stdout.write(`restart with --server-id: ${scrapes} scrapes, cached_stale 1 in ${staleSeen}; source seen down: ${downSeen}; cached probe ok again ${recovered} ms after the restart began\n`);
    } finally {
      clearInterval(watch);
    }
  });

  test('a read probe passes silent=true: the artifact\'s view count does not move', async () => {
    await ex?.close();
    ex = undefined;
    ensureWebSocketGlobal();
    const admin = await rawConnect({ server_url: hypha.url, token: hypha.rootToken, logger: quiet, method_timeout: 10 });
    try {
      const am = await admin.getService(AM);
      await am.create!({ alias: 'svc-probe', type: 'collection', manifest: { name: 'probe' }, config: { permissions: { '*': 'r' } }, _rkwargs: true });
      const views = async (silent: boolean) => ((await am.read!({ artifact_id: 'ws-user-root/svc-probe', silent, _rkwargs: true })) as { view_count?: number }).view_count ?? 0;
      const e = exporterFor(hypha, 'none', '    probe:\n      method: read\n      kwargs: {artifact_id: ws-user-root/svc-probe}\n');
      ex = e;
      const text = await waitFor('six ok read probes', async () => {
        const t = await e.scrape();
        return (seriesValue(t, 'hypha_serve_service_call_duration_seconds_count', { ...S, method: 'read', via: 'cached', outcome: 'ok' }) ?? 0) >= 3 &&
          (seriesValue(t, 'hypha_serve_service_call_duration_seconds_count', { ...S, method: 'read', via: 'fresh', outcome: 'ok' }) ?? 0) >= 3 ? t : undefined;
      }, 60_000, 200);
      expect(seriesValue(text, 'hypha_serve_service_probe_success', { ...S, via: 'fresh' })).toBe(1);
      expect(await views(true)).toBe(0);
      // Control: a read without silent does count, so the zero above means something.
      await views(false);
      expect(await views(true)).toBe(1);
    } finally {
      await admin.disconnect();
    }
  });
});
