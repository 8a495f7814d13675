// Issue 18 against a real Hypha (and a real Ray Serve): the exporter process from dist/, its Hypha
// token in a Kubernetes-style Secret volume (token -> ..data/token, swapped atomically).
//  1. start: from the first moment it listens, no `source_up 0` before a source's first attempt has
//     ended and /-/ready not 200 before every first attempt has ended;
//  2. a short-lived token expires and is replaced in its file; Hypha restarts with the SAME JWT secret
//     (a forced reconnect): the exporter connects with the new token at once (no auth error, no
//     source_up 0 beyond the outage), no false "not registered", the missing app's spell kept;
//  3. Hypha restarts with a NEW JWT secret: reason auth_secret_changed with its explanation (metrics,
//     /api/v1/status, the status page problem), the token never in the exporter's output; a new token
//     written to the file is picked up without a reload.
import fs from 'node:fs';
import path from 'node:path';
import { hyphaWebsocketClient } from 'hypha-rpc';
import WebSocket from 'ws';
import { samplesOf, seriesValue } from '../helpers/exposition';
import { secretVolume } from '../helpers/secret-volume';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { Registrant, startRegistrant } from '../harness/hypha-registrant';
import { spawnExporter } from '../harness/exporter-process';
import { Proc, startTogether, waitFor } from '../harness/proc';
import { RayCluster, rayAppConfig, startRay } from '../harness/ray';

jest.setTimeout(300_000);

