// Issue 18: a starting exporter reports no false 0. Until a source's first attempt has ended its
// state is unknown: no hypha_serve_source_* series for it and /-/ready is not 200. A reload that
// restarts the source continues its state (no new unknown gap). And a Ray token file that rotates
// is used from the next request, re-read after a refusal, without a reload.
import fs from 'node:fs';
import { HealthBook } from '../../src/sources/health-book';
import { buildStatus } from '../../src/status-page/build';
import { exporterWithConfig, memoryLogger, scrapeText } from '../helpers/exporter';
import { seriesCount, seriesValue } from '../helpers/exposition';
import { json, startUpstream } from '../helpers/http-upstream';
import { tmpDir } from '../helpers/tmp';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const serve = { controller_info: { node_id: 'n1', node_ip: '127.0.0.1' }, proxies: {}, applications: {} };

describe('HealthBook start state', () => {
  it('is pending until the first attempt ends, either way; a book given a handover is not pending', () => {
    const { log } = memoryLogger();
    const a = new HealthBook({ kind: 'ray', target: 'c', log, label: 'ray' });
    expect(a.health.pending).toBe(true);
    expect(a.known).toBe(false);
    a.failed('connect', 'refused');
    expect(a.health.pending).toBeUndefined();
    expect(a.health).toMatchObject({ up: false, lastErrorReason: 'connect' });
    const b = new HealthBook({ kind: 'ray', target: 'c', log, label: 'ray' });
    b.succeeded(0.1);
    expect(b.known).toBe(true);
    const c = new HealthBook({ kind: 'ray', target: 'c', log, label: 'ray', handover: a.health });
    expect(c.known).toBe(true);
    expect(c.health.errors.connect).toBe(1);
    // A predecessor still pending passes that on: the restarted source is as unknown as it was.
    const d = new HealthBook({ kind: 'ray', target: 'c', log, label: 'ray', handover: new HealthBook({ kind: 'ray', target: 'c', log, label: 'ray' }).health });
    expect(d.known).toBe(false);
  });
});

