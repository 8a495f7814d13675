// GET /api/v1/status (and the page's static files) over recorded Ray Serve 2.60
// answers replayed through the exporter's own Ray source: every answer must
// match docs/status-api.schema.json, and the transitions must follow the replay.
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import Ajv2020 from 'ajv/dist/2020';
import type { AppRegistration } from '../../src/snapshot/registration';
import { parseServeInstance } from '../../src/sources/ray-serve/parse';
import type { WatchedServiceSample } from '../../src/snapshot/services';
import { SnapshotStore } from '../../src/snapshot/store';
import { newSourceHealth } from '../../src/snapshot/types';
import { buildStatus } from '../../src/status-page/build';
import type { StatusV1 } from '../../src/status-page/model';
import { TransitionRecorder } from '../../src/status-page/transitions';
import { exporterWithConfig } from '../helpers/exporter';
import { HyphaFixture, putHypha } from '../helpers/hypha-snapshot';
import { startUpstream } from '../helpers/http-upstream';

const root = path.resolve(__dirname, '..', '..');
const FIXTURES = path.join(root, 'test', 'fixtures', 'ray', '2.60');
const TOKEN = 'tok-Zq8-never-shown-4711';

const schema = JSON.parse(fs.readFileSync(path.join(root, 'docs', 'status-api.schema.json'), 'utf8')) as object;
const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

interface Recorded { status: number; content_type: string; body: string }
const fixture = (name: string): unknown => JSON.parse(fs.readFileSync(path.join(FIXTURES, name), 'utf8'));

