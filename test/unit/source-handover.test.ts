import fs from 'node:fs';
import path from 'node:path';
import { PersistedState, STATE_FILE } from '../../src/snapshot/persisted';
import { serverIdKey } from '../../src/snapshot/handover';
import type { SourceHealth } from '../../src/snapshot/types';
import { exporterWithConfig } from '../helpers/exporter';
import { startUpstream } from '../helpers/http-upstream';
import { tmpDir } from '../helpers/tmp';
import { freePorts } from '../harness/ports';

// A source a reload restarts (its config changed) gets its predecessor's state handed over
// (Source.handover -> DesiredSource.create); a source removed by one reload and added back by the
// next is a new source and starts fresh.

const AM = 'public/artifact-manager';
const errors = (h: SourceHealth | undefined) => Object.values(h?.errors ?? {}).reduce((a, b) => a + b, 0);

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!ok()) throw new Error(`timed out waiting for ${what}`);
}

describe('state handed over on a reload', () => {
  const t = tmpDir('handover-');
  afterAll(() => t.cleanup());

  it('a Hypha server and a watched service a reload restarts continue their health, witness and server-id facts', async () => {
    const data = path.join(t.dir, 'data');
    fs.mkdirSync(data);
    const facts = { current: 'srv-b', previous: 'srv-a', changed: true, replaced: ['srv-a'] };
    const canary = { fullId: 'public/old:artifact-manager', clientId: 'old', sinceSeconds: 100, staleSinceSeconds: 200 };
    fs.writeFileSync(path.join(data, STATE_FILE), JSON.stringify({
      version: 1, savedSeconds: Date.now() / 1000, witnesses: { [AM]: canary }, registration: [],
      serverIds: { [serverIdKey('hypha', 'main')]: facts, [serverIdKey('service', AM)]: facts },
    }));
    // Nothing listens on either port: the sources only ever know what they continued from.
    const [a, b] = await freePorts(2);
    // A short timeout: a cycle after the first waits that long for the connection before it counts a failure.
    const config = (port: number) => `global:\n  timeout: 500ms\n  interval: 1h\nhypha:\n  name: main\n  server_url: http://127.0.0.1:${port}\n`;
    const h = exporterWithConfig(config(a), { storagePath: data });
    h.exporter.start();
    await h.exporter.settled();
    const before = h.exporter.store.get();
    const hyphaErrors = errors(before.hypha?.get('main')?.health);
    const serviceErrors = errors(before.services?.get(AM)?.health);
    expect(hyphaErrors).toBeGreaterThan(0);
    expect(serviceErrors).toBeGreaterThan(0);

    // Another URL changes both fingerprints: both sources restart.
    h.rewrite(config(b));
    expect(h.exporter.reload().ok).toBe(true);
    const after = h.exporter.store.get();
    expect(after.hypha?.get('main')?.health.up).toBe(false);
    expect(after.hypha?.get('main')?.health.pending).toBeUndefined();
    expect(errors(after.hypha?.get('main')?.health)).toBe(hyphaErrors);
    expect(errors(after.services?.get(AM)?.health)).toBe(serviceErrors);
    await h.exporter.settled();
    await h.exporter.sampleAll();
    // The counters go on from the predecessor's, not from zero.
    expect(errors(h.exporter.store.get().hypha?.get('main')?.health)).toBeGreaterThan(hyphaErrors);
    expect(errors(h.exporter.store.get().services?.get(AM)?.health)).toBeGreaterThan(serviceErrors);
    await h.close();
    // The successors never connected: the witness and the facts in the file are the ones handed over.
    const saved = JSON.parse(fs.readFileSync(path.join(data, STATE_FILE), 'utf8')) as PersistedState;
    expect(saved.witnesses).toEqual({ [AM]: canary });
    expect(saved.serverIds).toEqual({ [serverIdKey('hypha', 'main')]: facts, [serverIdKey('service', AM)]: facts });
  }, 30_000);

  it('a Ray cluster removed by one reload and added back by the next starts fresh: pending, no counts', async () => {
    const up = await startUpstream((_req, res) => { res.writeHead(500); res.end('boom'); });
    const config = `ray_clusters:\n  - name: c1\n    dashboard_url: ${up.url}\n    interval: 1h\n    timeout: 300ms\n`;
    const h = exporterWithConfig(config);
    h.exporter.start();
    await h.exporter.settled();
    await h.exporter.sampleAll();
    expect(h.exporter.store.get().ray.get('c1')?.health.errors.http_status).toBe(2);

    h.rewrite('ray_clusters: []\n');
    expect(h.exporter.reload().ok).toBe(true);
    // The removed source's data goes once it has stopped.
    await until('c1 forgotten', () => !h.exporter.store.get().ray.has('c1'));
    h.rewrite(config);
    expect(h.exporter.reload().ok).toBe(true);
    const fresh = h.exporter.store.get().ray.get('c1')?.health;
    expect(fresh?.pending).toBe(true);
    expect(errors(fresh)).toBe(0);
    await h.exporter.settled();
    expect(h.exporter.store.get().ray.get('c1')?.health.errors.http_status).toBe(1);
    await h.close();
    await up.close();
  });
});
