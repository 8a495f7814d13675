// Watched services against a real Hypha 0.21.137 with stand-in providers
// registered by independent hypha-rpc clients:
//  - the stale canary is a WITNESS: with no holders it stays stale past the old
//    10-minute point (the clock is moved; a control service with the old bound is released);
//  - a reload continues it (no source_up 0, counters and histograms kept);
//  - an operator release and agreeing holders (a probe through a holder's cached proxy) end it;
//  - a provider that stays listed but does not answer does not flip the fresh probe;
//  - "source down" is logged once before the first success.
import fs from 'node:fs';
import path from 'node:path';
import { hyphaWebsocketClient } from 'hypha-rpc';
import { ensureWebSocketGlobal } from '../../src/sources/hypha/client';
import { exporterWithConfig } from '../helpers/exporter';
import { samplesOf, seriesValue } from '../helpers/exposition';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { StandinProvider, startStandinProvider } from '../harness/hypha-registrant';
import { freePort } from '../harness/ports';
import { artifactsDir, Proc, startProc, waitFor } from '../harness/proc';
import { repoRoot } from '../../src/util/repo-root';

jest.setTimeout(300_000);

const WS = 'ws-user-root';
const SVC = `${WS}/standin`;
const SVC2 = `${WS}/standin2`;
const S = { service: SVC };
const S2 = { service: SVC2 };

interface RawService { id: string; read(artifactId: string): Promise<unknown> }
interface RawServer {
  config: { workspace?: string };
  getService(id: string, cfg?: Record<string, unknown>): Promise<RawService>;
  registerService(svc: Record<string, unknown>, cfg?: Record<string, unknown>): Promise<{ id: string }>;
  disconnect(): Promise<void>;
}
const rawConnect = hyphaWebsocketClient.connectToServer as unknown as (cfg: Record<string, unknown>) => Promise<RawServer>;
const quiet = { debug() {}, info() {}, warn() {}, error() {}, log() {} };

function provider(url: string, token: string, clientId: string): Promise<StandinProvider> {
  return startStandinProvider({ serverUrl: url, token, clientId, serviceIds: ['standin', 'standin2'] });
}

/**
 * A long-lived client like a BioEngine worker: it resolved the service once and
 * keeps the proxy; its list_through() reads through that cached proxy (as
 * BioEngine's list_apps reads through its cached artifact-manager proxy).
 */
async function holderClient(url: string, token: string) {
  ensureWebSocketGlobal();
  const server = await rawConnect({ server_url: url, token, client_id: 'witness-holder', logger: quiet, method_timeout: 3 });
  let proxy = await server.getService(SVC);
  await server.registerService({
    id: 'holder',
    config: { visibility: 'protected' },
    list_through: async () => {
      await proxy.read('probe-artifact');
      return 'ok';
    },
  });
  return {
    server,
    heldId: () => proxy.id,
    async reresolve() {
      proxy = await server.getService(SVC);
    },
  };
}

function exporterFor(config: string) {
  const h = exporterWithConfig(config);
  h.exporter.start();
  return {
    ...h,
    async close(name: string) {
      await h.exporter.stop();
      fs.writeFileSync(path.join(artifactsDir(), `services-witness-${name}-${Date.now()}.log`), h.lines.join(''));
      await h.close();
    },
  };
}

function cachedId(text: string, service: string, holder: string): string | undefined {
  return samplesOf(text, 'hypha_serve_service_cached_info', { service, holder })[0]?.labels.client_id;
}

/** Moves Date.now() (all the exporter's cycle clocks) forward; timers and performance.now() keep real time. */
const realNow = Date.now;
function shiftClock(ms: number): void {
  const base = Date.now;
  Date.now = () => base() + ms;
}

