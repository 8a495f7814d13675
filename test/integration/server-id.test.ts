// Issue 19: what the exporter knows about the Hypha server's id, against a real Hypha with its
// artifact manager. A restart with a fixed --server-id comes back under the same id (the
// "server without a stable id" fact is 0, the cached proxy stays live); a restart without one
// comes back under a random id (the fact is 1, the status page says so, and the canary's stale id
// is proven a replaced server id: cached_server_gone, which the stale-proxy page needs only a short
// confirmation for). One Hypha, one exporter, both cases in order.
import type { Exporter } from '../../src/exporter/exporter';
import { buildStatus } from '../../src/status-page/build';
import { exporterWithConfig, InProcessExporter, scrapeText } from '../helpers/exporter';
import { seriesValue } from '../helpers/exposition';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { waitFor } from '../harness/proc';

jest.setTimeout(240_000);

const AM = { service: 'public/artifact-manager', holder: 'exporter' };

describe('Hypha server id across restarts (real Hypha)', () => {
  let hypha: HyphaHandle;
  let exporter: Exporter;
  let cleanup: () => void;
  let lines: string[];
  let h: InProcessExporter | undefined;

  beforeAll(async () => {
    hypha = await startHypha({ enableS3: true, serverId: 'sid-fixed' });
    const t = tmpDir();
    cleanup = t.cleanup;
    const file = t.write('config.yml', `
global: {interval: 1s, timeout: 3s}
ray_clusters: []
hypha:
  name: main
  server_url: ${hypha.url}
  bearer_token_file: ${t.write('token', hypha.rootToken)}
hypha_registration:
  interval: 1s
  reconnect_settle: 2s
  clusters: []
watched_services:
  - service: public/artifact-manager
    interval: 1s
    timeout: 3s
`);
    h = exporterWithConfig({ file }, { logArtifact: 'server-id' });
    lines = h.lines;
    exporter = h.exporter;
    exporter.start();
  });

  afterAll(async () => {
    await h?.close();
    cleanup?.();
    await hypha?.stop();
  });

  const scrape = () => scrapeText(exporter.metrics);
  const v = (text: string, name: string, labels: Record<string, string> = {}) => seriesValue(text, name, labels);
  const generation = async () => v(await scrape(), 'hypha_serve_hypha_connection_generation', { hypha: 'main' }) ?? 0;
  const problems = () => buildStatus({ snapshot: exporter.store.get(), transitions: [], transitionsCapacity: 0, ready: true, version: 't', revision: 't', now: Date.now() / 1000 }).problems;

  test('before any comeback the fact is unknown (absent); the server id is exported', async () => {
    const text = await waitFor('connected, canary resolved', async () => {
      const x = await scrape();
      return v(x, 'hypha_serve_service_cached_stale', AM) === 0 && v(x, 'hypha_serve_hypha_server_info', { hypha: 'main', server_id: 'sid-fixed' }) === 1 ? x : undefined;
    }, 120_000, 250);
    expect(v(text, 'hypha_serve_hypha_server_id_changed', { hypha: 'main' })).toBeUndefined();
    expect(v(text, 'hypha_serve_service_cached_server_gone', AM)).toBe(0);
  });

  test('restart with a fixed --server-id: back under the same id, fact 0, nothing stale, no status-page line', async () => {
    const before = await generation();
    await hypha.restart({ serverId: 'sid-fixed' });
    const text = await waitFor('back under the same id', async () => {
      const x = await scrape();
      return (v(x, 'hypha_serve_hypha_connection_generation', { hypha: 'main' }) ?? 0) > before && v(x, 'hypha_serve_hypha_server_id_changed', { hypha: 'main' }) === 0 ? x : undefined;
    }, 120_000, 250);
    expect(v(text, 'hypha_serve_hypha_server_info', { hypha: 'main', server_id: 'sid-fixed' })).toBe(1);
    // The canary addresses the same client id, which is live again.
    await waitFor('canary live', async () => v(await scrape(), 'hypha_serve_service_cached_stale', AM) === 0, 60_000, 250);
    expect(v(await scrape(), 'hypha_serve_service_cached_server_gone', AM)).toBe(0);
    expect(problems().filter((p) => p.subject === 'hypha/main')).toEqual([]);
  });

  test('restart without --server-id: back under a random id, fact 1, the stale canary proven gone, a status-page line', async () => {
    const before = await generation();
    await hypha.restart({ serverId: undefined });
    const text = await waitFor('back under another id, canary stale and proven gone', async () => {
      const x = await scrape();
      return (v(x, 'hypha_serve_hypha_connection_generation', { hypha: 'main' }) ?? 0) > before
        && v(x, 'hypha_serve_hypha_server_id_changed', { hypha: 'main' }) === 1
        && v(x, 'hypha_serve_service_cached_server_gone', AM) === 1 ? x : undefined;
    }, 120_000, 250);
    expect(v(text, 'hypha_serve_service_cached_stale', AM)).toBe(1);
    expect(v(text, 'hypha_serve_hypha_server_info', { hypha: 'main', server_id: 'sid-fixed' })).toBeUndefined();
    const line = problems().find((p) => p.subject === 'hypha/main');
    expect(line).toMatchObject({ severity: 'warning', kind: 'source' });
    expect(line?.text).toMatch(/^came back under another server id \(sid-fixed → [^)]+\): no fixed --server-id/);
    expect(lines.join('')).toContain('hypha server came back under another server id');
  });
});