// The root user's own workspace: Hypha recreates it at every start (a created workspace does not
// survive a restart without S3), so the exporter and the provider find it after each restart.
const WS = 'ws-user-root';
const APP = 'two-step';
/** Deployed in Ray, never registered in Hypha: a standing "not registered" page that must survive. */
const MISSING = 'two-step-b';
const SHORT_TOKEN_S = 20;
const HYPHA = { source: 'hypha', hypha: 'local' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Sample { at: number; up?: number; registered?: number; missing?: number; missingSince?: number }

describe('credentials: rotation, JWT secret change, start state (real Hypha)', () => {
  let ray: RayCluster;
  let hypha: HyphaHandle;
  let exporter: Proc | undefined;
  let registrant: Registrant | undefined;
  let url = '';
  let volume: ReturnType<typeof secretVolume>;
  const tokens: string[] = [];
  let shortTokenMintedAt = 0;
  const tmp = tmpDir();

  const scrape = async (): Promise<string> => (await fetch(`${url}/metrics`)).text();
  const sample = async (): Promise<Sample> => {
    const t = await scrape();
    return {
      at: Date.now(),
      up: seriesValue(t, 'hypha_serve_source_up', HYPHA),
      registered: seriesValue(t, 'hypha_serve_app_registered', { app: APP }),
      missing: seriesValue(t, 'hypha_serve_app_registered', { app: MISSING }),
      missingSince: seriesValue(t, 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: MISSING }),
    };
  };
  /** Samples every 50 ms while `during` runs, then until `until` holds (or the deadline passes). */
  async function watch(during: () => Promise<void>, until: (s: Sample) => boolean, ms: number): Promise<Sample[]> {
    const out: Sample[] = [];
    let done = false;
    const loop = (async () => {
      while (!done) {
        out.push(await sample().catch(() => ({ at: Date.now() })));
        await sleep(50);
      }
    })();
    await during();
    const deadline = Date.now() + ms;
    while (Date.now() < deadline && !(out.length > 0 && until(out[out.length - 1]))) await sleep(50);
    done = true;
    await loop;
    return out;
  }

  beforeAll(async () => {
    [ray, hypha] = await startTogether([startRay(), startHypha({ serverId: 'creds', jwtSecret: 'fixed-secret-A-0123456789abcdef' })]);
    const apps = rayAppConfig('two-step.yaml');
    apps.applications.push({ ...apps.applications[0], name: MISSING, route_prefix: `/${MISSING}` });
    await ray.deploy(apps);
    await ray.waitApp(APP, (a) => a.status === 'RUNNING', 180_000);
    await ray.waitApp(MISSING, (a) => a.status === 'RUNNING', 180_000);
    registrant = await startRegistrant({ serverUrl: hypha.url, token: hypha.rootToken, prefix: 'x', app: APP, clientId: 'serve-bridge', type: 'generic' });
    await registrant.register();
  }, 300_000);

  afterAll(async () => {
    await registrant?.disconnect().catch(() => undefined);
    await exporter?.stop();
    await ray?.stop();
    await hypha?.stop();
    tmp.cleanup();
  });

  it('start: no source_up 0 before the first attempt ends, and /-/ready not 200 before', async () => {
    const short = await mintToken(hypha.url, hypha.rootToken, SHORT_TOKEN_S);
    shortTokenMintedAt = Date.now();
    tokens.push(short);
    const dir = path.join(tmp.dir, 'secret');
    fs.mkdirSync(dir);
    volume = secretVolume(dir, short);
    const config = tmp.write('exporter.yml', [
      'global: {interval: 1s, timeout: 2s}',
      `ray_clusters:\n  - {name: test, dashboard_url: "${ray.dashboardUrl}", interval: 500ms}`,
      `hypha: {name: local, server_url: "${hypha.url}", workspace: ${WS}, bearer_token_file: "${volume.file}"}`,
      // A watched service on the same server and token: the start rule holds for every source kind.
      'watched_services: [{service: public/hypha-login, interval: 1s}]',
      'hypha_registration:',
      // The registrant's own reconnect (hypha-rpc: 1 s doubling) can come up to one backoff step after
      // Hypha is ready: after a restart of several seconds on CI's shared cores it came past a 5 s settle.
      '  reconnect_settle: 20s',
      '  clusters:',
      '    - cluster: test',
      `      templates: [{service: "{workspace}/serve-bridge:{app}", include: "^${APP}(-b)?$"}]`,
      '',
    ].join('\n'));
    const ex = await spawnExporter({ name: 'creds-exporter', config: { file: config }, waitReady: false });
    url = ex.url;
    exporter = ex.proc;
    // Tight loop from the first moment it listens until every source is known and it is ready.
    const seen: { at: number; ready: number; ups: Record<string, number> }[] = [];
    const t0 = Date.now();
    for (;;) {
      if (Date.now() - t0 > 60_000) throw new Error(`not ready after 60 s: ${exporter.output().slice(-2000)}`);
      let metrics: string;
      let ready: number;
      try {
        // Ready first: a 200 must then be followed by a scrape in which every source is known.
        ready = (await fetch(`${url}/-/ready`)).status;
        metrics = await scrape();
      } catch {
        await sleep(2);
        continue;
      }
      const ups: Record<string, number> = {};
      for (const s of samplesOf(metrics, 'hypha_serve_source_up')) ups[`${s.labels.source}/${s.labels.service || s.labels.ray_cluster || s.labels.hypha}`] = s.value;
      seen.push({ at: Date.now() - t0, ready, ups });
      if (ready === 200) break;
    }
    const firstReady = seen.findIndex((s) => s.ready === 200);
    const before = seen.slice(0, firstReady);
    process.stdout.write(`start: ${seen.length} scrape pairs; first answer at ${seen[0].at} ms; ready at ${seen[firstReady].at} ms; `
      + `source_up absent in ${seen.filter((s) => Object.keys(s.ups).length === 0).length} scrapes\n`);
    // Both peers answer: a 0 anywhere would be false. Absent before, never 0.
    expect(seen.flatMap((s) => Object.values(s.ups)).filter((v) => v !== 1)).toEqual([]);
    // Not ready while some source is still unknown.
    expect(before.every((s) => s.ready === 503)).toBe(true);
    expect(seen[firstReady].ups).toEqual({ 'hypha/local': 1, 'ray/test': 1, 'hypha_service/public/hypha-login': 1 });
    const t = await scrape();
    expect(seriesValue(t, 'hypha_serve_credential_last_read_timestamp_seconds', { ...HYPHA, file: volume.file })).toBeGreaterThan(0);
    expect(seriesValue(t, 'hypha_serve_credential_read_errors_total', { ...HYPHA, file: volume.file })).toBe(0);
  });

  it('an expiring token replaced in its file is used at the forced reconnect: no auth error, no false not-registered, the missing spell kept', async () => {
    await waitFor('registration judged', async () => {
      const s = await sample();
      return s.up === 1 && s.registered === 1 && s.missing === 0;
    }, 60_000, 100);
    const before = await sample();
    const readBefore = seriesValue(await scrape(), 'hypha_serve_credential_last_read_timestamp_seconds', { file: volume.file }) ?? 0;
    // Rotate: the new token lands in the Secret volume; the open connection keeps working meanwhile.
    const long = await mintToken(hypha.url, hypha.rootToken, 3600);
    tokens.push(long);
    volume.swap(long);
    await waitFor('rotation read', async () => (seriesValue(await scrape(), 'hypha_serve_credential_last_read_timestamp_seconds', { file: volume.file }) ?? 0) > readBefore, 10_000, 100);
    expect((await sample()).up).toBe(1);
    // The old token must have expired before the reconnect, so that only the new one can work.
    await sleep(Math.max(0, shortTokenMintedAt + (SHORT_TOKEN_S + 2) * 1000 - Date.now()));
    await expect(tokenRefusal(hypha.url, tokens[0])).resolves.toMatch(/expired/);
    await expect(tokenRefusal(hypha.url, long)).resolves.toBeUndefined();

    let tReady = 0;
    const samples = await watch(async () => {
      await hypha.restart();
      tReady = Date.now();
    }, (s) => s.up === 1 && s.registered === 1 && s.missing === 0, 60_000);
    const t = await scrape();
    const down = samples.filter((s) => s.at >= tReady && s.up === 0);
    const lastDown = down.length > 0 ? down[down.length - 1].at - tReady : 0;
    process.stdout.write(`rotation + restart (same JWT secret): source_up 0 for ${lastDown} ms after Hypha was ready; `
      + `${samples.length} samples\n`);
    // The new token worked at the first attempt on the restarted server: no refusal at all.
    expect(seriesValue(t, 'hypha_serve_source_errors_total', { ...HYPHA, reason: 'auth' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_source_errors_total', { ...HYPHA, reason: 'auth_secret_changed' })).toBe(0);
    expect(seriesValue(t, 'hypha_serve_source_up', HYPHA)).toBe(1);
    // Down only for the reconnect itself (the backoff is at most 5 s), not for the rest of the run.
    expect(lastDown).toBeLessThan(8000);
    // No page started: the registered app is never reported missing; no page lost: the missing one
    // is never reported registered and keeps its spell.
    expect(samples.filter((s) => s.registered === 0)).toEqual([]);
    expect(samples.filter((s) => s.missing === 1)).toEqual([]);
    expect(seriesValue(t, 'hypha_serve_app_unregistered_since_timestamp_seconds', { app: MISSING })).toBe(before.missingSince);
    expect(seriesValue(t, 'hypha_serve_hypha_reconnects_total', { hypha: 'local' })).toBeGreaterThanOrEqual(1);
  });

  it('Hypha restarted with a new JWT secret: auth_secret_changed explained, no token in the output; a new token in the file recovers', async () => {
    await hypha.restart({ jwtSecret: 'another-secret-B-0123456789abcdef' });
    await waitFor('auth_secret_changed counted', async () =>
      (seriesValue(await scrape(), 'hypha_serve_source_errors_total', { ...HYPHA, reason: 'auth_secret_changed' }) ?? 0) > 0, 30_000, 200);
    const t = await scrape();
    expect(seriesValue(t, 'hypha_serve_source_up', HYPHA)).toBe(0);
    const status = await (await fetch(`${url}/api/v1/status`)).json() as {
      sources: { source: string; target: string; last_error?: string; last_error_reason?: string; hint?: string }[];
      problems: { kind: string; subject: string; text: string }[];
    };
    const src = status.sources.find((s) => s.source === 'hypha' && s.target === 'local');
    expect(src?.last_error_reason).toBe('auth_secret_changed');
    expect(src?.last_error).toMatch(/Signature verification failed/);
    expect(src?.hint).toMatch(/new JWT secret/);
    expect(src?.hint).toMatch(/BioEngine/);
    expect(src?.hint).toMatch(/HYPHA_JWT_SECRET/);
    const problem = status.problems.find((p) => p.kind === 'source' && p.subject === 'hypha/local');
    expect(problem?.text).toMatch(/new JWT secret.*proxy_service_token.*redeploy.*HYPHA_JWT_SECRET/);
    // Unknown never pages: while Hypha cannot be read there is no registration verdict at all.
    expect(seriesValue(t, 'hypha_serve_app_registered', { app: MISSING })).toBeUndefined();

    // A token of the new secret, written to the file, is read before the next attempt: no reload.
    const fresh = await mintToken(hypha.url, hypha.rootToken, 3600);
    tokens.push(fresh);
    volume.swap(fresh);
    await waitFor('up with the new token', async () => seriesValue(await scrape(), 'hypha_serve_source_up', HYPHA) === 1, 30_000, 100);

    const out = exporter?.output() ?? '';
    expect(out).toContain('auth_secret_changed');
    for (const tok of tokens) {
      expect(out.includes(tok)).toBe(false);
      // Not even a recognisable part of it (the signature part is what makes it a credential).
      expect(out.includes(tok.split('.').pop() ?? tok)).toBe(false);
    }
  });
});

type RawConnect = (cfg: Record<string, unknown>) => Promise<{ generateToken(c: Record<string, unknown>): Promise<string>; disconnect(): Promise<void> }>;
const connectRaw = (cfg: Record<string, unknown>) => {
  const g = globalThis as { WebSocket?: unknown };
  if (g.WebSocket === undefined) g.WebSocket = WebSocket;
  const quiet = { debug() {}, info() {}, warn() {}, error() {}, log() {} };
  return (hyphaWebsocketClient.connectToServer as unknown as RawConnect)({ ...cfg, logger: quiet, method_timeout: 10 });
};

/** A token of the root user for its own workspace, valid for `expiresIn` seconds (Hypha's generate_token). */
async function mintToken(serverUrl: string, rootToken: string, expiresIn: number): Promise<string> {
  const server = await connectRaw({ server_url: serverUrl, token: rootToken });
  try {
    return await server.generateToken({ expires_in: expiresIn });
  } finally {
    await server.disconnect();
  }
}

/** Why Hypha refuses a new connection with this token (undefined: it accepts it). */
async function tokenRefusal(serverUrl: string, token: string): Promise<string | undefined> {
  try {
    const server = await connectRaw({ server_url: serverUrl, token });
    await server.disconnect();
    return undefined;
  } catch (e) {
    return String(e);
  }
}