describe('exporter start: no false 0, not ready until the first attempt ends', () => {
  let up: Awaited<ReturnType<typeof startUpstream>>;
  let held: (() => void) | undefined;
  /** Answers the request the upstream holds, once. */
  const release = () => {
    const h = held;
    held = undefined;
    h?.();
  };
  const t = tmpDir();
  beforeAll(async () => {
    up = await startUpstream(json(serve));
  });
  afterAll(async () => {
    release();
    await up.close();
    t.cleanup();
  });

  async function get(base: string, p: string): Promise<{ status: number; text: string }> {
    const res = await fetch(`${base}${p}`);
    return { status: res.status, text: await res.text() };
  }

  it.each([
    ['succeeds', 200, 1],
    ['fails', 500, 0],
  ])('first answer %s: absent and 503 before it, present and 200 after; a restarting reload leaves no gap', async (_name, status, value) => {
    // The upstream holds requests while `holding`, until the test releases it.
    let holding = true;
    up.set((req, res) => {
      const answer = () => json(serve, status)(req, res);
      if (holding) held = answer;
      else answer();
    });
    const h = exporterWithConfig(`ray_clusters:\n  - {name: c1, dashboard_url: "${up.url}", interval: 1h, timeout: 10s}\n`);
    h.exporter.start();
    const { url } = await h.serve();
    try {
      for (let i = 0; i < 5; i++) {
        const m = await get(url, '/metrics');
        expect(seriesCount(m.text, 'hypha_serve_source_up')).toBe(0);
        expect(m.text).not.toMatch(/^hypha_serve_source_\w+\{/m);
        expect((await get(url, '/-/ready')).status).toBe(503);
        const st = JSON.parse((await get(url, '/api/v1/status')).text) as { sources: { pending?: boolean }[]; problems: unknown[]; summary: { sources_down: number } };
        expect(st.sources[0].pending).toBe(true);
        expect(st.summary.sources_down).toBe(0);
        expect(st.problems).toEqual([]);
        await sleep(20);
      }
      holding = false;
      release();
      await h.exporter.settled();
      const m = await get(url, '/metrics');
      expect(seriesValue(m.text, 'hypha_serve_source_up', { source: 'ray', ray_cluster: 'c1' })).toBe(value);
      expect((await get(url, '/-/ready')).status).toBe(200);

      // A reload that restarts the source (interval changed) continues its state: never absent again.
      h.rewrite(`ray_clusters:\n  - {name: c1, dashboard_url: "${up.url}", interval: 30m, timeout: 10s}\n`);
      holding = true;
      expect(h.exporter.reload().ok).toBe(true);
      for (let i = 0; i < 3; i++) {
        expect(seriesValue(await scrapeText(h.exporter.metrics), 'hypha_serve_source_up', { source: 'ray', ray_cluster: 'c1' })).toBe(value);
        expect((await get(url, '/-/ready')).status).toBe(200);
        await sleep(20);
      }
      holding = false;
      release();
      await h.exporter.settled();
    } finally {
      await h.close();
    }
  });

  it('a rotated Ray token file is used from the next request, re-read after a refusal, and its reads are exported', async () => {
    const tokenFile = t.write('ray-token', 'ray-token-old\n');
    const seen: string[] = [];
    let accepted = 'ray-token-old';
    up.set((req, res) => {
      const auth = req.headers.authorization ?? '';
      seen.push(auth);
      if (auth === `Bearer ${accepted}`) json(serve)(req, res);
      else json({ detail: 'unauthorized' }, 401)(req, res);
    });
    const h = exporterWithConfig(`ray_clusters:\n  - {name: c1, dashboard_url: "${up.url}", interval: 1h, timeout: 2s, bearer_token_file: "${tokenFile}"}\n`);
    h.exporter.start();
    try {
      await h.exporter.settled();
      let text = await scrapeText(h.exporter.metrics);
      expect(seriesValue(text, 'hypha_serve_source_up', { ray_cluster: 'c1' })).toBe(1);
      const read1 = seriesValue(text, 'hypha_serve_credential_last_read_timestamp_seconds', { source: 'ray', ray_cluster: 'c1', file: tokenFile });
      expect(read1).toBeGreaterThan(0);
      expect(seriesValue(text, 'hypha_serve_credential_read_errors_total', { source: 'ray', ray_cluster: 'c1', file: tokenFile })).toBe(0);

      // The upstream now wants a new token; the file still holds the old one: refused, counted as auth.
      accepted = 'ray-token-new';
      await h.exporter.sampleAll();
      text = await scrapeText(h.exporter.metrics);
      expect(seriesValue(text, 'hypha_serve_source_up', { ray_cluster: 'c1' })).toBe(0);
      expect(seriesValue(text, 'hypha_serve_source_errors_total', { ray_cluster: 'c1', reason: 'auth' })).toBe(1);

      // The file is rotated (no reload): the next request carries the new token.
      await sleep(20);
      fs.writeFileSync(tokenFile, 'ray-token-new\n');
      await h.exporter.sampleAll();
      text = await scrapeText(h.exporter.metrics);
      expect(seen[seen.length - 1]).toBe('Bearer ray-token-new');
      expect(seriesValue(text, 'hypha_serve_source_up', { ray_cluster: 'c1' })).toBe(1);
      expect(seriesValue(text, 'hypha_serve_credential_last_read_timestamp_seconds', { file: tokenFile })).toBeGreaterThan(read1 ?? Infinity);

      // Mid-swap the file is missing: the last good token stays in use and the spell is counted and logged.
      fs.rmSync(tokenFile);
      await h.exporter.sampleAll();
      text = await scrapeText(h.exporter.metrics);
      expect(seen[seen.length - 1]).toBe('Bearer ray-token-new');
      expect(seriesValue(text, 'hypha_serve_source_up', { ray_cluster: 'c1' })).toBe(1);
      expect(seriesValue(text, 'hypha_serve_credential_read_errors_total', { file: tokenFile })).toBe(1);
      expect(h.lines.join('')).toContain('token file cannot be read; keeping the last token read');
      fs.writeFileSync(tokenFile, 'ray-token-new\n');
      await h.exporter.sampleAll();
      expect(h.lines.join('')).not.toMatch(/ray-token-(old|new)/);
    } finally {
      await h.close();
    }
  });
});

describe('auth_secret_changed on the status page', () => {
  it('a down source whose last failure is auth_secret_changed carries the explanation; plain auth does not', () => {
    const { log } = memoryLogger();
    const book = new HealthBook({ kind: 'hypha', target: 'main', log, label: 'hypha' });
    book.failed('auth_secret_changed', 'connect: Authentication error: Signature verification failed.');
    const status = (health: typeof book.health) => buildStatus({
      snapshot: { version: 1, ray: new Map(), hypha: new Map([['main', { target: 'main', health, reconnectsTotal: 0, generation: 1, listedSeconds: 0, connectionsListed: 0, registry: new Map(), workers: [], malformedTotal: 0 }]]) },
      transitions: [], transitionsCapacity: 10, ready: true, version: 'v', revision: 'r', now: Date.now() / 1000,
    });
    const s = status(book.health);
    expect(s.sources[0]).toMatchObject({ last_error_reason: 'auth_secret_changed', hint: expect.stringMatching(/new JWT secret.*proxy_service_token.*HYPHA_JWT_SECRET/) });
    expect(s.problems[0].text).toContain('redeploy its apps through the worker');
    const plain = new HealthBook({ kind: 'hypha', target: 'main', log, label: 'hypha' });
    plain.failed('auth', 'connect: Authentication error: The token has expired. Please fetch a new one');
    const p = status(plain.health);
    expect(p.sources[0].hint).toBeUndefined();
    expect(p.problems[0].text).not.toContain('JWT secret');
    // Once the source is up again the hint goes (the reason stays on record).
    book.succeeded(0.1);
    expect(status(book.health).sources[0].hint).toBeUndefined();
  });
});