/** Recorded Serve answers in the order they were recorded, each with the /-/healthz answer of that moment. */
const REPLAY: Array<{ serve: string; healthz?: string }> = [
  { serve: 'serve-not-started.json' },
  { serve: 'serve-no-apps.json', healthz: 'proxy-healthz-no-apps.json' },
  { serve: 'app-deploying.json', healthz: 'proxy-healthz-no-apps.json' },
  { serve: 'app-deploying-replicas-starting.json', healthz: 'proxy-healthz-no-apps.json' },
  { serve: 'app-running.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'worker-downscaling.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'worker-scaled-to-zero.json', healthz: 'proxy-healthz-scaled-to-zero.json' },
  { serve: 'worker-upscaling.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'worker-upscaled.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'app-crash-retrying.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'app-turns-sick-running.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'app-bad-import-deploy-failed.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'app-crash-on-start-failed.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'app-unhealthy.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'app-recovered.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'app-deleting.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'app-deleted.json', healthz: 'proxy-healthz-running.json' },
  { serve: 'serve-all-apps-deleted.json', healthz: 'proxy-healthz-all-apps-deleted.json' },
  { serve: 'serve-shut-down.json' },
];

describe('GET /api/v1/status over a replay of recorded Ray Serve 2.60 answers', () => {
  let up: Awaited<ReturnType<typeof startUpstream>>;
  let h: ReturnType<typeof exporterWithConfig>;
  let base: string;
  let small: TransitionRecorder;
  let step: { serve: string; healthz?: string } | 'http500' = REPLAY[0];
  const seen = new Map<string, StatusV1>();

  async function status(): Promise<StatusV1> {
    const res = await fetch(`${base}/api/v1/status`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const text = await res.text();
    expect(text).not.toContain(TOKEN);
    const body = JSON.parse(text) as unknown;
    if (!validate(body)) throw new Error(`schema violation: ${JSON.stringify(validate.errors, null, 1)}`);
    return body as StatusV1;
  }

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      if (step === 'http500') {
        // An upstream that echoes the credential in its error body: the token must still never surface.
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`internal error for ${String(req.headers.authorization)}`);
        return;
      }
      if (req.url?.startsWith('/api/serve/applications/')) {
        const body = fixture(step.serve) as { http_options?: { port?: number } };
        // The recorded proxy port is replaced by this server's, which answers /-/healthz as recorded.
        if (body.http_options?.port !== undefined) body.http_options.port = up.port;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      } else if (req.url === '/-/healthz' && step.healthz) {
        const r = fixture(step.healthz) as Recorded;
        res.writeHead(r.status, { 'content-type': r.content_type });
        res.end(r.body);
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    h = exporterWithConfig(
      `ray_clusters:\n  - name: c1\n    dashboard_url: ${up.url}\n    bearer_token_env: RAY_TOKEN\n    interval: 1h\n    timeout: 2s\n`,
      { env: { RAY_TOKEN: TOKEN } },
    );
    small = new TransitionRecorder(h.exporter.store, { capacity: 3 });
    h.exporter.start();
    await h.exporter.settled();
    base = (await h.serve()).url;
    seen.set(REPLAY[0].serve, await status());
    for (const s of REPLAY.slice(1)) {
      step = s;
      await h.exporter.sampleAll();
      seen.set(s.serve, await status());
    }
    step = 'http500';
    await h.exporter.sampleAll();
    seen.set('http500', await status());
    step = REPLAY[REPLAY.length - 1];
    await h.exporter.sampleAll();
    seen.set('recovered', await status());
  });

  afterAll(async () => {
    small?.stop();
    await h?.close();
    await up?.close();
  });

  it('every answer of the replay validates against docs/status-api.schema.json', () => {
    expect(seen.size).toBe(REPLAY.length + 2);
    for (const s of seen.values()) expect(s.version).toBe(1);
    // The schema is strict enough to catch drift in either direction.
    const s = seen.get('app-running.json')!;
    expect(validate({ ...s, surprise: true })).toBe(false);
    expect(validate({ ...s, version: 2 })).toBe(false);
    expect(validate({ ...s, apps: [{ ...s.apps[0], severity: 'fine' }] })).toBe(false);
    const { transitions: _dropped, ...missing } = s;
    expect(validate(missing)).toBe(false);
  });

  it('an empty Serve is up with no apps and no problems', () => {
    const s = seen.get('serve-no-apps.json')!;
    expect(s.sources).toEqual([expect.objectContaining({ source: 'ray', target: 'c1', up: true, errors_total: 0 })]);
    expect(s.sources[0].last_sample_age_seconds).toBeGreaterThanOrEqual(0);
    expect(s.apps).toEqual([]);
    // The proxy answers 503 while no app is deployed: shown, but not a problem.
    expect(s.problems).toEqual([]);
    expect(s.clusters[0]).toMatchObject({ cluster: 'c1', up: true, apps: 0 });
    expect(s.clusters[0].proxies[0]).toMatchObject({ head: true, ready: false, ready_detail: 'HTTP 503: Route table is not populated yet.' });
    expect(s.sections).toEqual({ registration: false, watched_services: false });
  });

  it('shows replicas running/target/min/max and the scaled-to-zero Worker of a RUNNING app as ok', () => {
    const s = seen.get('worker-scaled-to-zero.json')!;
    const app = s.apps.find((a) => a.app === 'two-step')!;
    expect(app).toMatchObject({ cluster: 'c1', status: 'RUNNING', severity: 'ok', problems: [], route_prefix: '/two-step' });
    const worker = app.deployments.find((d) => d.name === 'Worker')!;
    expect(worker).toMatchObject({ status: 'HEALTHY', running: 0, target: 0, min: 0, max: 2, autoscaling: true, scaled_to_zero: true });
    expect(Object.keys(worker.replicas).sort()).toEqual(['PENDING_MIGRATION', 'RECOVERING', 'RUNNING', 'STARTING', 'STOPPING', 'UPDATING']);
    expect(app.deployments.find((d) => d.name === 'Front')).toMatchObject({ running: 1, target: 1, min: 1, max: 1, scaled_to_zero: false });
    expect(s.clusters[0].proxies).toEqual([expect.objectContaining({ head: true, status: 'HEALTHY', ready: true })]);
    expect(s.problems).toEqual([]);
  });

  it('puts problems first: DEPLOY_FAILED is critical with the traceback tail, DEPLOYING a warning', () => {
    const s = seen.get('app-bad-import-deploy-failed.json')!;
    expect(s.apps.map((a) => [a.app, a.status, a.severity])).toEqual([
      ['bad-import', 'DEPLOY_FAILED', 'critical'],
      ['crash-on-start', 'DEPLOYING', 'warning'],
      ['turns-sick', 'RUNNING', 'ok'],
      ['two-step', 'RUNNING', 'ok'],
    ]);
    const bad = s.apps[0];
    expect(bad.message).toContain("ModuleNotFoundError: No module named 'no_such_module_for_tests'");
    expect(bad.message_truncated).toBe(true);
    expect(bad.message.length).toBeLessThanOrEqual(2001);
    expect(s.problems[0]).toMatchObject({ severity: 'critical', kind: 'app', subject: 'c1/bad-import', cluster: 'c1', app: 'bad-import' });
    expect(s.summary).toMatchObject({ problems: 2, critical: 1, warning: 1, apps: 4, sources_up: 1, sources_down: 0 });
  });

  it('UNHEALTHY app and its deployment are named in the problem text', () => {
    const s = seen.get('app-unhealthy.json')!;
    const sick = s.apps.find((a) => a.app === 'turns-sick')!;
    expect(sick.severity).toBe('critical');
    expect(sick.problems).toEqual(['Serve status UNHEALTHY', expect.stringMatching(/^deployment Patient UNHEALTHY/)]);
  });

  it('a failing upstream: source down with a scrubbed last error, apps absent, cluster marked down', () => {
    const s = seen.get('http500')!;
    expect(s.sources[0]).toMatchObject({ up: false, errors: expect.objectContaining({ http_status: 1 }) });
    expect(s.sources[0].last_error).toMatch(/^HTTP 500 from the Serve API/);
    expect(s.sources[0].last_error).toContain('<secret>');
    expect(s.apps).toEqual([]);
    expect(s.clusters[0]).toMatchObject({ up: false, apps: null, proxies: [] });
    expect(s.problems[0]).toMatchObject({ severity: 'critical', kind: 'source', subject: 'ray/c1' });
  });

  it('records the transitions of the replay, newest first, and only real changes', () => {
    const t = seen.get('recovered')!.transitions;
    const seqs = t.map((x) => x.seq);
    expect([...seqs].sort((a, b) => b - a)).toEqual(seqs);
    const lines = [...t].reverse().map((x) => `${x.kind} ${x.subject} ${x.from ?? '-'}>${x.to ?? '-'}`);
    expect(lines).toEqual([
      'source ray/c1 ->up',
      'app_added c1/two-step ->DEPLOYING',
      'app_status c1/two-step DEPLOYING>RUNNING',
      'scaled_to_zero c1/two-step/Worker running>scaled to zero',
      'scaled_to_zero c1/two-step/Worker scaled to zero>waking',
      'app_added c1/bad-import ->DEPLOYING',
      'app_added c1/crash-on-start ->DEPLOYING',
      'app_added c1/turns-sick ->DEPLOYING',
      'app_status c1/turns-sick DEPLOYING>RUNNING',
      'app_status c1/bad-import DEPLOYING>DEPLOY_FAILED',
      'app_status c1/crash-on-start DEPLOYING>DEPLOY_FAILED',
      'app_status c1/turns-sick RUNNING>UNHEALTHY',
      // Recorded: Worker DOWNSCALING to target 0 with its last replica STOPPING already counts as at zero.
      'scaled_to_zero c1/two-step/Worker running>scaled to zero',
      'app_status c1/turns-sick UNHEALTHY>RUNNING',
      'app_status c1/two-step RUNNING>DELETING',
      'app_status c1/bad-import DEPLOY_FAILED>DEPLOYING',
      'app_removed c1/two-step DELETING>-',
      'app_removed c1/bad-import DEPLOYING>-',
      'app_removed c1/crash-on-start DEPLOY_FAILED>-',
      'app_removed c1/turns-sick RUNNING>-',
      'source ray/c1 up>down',
      'source ray/c1 down>up',
    ]);
    const down = t.find((x) => x.kind === 'source' && x.to === 'down')!;
    expect(down).toMatchObject({ severity: 'critical', source: 'ray', target: 'c1', cluster: 'c1' });
    expect(down.detail).toMatch(/^HTTP 500/);
    expect(t.find((x) => x.kind === 'app_status' && x.to === 'DEPLOY_FAILED')?.severity).toBe('critical');
    expect(seen.get('recovered')!.transitions_capacity).toBe(200);
  });

  it('the ring buffer keeps only the newest entries', () => {
    const all = seen.get('recovered')!.transitions;
    const kept = small.list();
    expect(kept.map((x) => [x.kind, x.subject, x.from, x.to])).toEqual(all.slice(0, 3).map((x) => [x.kind, x.subject, x.from, x.to]));
    expect(kept[0].seq - kept[2].seq).toBe(2);
  });

  it('serves the page with a CSP that forbids inline script, and no data in the HTML', async () => {
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    const html = await res.text();
    expect(html).toContain('<script src="static/status.js"></script>');
    expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script src="static/status.js">']);
    expect(html).not.toMatch(/\son[a-z]+\s*=/i);
    expect(html).not.toMatch(/\sstyle\s*=/i);
    expect(html).not.toMatch(/https?:\/\//);
    // The shell holds no upstream data: nothing of the replay is in it.
    expect(html).not.toContain('two-step');
    expect(html).not.toContain('c1');
  });

  it('serves static/status.js as a script that compiles and never parses HTML from data', async () => {
    const res = await fetch(`${base}/static/status.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/javascript/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const js = await res.text();
    expect(() => new vm.Script(js)).not.toThrow();
    for (const sink of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(', 'new Function', 'DOMParser', 'createContextualFragment']) {
      expect(js).not.toContain(sink);
    }
    expect(js).toContain('textContent');
    const css = await fetch(`${base}/static/status.css`);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect(await css.text()).toContain('@media (max-width: 760px)');
  });

  it('leaves /metrics and /-/ routes as they were', async () => {
    expect((await fetch(`${base}/metrics`)).status).toBe(200);
    expect(await (await fetch(`${base}/-/healthy`)).text()).toBe('Healthy.\n');
    expect((await fetch(`${base}/no-such-page`)).status).toBe(404);
  });
});

// The watched-services part, fed through the store the way the services source publishes it
// (the real source against a real Hypha is exercised by the services integration tests).
describe('watched services in /api/v1/status and the transition log', () => {
  const SERVICE = 'public/artifact-manager';
  function sample(over: Partial<WatchedServiceSample>, at: number): WatchedServiceSample {
    const health = { ...newSourceHealth('hypha', SERVICE), up: true, lastSuccessSeconds: at, lastDurationSeconds: 0.01 };
    return { service: SERVICE, health, cached: [], clientIdChangesTotal: 0, canaryReresolvesTotal: 0, calls: [], lastProbes: {}, ...over };
  }
  function probe(via: 'cached' | 'fresh', outcome: 'ok' | 'timeout', seconds: number, at: number) {
    return { via, method: 'list', outcome, seconds, atSeconds: at, target: `public/c-x:artifact-manager` };
  }

  it('shows providers, resolved vs cached ids, stale holders and probes; records the id changes', () => {
    const store = new SnapshotStore();
    const rec = new TransitionRecorder(store);
    const put = (w: WatchedServiceSample) => store.setService(SERVICE, w);
    const t = 1_790_000_000;
    put(sample({ providers: ['c-old'], resolvedClientId: 'c-old', cached: [{ holder: 'exporter', clientId: 'c-old', stale: false, sinceSeconds: t }],
      lastProbes: { cached: probe('cached', 'ok', 0.004, t), fresh: probe('fresh', 'ok', 0.003, t) } }, t));
    // The artifact manager re-registered under a new client id (Hypha came back under another server id, so the old
    // id is proven gone and the exporter pages at once); the canary still holds the old one.
    const page = { firing: true, sinceSeconds: t + 10, dueSeconds: t + 10, cause: 'server_gone' as const, selfHealing: false };
    put(sample({ providers: ['c-new'], resolvedClientId: 'c-new', clientIdChangesTotal: 1, lastChangeSeconds: t + 10,
      cached: [{ holder: 'exporter', clientId: 'c-old', stale: true, staleSinceSeconds: t + 10, sinceSeconds: t, serverGone: true, page }],
      lastProbes: { cached: probe('cached', 'timeout', 5, t + 10), fresh: probe('fresh', 'ok', 0.03, t + 10) } }, t + 10));
    const build = () => buildStatus({ snapshot: store.get(), transitions: rec.list(), transitionsCapacity: rec.capacity, ready: true, version: 'v', revision: 'r', now: t + 11 });
    let s = build();
    if (!validate(s)) throw new Error(JSON.stringify(validate.errors));
    expect(s.sections.watched_services).toBe(true);
    const w = s.watched_services[0];
    expect(w).toMatchObject({
      service: SERVICE, severity: 'critical', up: true, providers: 1, provider_client_ids: ['c-new'], resolved_client_id: 'c-new',
      cached: [{
        holder: 'exporter', client_id: 'c-old', stale: true, stale_since: t + 10, since: t,
        page: { firing: true, due: t + 10, cause: 'server_gone', self_healing: false },
      }],
      client_id_changes_total: 1, last_change_at: t + 10,
    });
    expect(w.probes).toEqual([
      expect.objectContaining({ via: 'cached', success: false, outcome: 'timeout', latency_seconds: 5 }),
      expect.objectContaining({ via: 'fresh', success: true, outcome: 'ok', latency_seconds: 0.03 }),
    ]);
    expect(w.problems).toEqual([
      'exporter holds stale client id c-old (not among the live providers, a replaced server id: it never returns); HyphaServiceCachedProxyStale fires',
      'call via cached proxy: timeout after 5.00 s',
    ]);
    expect(s.problems).toEqual([expect.objectContaining({ severity: 'critical', kind: 'service', subject: SERVICE })]);
    expect(s.sources).toEqual([expect.objectContaining({ source: 'hypha', target: SERVICE, up: true })]);

    // The canary is re-resolved: stale no more.
    put(sample({ providers: ['c-new'], resolvedClientId: 'c-new', clientIdChangesTotal: 1, lastChangeSeconds: t + 10,
      cached: [{ holder: 'exporter', clientId: 'c-new', stale: false, sinceSeconds: t + 20 }],
      lastProbes: { cached: probe('cached', 'ok', 0.004, t + 20), fresh: probe('fresh', 'ok', 0.003, t + 20) } }, t + 20));
    s = build();
    if (!validate(s)) throw new Error(JSON.stringify(validate.errors));
    expect(s.problems).toEqual([]);
    expect([...s.transitions].reverse().map((x) => `${x.kind} ${x.subject} ${x.from ?? '-'}>${x.to ?? '-'}`)).toEqual([
      `source hypha/${SERVICE} ->up`,
      `providers ${SERVICE} c-old>c-new`,
      `client_id ${SERVICE} (fresh resolve) c-old>c-new`,
      `client_id ${SERVICE} cached by exporter current>stale`,
      `client_id ${SERVICE} cached by exporter c-old>c-new`,
      `client_id ${SERVICE} cached by exporter stale>current`,
    ]);
    expect(s.transitions.find((x) => x.to === 'stale')).toMatchObject({ severity: 'critical', holder: 'exporter', service: SERVICE });
    rec.stop();
  });
});

// The Hypha registration part, as the Hypha source publishes it (Snapshot.hypha), next to
// Serve's view parsed by the exporter's own parser from a recorded answer.
describe('Hypha registration in /api/v1/status and the transition log', () => {
  const WS = 'ws-user-root';
  const ID = `${WS}/wk-1-3f2a9c1d:two-step`;
  function ray(fixtureName: string, at: number) {
    const parsed = parseServeInstance(fixture(fixtureName));
    return {
      cluster: 'c1',
      health: { ...newSourceHealth('ray', 'c1'), up: true, lastSuccessSeconds: at },
      state: { apps: parsed.apps, proxies: [], appsDropped: 0 },
      appsDroppedTotal: 0,
      malformedTotal: 0,
    };
  }
  function hypha(reg: Partial<AppRegistration>, at: number, up = true): HyphaFixture {
    return {
      target: 'local',
      health: { ...newSourceHealth('hypha', 'local'), up, lastSuccessSeconds: at, ...(up ? {} : { lastError: 'connect ECONNREFUSED', lastErrorSeconds: at }) },
      reconnectsTotal: 0,
      generation: 1,
      apps: [{ cluster: 'c1', app: 'two-step', hypha: 'local', workspace: WS, service: ID, registered: true, state: 'registered', clientIdMismatch: false, clientIdChangesTotal: 0, providerClientId: 'wk-1-3f2a9c1d', settled: true, ...reg }],
      workers: [{ worker: `${WS}/wk-1:bioengine-worker`, workspace: WS, clientId: 'wk-1', up: true, rayCluster: 'c1', apps: [{ app: 'two-step', status: 'RUNNING', serviceRegistered: reg.registered ?? true }] }],
    };
  }

  it('shows expected id, state with cause, missing since and the worker view; records state changes', () => {
    const store = new SnapshotStore();
    const rec = new TransitionRecorder(store);
    const t = 1_790_000_000;
    const build = (now: number) => {
      const s = buildStatus({ snapshot: store.get(), transitions: rec.list(), transitionsCapacity: rec.capacity, ready: true, version: 'v', revision: 'r', now });
      if (!validate(s)) throw new Error(JSON.stringify(validate.errors));
      return s;
    };
    store.setRayCluster(ray('app-running.json', t));
    putHypha(store, hypha({}, t));
    let s = build(t);
    expect(s.sections.registration).toBe(true);
    expect(s.apps[0]).toMatchObject({
      app: 'two-step', severity: 'ok',
      registration: { expected_service_id: ID, state: 'registered', cause: 'registered in Hypha', client_id: 'wk-1-3f2a9c1d', client_id_mismatch: false },
      worker_view: { worker: `${WS}/wk-1:bioengine-worker`, worker_up: true, app_status: 'RUNNING', service_registered: true },
    });
    expect(s.sources.map((x) => `${x.source}/${x.target}`)).toEqual(['hypha/local', 'ray/c1']);
    expect(s.workers).toEqual([{ worker: `${WS}/wk-1:bioengine-worker`, up: true }]);

    // Seed 000: the Worker scales to zero, the proxy deregisters, Serve and the worker still say RUNNING.
    store.setRayCluster(ray('worker-scaled-to-zero.json', t + 30));
    putHypha(store, hypha({ registered: false, state: 'missing_scaled_to_zero', unregisteredSinceSeconds: t + 25, providerClientId: undefined, causeDeployments: ['Worker'] }, t + 30));
    s = build(t + 31);
    const app = s.apps[0];
    expect(app).toMatchObject({ status: 'RUNNING', severity: 'critical' });
    expect(app.registration).toEqual({
      hypha: 'local', expected_service_id: ID, state: 'missing_scaled_to_zero', missing_since: t + 25, client_id_mismatch: false,
      cause: 'not in Hypha while every deployment is idle at zero replicas: deregistered for being scaled to zero (at zero: Worker)',
    });
    expect(app.worker_view).toMatchObject({ app_status: 'RUNNING', service_registered: false });
    expect(s.problems).toEqual([expect.objectContaining({ severity: 'critical', kind: 'app', subject: 'c1/two-step', text: expect.stringMatching(/^registration missing_scaled_to_zero: not in Hypha/) })]);

    // Hypha down: the registration is unknown (not missing), and only the source is a problem.
    putHypha(store, hypha({ registered: false, state: 'missing_scaled_to_zero', unregisteredSinceSeconds: t + 25 }, t + 40, false));
    s = build(t + 41);
    expect(s.apps[0].registration).toMatchObject({ state: 'unknown', cause: 'unknown while the Hypha source is down' });
    expect(s.apps[0].registration?.missing_since).toBeUndefined();
    expect(s.problems.map((p) => `${p.severity} ${p.kind} ${p.subject}`)).toEqual(['critical source hypha/local']);

    // Back, re-registered under another client id.
    putHypha(store, hypha({ registered: true, state: 'registered', clientIdMismatch: true, providerClientId: 'wk-2-3f2a9c1d' }, t + 50));
    s = build(t + 51);
    expect(s.apps[0]).toMatchObject({ severity: 'warning', problems: ['registered under another client id (wk-2-3f2a9c1d)'] });

    expect([...s.transitions].reverse().map((x) => `${x.kind} ${x.subject} ${x.from ?? '-'}>${x.to ?? '-'}`)).toEqual([
      'source ray/c1 ->up',
      'source hypha/local ->up',
      'scaled_to_zero c1/two-step/Worker running>scaled to zero',
      'registration c1/two-step registered>missing_scaled_to_zero',
      'source hypha/local up>down',
      'source hypha/local down>up',
      // The unknown spell is skipped: the change is from the last known state.
      'registration c1/two-step missing_scaled_to_zero>registered',
      'client_id c1/two-step registration wk-1-3f2a9c1d>wk-2-3f2a9c1d',
    ]);
    rec.stop();
  });

  it('reads an app object the Ray source kept (an unchanged answer) as unchanged, and a replaced one anew', () => {
    const store = new SnapshotStore();
    const rec = new TransitionRecorder(store);
    const t = 1_790_000_000;
    const first = ray('app-running.json', t);
    store.setRayCluster(first);
    // A new sample whose answer did not change: new state and health objects around the same app objects.
    store.setRayCluster({ ...first, health: { ...first.health, lastSuccessSeconds: t + 10 }, state: { ...first.state, apps: [...first.state.apps] } });
    // The app changed: the source gives it a new object.
    const deploying = first.state.apps.map((a) => ({ ...a, status: 'DEPLOYING' as const }));
    store.setRayCluster({ ...first, state: { ...first.state, apps: deploying } });
    store.setRayCluster({ ...first, state: { ...first.state, apps: [...deploying] } });
    store.setRayCluster({ ...first, state: { ...first.state, apps: deploying.map((a) => ({ ...a, status: 'RUNNING' as const })) } });
    expect([...rec.list()].reverse().map((x) => `${x.kind} ${x.subject} ${x.from ?? '-'}>${x.to ?? '-'}`)).toEqual([
      'source ray/c1 ->up',
      'app_status c1/two-step RUNNING>DEPLOYING',
      'app_status c1/two-step DEPLOYING>RUNNING',
    ]);
  });
});