describe('watched-service witness, holder probes and listed-but-dead providers', () => {
  let hypha: HyphaHandle;
  let tokenFile: string;
  let tmp: ReturnType<typeof tmpDir>;
  const providers = new Map<string, StandinProvider>();

  const hyphaBlock = () => `hypha:\n  name: test-hypha\n  server_url: ${hypha.url}\n  bearer_token_file: ${tokenFile}\n`;
  const reregister = async (from: string, to: string) => {
    await providers.get(from)!.disconnect();
    providers.delete(from);
    providers.set(to, await provider(hypha.url, hypha.rootToken, to));
  };

  beforeAll(async () => {
    hypha = await startHypha({});
    tmp = tmpDir();
    tokenFile = tmp.write('token', hypha.rootToken);
    providers.set('standin-a', await provider(hypha.url, hypha.rootToken, 'standin-a'));
  });

  afterAll(async () => {
    Date.now = realNow;
    await Promise.all([...providers.values()].map((p) => p.disconnect().catch(() => undefined)));
    tmp?.cleanup();
    await hypha?.stop();
  });

  test('a source that cannot connect logs "source down" once before its first success', async () => {
    const port = await freePort();
    const e = exporterFor(`hypha:\n  name: nowhere\n  server_url: http://127.0.0.1:${port}\nwatched_services:\n  - service: ${SVC}\n    interval: 200ms\n    timeout: 500ms\n`);
    try {
      await waitFor('several failed samples', async () => (e.exporter.store.get().services?.get(SVC)?.health.errors.connect ?? 0) >= 4, 60_000, 100);
      const warns = e.lines.filter((l) => l.includes('watched-service source down'));
      expect(warns).toHaveLength(1);
      expect(JSON.parse(warns[0]).level).toBe(40);
      expect(e.lines.filter((l) => l.includes('watched-service sample failed')).length).toBeGreaterThanOrEqual(3);
      const text = await e.scrape();
      expect(seriesValue(text, 'hypha_serve_source_errors_total', { source: 'hypha_service', service: SVC, reason: 'connect' })).toBeGreaterThanOrEqual(4);
      expect(seriesValue(text, 'hypha_serve_source_up', { source: 'hypha_service', service: SVC })).toBe(0);
      expect(seriesValue(text, 'hypha_serve_source_up', { source: 'hypha', hypha: SVC })).toBeUndefined();
    } finally {
      await e.close('down');
    }
  });

  test('no holders: the re-registered provider\'s old id stays the witness past the old 10-minute point; an operator releases it', async () => {
    const config = (extra = '', timeout = '2s') => `${hyphaBlock()}watched_services:
  - service: ${SVC}
    interval: 500ms
    timeout: ${timeout}
    probe: {method: read, args: [probe-artifact]}
${extra}  - service: ${SVC2}
    interval: 500ms
    timeout: 2s
    probe: {method: read, args: [probe-artifact]}
    canary: {reresolve_after: 10m}
`;
    const e = exporterFor(config());
    try {
      await waitFor('both canaries on standin-a and probing ok', async () => {
        const t = await e.scrape();
        return cachedId(t, SVC, 'exporter') === 'standin-a' && cachedId(t, SVC2, 'exporter') === 'standin-a' &&
          seriesValue(t, 'hypha_serve_service_probe_success', { ...S, via: 'cached' }) === 1 ? t : undefined;
      }, 60_000, 100);

      // The provider re-registers under a new client id (the seed's incident).
      await reregister('standin-a', 'standin-b');
      let text = await waitFor('both canaries stale, fresh path ok', async () => {
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' }) === 1 &&
          seriesValue(t, 'hypha_serve_service_cached_stale', { ...S2, holder: 'exporter' }) === 1 &&
          seriesValue(t, 'hypha_serve_service_probe_success', { ...S, via: 'fresh' }) === 1 ? t : undefined;
      }, 30_000, 50);
      const staleSince = seriesValue(text, 'hypha_serve_service_cached_stale_since_timestamp_seconds', { ...S, holder: 'exporter' });

      // Eleven minutes later (the clock moves; the exporter's cycles read Date.now()).
      shiftClock(11 * 60_000);
      // The control service, configured with the old 10-minute bound, is released: what the old default did.
      text = await waitFor('the control witness released after its bound', async () => {
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_canary_reresolves_total', S2) === 1 ? t : undefined;
      }, 30_000, 100);
      expect(cachedId(text, SVC2, 'exporter')).toBe('standin-b');
      expect(seriesValue(text, 'hypha_serve_service_cached_stale', { ...S2, holder: 'exporter' })).toBe(0);
      // A few more cycles: the default keeps the witness.
      await new Promise((r) => setTimeout(r, 3000));
      text = await e.scrape();
      expect(seriesValue(text, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' })).toBe(1);
      expect(cachedId(text, SVC, 'exporter')).toBe('standin-a');
      expect(seriesValue(text, 'hypha_serve_service_canary_reresolves_total', S)).toBe(0);
      expect(seriesValue(text, 'hypha_serve_service_probe_success', { ...S, via: 'cached' })).toBe(0);
      expect(seriesValue(text, 'hypha_serve_service_probe_success', { ...S, via: 'fresh' })).toBe(1);
      // What the page can say: no holders, since when, no bound; how the control ended.
      expect(seriesValue(text, 'hypha_serve_service_holders_configured', S)).toBe(0);
      expect(staleSince).toBeDefined();
      expect(seriesValue(text, 'hypha_serve_service_cached_stale_since_timestamp_seconds', { ...S, holder: 'exporter' })).toBe(staleSince);
      expect(seriesValue(text, 'hypha_serve_service_witness_max_seconds', S)).toBeUndefined();
      expect(seriesValue(text, 'hypha_serve_service_witness_max_seconds', S2)).toBe(600);
      expect(seriesValue(text, 'hypha_serve_service_witness_releases_total', { ...S2, reason: 'max_age' })).toBe(1);
      expect(seriesValue(text, 'hypha_serve_service_witness_releases_total', { ...S, reason: 'max_age' })).toBe(0);
      expect(e.lines.some((l) => l.includes('canary.reresolve_after is deprecated'))).toBe(true);

      // The documented operator step: name the witness's client id; one reload ends it.
      e.rewrite(config('    canary: {released_client_ids: [standin-a]}\n'));
      expect(e.exporter.reload()).toEqual({ ok: true });
      text = await waitFor('the witness released by the operator', async () => {
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_witness_releases_total', { ...S, reason: 'operator' }) === 1 ? t : undefined;
      }, 30_000, 100);
      expect(cachedId(text, SVC, 'exporter')).toBe('standin-b');
      expect(seriesValue(text, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' })).toBe(0);
      expect(seriesValue(text, 'hypha_serve_service_canary_reresolves_total', S)).toBe(1);
      expect(e.lines.join('').includes(hypha.rootToken)).toBe(false);
    } finally {
      Date.now = realNow;
      await e.close('no-holders');
    }
  });

  test('a reload that restarts the source continues the witness: no source_up 0, no counter or histogram reset', async () => {
    const config = (timeout: string) => `${hyphaBlock()}watched_services:
  - service: ${SVC}
    interval: 500ms
    timeout: ${timeout}
    probe: {method: read, args: [probe-artifact]}
`;
    const e = exporterFor(config('2s'));
    const from = [...providers.keys()][0];
    try {
      await waitFor(`canary on ${from}`, async () => cachedId(await e.scrape(), SVC, 'exporter') === from, 60_000, 100);
      await reregister(from, 'standin-r');
      // Also wait for the new provider to be listed: the old one leaving and the new one arriving may be
      // sampled as two provider-set changes, and the counter compared below must have counted both.
      let text = await waitFor('canary stale and probed, the new provider listed', async () => {
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' }) === 1 &&
          seriesValue(t, 'hypha_serve_service_probe_success', { ...S, via: 'cached' }) === 0 &&
          seriesValue(t, 'hypha_serve_service_provider_info', { ...S, client_id: 'standin-r' }) === 1 ? t : undefined;
      }, 30_000, 50);
      const staleSince = seriesValue(text, 'hypha_serve_service_cached_stale_since_timestamp_seconds', { ...S, holder: 'exporter' });
      expect(staleSince).toBeDefined();
      // A reload that restarts SVC's source (its timeout changed) continues it: no up 0, no counter reset, same witness.
      const before = await e.scrape();
      const cachedCount = (t: string) => seriesValue(t, 'hypha_serve_service_call_duration_seconds_count', { ...S, method: 'read', via: 'cached', outcome: 'not_found' }) ?? 0;
      const cachedTimeouts = (t: string) => seriesValue(t, 'hypha_serve_service_call_duration_seconds_count', { ...S, method: 'read', via: 'cached', outcome: 'timeout' }) ?? 0;
      const upSeen: (boolean | undefined)[] = [];
      const staleSeen: (number | undefined)[] = [];
      const watch = setInterval(() => {
        upSeen.push(e.exporter.store.get().services?.get(SVC)?.health.up);
        void e.scrape().then((t) => staleSeen.push(seriesValue(t, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' })));
      }, 20);
      try {
        e.rewrite(config('2500ms'));
        expect(e.exporter.reload()).toEqual({ ok: true });
        await waitFor('a cycle of the restarted source', async () => {
          const w = e.exporter.store.get().services?.get(SVC);
          return w !== undefined && w.lastProbes.cached !== undefined && (w.health.lastSuccessSeconds ?? 0) * 1000 > Date.now() - 400 ? w : undefined;
        }, 30_000, 50);
        // Watched for at least 1.5 s, and until the restarted source's cached probe is counted: that happens when
        // the call ends, which for a timeout is the new 2.5 s deadline (on CI's shared cores, past a fixed wait).
        await Promise.all([
          new Promise((r) => setTimeout(r, 1500)),
          waitFor('a cached probe of the restarted source counted', async () => {
            const t = await e.scrape();
            return cachedCount(t) + cachedTimeouts(t) > cachedCount(before) + cachedTimeouts(before);
          }, 30_000, 100),
        ]);
      } finally {
        clearInterval(watch);
      }
      text = await e.scrape();
      expect(upSeen.length).toBeGreaterThan(20);
      expect(upSeen.filter((v) => v !== true)).toEqual([]);
      expect(staleSeen.filter((v) => v !== 1)).toEqual([]);
      expect(cachedId(text, SVC, 'exporter')).toBe(from);
      expect(seriesValue(text, 'hypha_serve_service_cached_stale_since_timestamp_seconds', { ...S, holder: 'exporter' })).toBe(staleSince);
      expect(seriesValue(text, 'hypha_serve_service_client_id_changes_total', S)).toBe(seriesValue(before, 'hypha_serve_service_client_id_changes_total', S));
      expect(seriesValue(text, 'hypha_serve_service_canary_reresolves_total', S)).toBe(0);
      expect(e.lines.some((l) => l.includes('continuing the stale canary as the witness'))).toBe(true);
      expect(seriesValue(text, 'hypha_serve_source_up', { source: 'hypha_service', service: SVC })).toBe(1);
      expect(seriesValue(text, 'hypha_serve_source_interval_seconds', { source: 'hypha_service', service: SVC })).toBe(0.5);
    } finally {
      await e.close('reload');
    }
  });

  test('a holder probe through the holder\'s cached proxy: the witness ends only when the holder recovered', async () => {
    const from = [...providers.keys()][0];
    const holder = await holderClient(hypha.url, hypha.rootToken);
    expect(holder.heldId()).toBe(`${WS}/${from}:standin`);
    const e = exporterFor(`${hyphaBlock()}watched_services:
  - service: ${SVC}
    interval: 500ms
    timeout: 2s
    probe: {method: read, args: [probe-artifact]}
    holders:
      - name: test-worker
        service: ${WS}/holder
        probe: {method: list_through, timeout: 5s}
`);
    const H = { ...S, holder: 'test-worker' };
    try {
      let text = await waitFor('holder probe ok', async () => {
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_holder_probe_success', H) === 1 && cachedId(t, SVC, 'exporter') === from ? t : undefined;
      }, 60_000, 100);
      expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_count', { ...H, method: 'list_through', via: 'holder', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
      expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_count', { ...H, method: 'list_through', via: 'holder', outcome: 'timeout' })).toBe(0);
      expect(seriesValue(text, 'hypha_serve_service_holders_configured', S)).toBe(1);

      await reregister(from, 'standin-c');
      text = await waitFor('canary stale and the holder probe failing', async () => {
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' }) === 1 &&
          seriesValue(t, 'hypha_serve_service_holder_probe_success', H) === 0 ? t : undefined;
      }, 30_000, 50);
      const failed = e.exporter.store.get().services?.get(SVC)?.holderProbes?.[0];
      expect(failed?.outcome).not.toBe('ok');
      // The holder has not recovered: the witness stays however long that lasts.
      await new Promise((r) => setTimeout(r, 3000));
      text = await e.scrape();
      expect(seriesValue(text, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' })).toBe(1);
      expect(seriesValue(text, 'hypha_serve_service_holder_probe_success', H)).toBe(0);
      expect(cachedId(text, SVC, 'exporter')).toBe(from);

      // The worker recovers (re-resolves): its probe succeeds, every holder agrees, the witness ends.
      await holder.reresolve();
      text = await waitFor('witness released: holders agree', async () => {
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_witness_releases_total', { ...S, reason: 'holders_agree' }) === 1 ? t : undefined;
      }, 30_000, 100);
      expect(seriesValue(text, 'hypha_serve_service_holder_probe_success', H)).toBe(1);
      expect(cachedId(text, SVC, 'exporter')).toBe('standin-c');
      expect(seriesValue(text, 'hypha_serve_service_cached_stale', { ...S, holder: 'exporter' })).toBe(0);
      process.stdout.write(`holder probe: failed with ${failed?.outcome} in ${((failed?.seconds ?? 0) * 1000).toFixed(0)} ms (${failed?.error}); witness released once the holder re-resolved\n`);
    } finally {
      await e.close('holder');
      await holder.server.disconnect().catch(() => undefined);
    }
  });

  test('a provider that stays listed but does not answer does not flip the fresh probe', async () => {
    const e = exporterFor(`${hyphaBlock()}watched_services:
  - service: ${SVC}
    interval: 500ms
    timeout: 2s
    probe: {method: read, args: [probe-artifact]}
`);
    let frozen: Proc | undefined;
    try {
      const live = [...providers.keys()][0];
      await waitFor(`canary on ${live}, probes ok`, async () => {
        const t = await e.scrape();
        return cachedId(t, SVC, 'exporter') === live && seriesValue(t, 'hypha_serve_service_probe_success', { ...S, via: 'fresh' }) === 1;
      }, 60_000, 100);
      // A second provider in its own process, then frozen: listed (its websocket stays open) but silent,
      // like a Hypha server killed hard whose registration outlives it.
      const script = [
        'import asyncio, os',
        'from hypha_rpc import connect_to_server',
        'async def main():',
        '    s = await connect_to_server({"server_url": os.environ["URL"], "token": os.environ["TOKEN"], "client_id": "standin-frozen"})',
        '    await s.register_service({"id": "standin", "config": {"visibility": "protected"}, "read": lambda artifact_id, silent=False: {"id": artifact_id}})',
        '    print("registered", flush=True)',
        '    await asyncio.Event().wait()',
        'asyncio.run(main())',
      ].join('\n');
      const p = startProc('frozen-provider', path.join(repoRoot(), '.venv', 'hypha', 'bin', 'python'), ['-c', script], {
        env: { ...process.env, URL: hypha.url, TOKEN: hypha.rootToken },
      });
      frozen = p;
      await waitFor('the second provider listed', async () => {
        if (p.child.exitCode !== null) throw new Error(p.output());
        const t = await e.scrape();
        return seriesValue(t, 'hypha_serve_service_providers', S) === 2;
      }, 60_000, 100);
      process.kill(p.pid, 'SIGSTOP');
      const since = Date.now() / 1000;
      const logAt = e.lines.length;
      const fresh: { at: number; outcome: string; attempts: number }[] = [];
      const cached: string[] = [];
      const seen = new Set<number>();
      await waitFor('twelve fresh probes after the freeze', async () => {
        const w = e.exporter.store.get().services?.get(SVC);
        const f = w?.lastProbes.fresh;
        if (f && f.atSeconds > since && !seen.has(f.atSeconds)) {
          seen.add(f.atSeconds);
          fresh.push({ at: f.atSeconds, outcome: f.outcome, attempts: f.attempts ?? 1 });
          cached.push(w?.lastProbes.cached?.outcome ?? 'none');
        }
        return fresh.length >= 12;
      }, 180_000, 20);
      // The silent provider is not taken for a broken connection: no rebuild, the cached path stays ok.
      expect(e.lines.slice(logAt).filter((l) => l.includes('rebuilding hypha connection'))).toEqual([]);
      expect(cached.filter((o) => o !== 'ok')).toEqual([]);
      const text = await e.scrape();
      expect(seriesValue(text, 'hypha_serve_service_providers', S)).toBe(2);
      // Random resolution picked the silent provider at least once (else this test proved nothing)…
      expect(fresh.some((f) => f.attempts > 1)).toBe(true);
      // …and the fresh verdict never flipped: another live provider answered in the same cycle.
      expect(fresh.filter((f) => f.outcome !== 'ok')).toEqual([]);
      expect(seriesValue(text, 'hypha_serve_service_probe_success', { ...S, via: 'cached' })).toBe(1);
      expect(seriesValue(text, 'hypha_serve_service_call_duration_seconds_count', { ...S, method: 'read', via: 'fresh', outcome: 'timeout' })).toBeGreaterThanOrEqual(1);
      expect(seriesValue(text, 'hypha_serve_service_fresh_probe_attempts', S)).toBeGreaterThanOrEqual(1);
      process.stdout.write(`listed-but-silent provider: ${fresh.length} fresh probes, ${fresh.filter((f) => f.attempts > 1).length} needed a second provider, none failed\n`);
    } finally {
      if (frozen) {
        try { process.kill(frozen.pid, 'SIGCONT'); } catch { /* gone */ }
        await frozen.stop('SIGKILL', 2000);
      }
      await e.close('dead-provider');
    }
  });
});
