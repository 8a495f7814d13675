/**
 * Records real Ray Serve REST and proxy replies into test/fixtures/ray/<major.minor>/.
 *
 *   npx tsc -p tsconfig.json && node dist/scripts/record-ray-fixtures.js [--ray-bin PATH] [--out DIR]
 *
 * --ray-bin (or $RAY_BIN) selects the Ray install, default .venv/ray/bin/ray; older releases are
 * recorded from a throwaway venv (see test/fixtures/ray/README.md). Bodies are saved as received,
 * only re-indented (no token is changed, so 1.0 stays 1.0 and key order is kept).
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  AppJson,
  DeploymentJson,
  HttpReply,
  RayCluster,
  ServeDetailsJson,
  rayAppConfig,
  startRay,
  summarizeApp,
} from '../test/harness/ray';
import { repoRoot } from '../src/util/repo-root';

interface Args {
  rayBin?: string;
  out?: string;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--ray-bin') args.rayBin = argv[++i];
    else if (a === '--out') args.out = argv[++i];
    else if (a === '--help' || a === '-h') {
      process.stdout.write('usage: node dist/scripts/record-ray-fixtures.js [--ray-bin PATH] [--out DIR]\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

/** Indent JSON text without re-serializing it, so number spellings and key order survive. */
export function reindentJson(text: string): string {
  let out = '';
  let depth = 0;
  let inString = false;
  const nl = () => '\n' + '  '.repeat(depth);
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i];
      else if (c === '"') inString = false;
      continue;
    }
    if (c === ' ' || c === '\n' || c === '\t' || c === '\r') continue;
    if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      let j = i + 1;
      while (text[j] === ' ' || text[j] === '\n') j++;
      if (text[j] === close) {
        out += c + close;
        i = j;
      } else {
        depth++;
        out += c + nl();
      }
    } else if (c === '}' || c === ']') {
      depth--;
      out += nl() + c;
    } else if (c === ',') {
      out += ',' + nl();
    } else if (c === ':') {
      out += ': ';
    } else {
      out += c;
    }
  }
  return out + '\n';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class Recorder {
  readonly files: Record<string, string> = {};
  readonly missed: string[] = [];
  readonly notes: string[] = [];

  constructor(
    private readonly ray: RayCluster,
    private readonly dir: string,
  ) {}

  log(msg: string): void {
    process.stdout.write(`[record ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
  }

  saveServe(name: string, what: string, reply: HttpReply): void {
    JSON.parse(reply.body); // must be JSON; throws otherwise
    fs.writeFileSync(path.join(this.dir, `${name}.json`), reindentJson(reply.body));
    this.files[`${name}.json`] = what;
    this.log(`saved ${name}.json: ${what}`);
  }

  /** A non-JSON or non-Serve reply, kept as {status, content_type, body}. */
  saveReply(name: string, what: string, reply: HttpReply | { error: string }): void {
    const doc =
      'error' in reply
        ? { status: null, error: reply.error }
        : { status: reply.status, content_type: reply.contentType, body: reply.body };
    fs.writeFileSync(path.join(this.dir, `${name}.json`), JSON.stringify(doc, null, 2) + '\n');
    this.files[`${name}.json`] = what;
    this.log(`saved ${name}.json: ${what} -> ${'error' in reply ? reply.error : reply.status}`);
  }

  async proxy(name: string, what: string, route: string): Promise<void> {
    try {
      this.saveReply(name, what, await this.ray.request(route, 10_000));
    } catch (e) {
      this.saveReply(name, what, { error: errorCode(e) });
    }
  }

  /**
   * Poll GET /api/serve/applications/ and save the first reply that satisfies `pred`.
   * Transient states (`required: false`) may be missed between two polls; that is noted, not fatal.
   */
  async capture(
    name: string,
    what: string,
    pred: (d: ServeDetailsJson) => boolean,
    opts: { timeoutMs: number; intervalMs?: number; required?: boolean; app?: string },
  ): Promise<boolean> {
    const deadline = Date.now() + opts.timeoutMs;
    let last: ServeDetailsJson | undefined;
    while (Date.now() < deadline) {
      const reply = await this.ray.getApplicationsRaw();
      if (reply.status === 200) {
        last = JSON.parse(reply.body) as ServeDetailsJson;
        if (pred(last)) {
          this.saveServe(name, what, reply);
          return true;
        }
      }
      await sleep(opts.intervalMs ?? 100);
    }
    const seen = opts.app && last ? JSON.stringify(summarizeApp(last.applications[opts.app])) : '';
    if (opts.required !== false) throw new Error(`state for ${name} (${what}) not reached; last: ${seen}`);
    this.missed.push(`${name}.json (${what})`);
    this.log(`MISSED ${name}: ${what}; last: ${seen}`);
    return false;
  }

  /**
   * Like capture() for several states that may show up in any order (or overlap): one poll loop
   * checks every pending target, so a short-lived state is not missed while waiting for another.
   * Returns once every required target was saved; transient ones not seen by then are noted.
   */
  async captureMany(targets: CaptureTarget[], timeoutMs: number, intervalMs = 100): Promise<void> {
    const pending = new Set(targets);
    const deadline = Date.now() + timeoutMs;
    let last: ServeDetailsJson | undefined;
    while ([...pending].some((t) => t.required !== false) && Date.now() < deadline) {
      const reply = await this.ray.getApplicationsRaw();
      if (reply.status === 200) {
        last = JSON.parse(reply.body) as ServeDetailsJson;
        for (const t of [...pending]) {
          if (t.pred(last)) {
            this.saveServe(t.name, t.what, reply);
            pending.delete(t);
          }
        }
      }
      await sleep(intervalMs);
    }
    for (const t of pending) {
      const seen = t.app && last ? JSON.stringify(summarizeApp(last.applications[t.app])) : '';
      if (t.required !== false) throw new Error(`state for ${t.name} (${t.what}) not reached; last: ${seen}`);
      this.missed.push(`${t.name}.json (${t.what})`);
      this.log(`MISSED ${t.name}: ${t.what}; last: ${seen}`);
    }
  }
}

interface CaptureTarget {
  name: string;
  what: string;
  pred: (d: ServeDetailsJson) => boolean;
  required?: boolean;
  app?: string;
}

function errorCode(e: unknown): string {
  const err = e as { code?: string; cause?: { code?: string }; message?: string };
  return err.code ?? err.cause?.code ?? err.message ?? String(e);
}

const app = (d: ServeDetailsJson, name: string): AppJson | undefined => d.applications[name];
const dep = (d: ServeDetailsJson, a: string, n: string): DeploymentJson | undefined => app(d, a)?.deployments?.[n];

async function record(ray: RayCluster, rec: Recorder): Promise<void> {
  const cfg = rayAppConfig;
  const TWO = 'two-step';

  rec.saveReply('ray-version', 'GET /api/ray/version', await ray.dashboardGet('/api/ray/version'));
  rec.saveServe('serve-not-started', 'Serve never started: the empty-schema dict', await ray.getApplicationsRaw());
  await rec.proxy('proxy-healthz-not-started', 'GET /-/healthz before Serve started (no proxy listening)', '/-/healthz');

  // Serve up with no applications: controller and proxy exist, route table empty.
  await ray.deploy({ applications: [] });
  await rec.capture(
    'serve-no-apps',
    'Serve started by deploying an empty application list; proxy known to the controller',
    (d) => Object.keys(d.proxies ?? {}).length > 0 && Object.values(d.proxies ?? {}).every((p) => p.status === 'HEALTHY'),
    { timeoutMs: 90_000, intervalMs: 250 },
  );
  await rec.proxy('proxy-healthz-no-apps', 'GET /-/healthz with Serve running and no app deployed', '/-/healthz');
  await rec.proxy('proxy-routes-no-apps', 'GET /-/routes with Serve running and no app deployed', '/-/routes');

  // Two-deployment app: deploying -> running -> worker scales to zero.
  await ray.deploy(cfg('two-step.yaml'));
  await rec.captureMany(
    [
      {
        name: 'app-deploying',
        what: `${TWO} just deployed: app DEPLOYING, deployments not created yet`,
        pred: (d) => app(d, TWO)?.status === 'DEPLOYING' && Object.keys(app(d, TWO)?.deployments ?? {}).length === 0,
        required: false,
        app: TWO,
      },
      {
        name: 'app-deploying-replicas-starting',
        what: `${TWO} DEPLOYING with deployments UPDATING and replicas not yet RUNNING`,
        pred: (d) =>
          app(d, TWO)?.status === 'DEPLOYING' &&
          Object.values(app(d, TWO)?.deployments ?? {}).some((x) => x.replicas.some((r) => r.state !== 'RUNNING')),
        required: false,
        app: TWO,
      },
      {
        name: 'app-running',
        what: `${TWO} RUNNING, Front and Worker HEALTHY with one RUNNING replica each`,
        pred: (d) =>
          app(d, TWO)?.status === 'RUNNING' &&
          [dep(d, TWO, 'Front'), dep(d, TWO, 'Worker')].every((x) => x?.replicas.some((r) => r.state === 'RUNNING')),
        app: TWO,
      },
    ],
    180_000,
    50,
  );
  await rec.proxy('proxy-healthz-running', `GET /-/healthz with ${TWO} RUNNING`, '/-/healthz');
  await rec.proxy('proxy-routes-running', `GET /-/routes with ${TWO} RUNNING`, '/-/routes');
  await rec.capture(
    'worker-downscaling',
    'Worker DOWNSCALING towards zero (replica STOPPING or target 0 with replicas left)',
    (d) => {
      const w = dep(d, TWO, 'Worker');
      return !!w && (w.status === 'DOWNSCALING' || (w.target_num_replicas === 0 && w.replicas.length > 0));
    },
    { timeoutMs: 60_000, intervalMs: 50, required: false, app: TWO },
  );
  await rec.capture(
    'worker-scaled-to-zero',
    'Worker scaled to zero: HEALTHY/DOWNSCALE_COMPLETED, target 0, replicas []; app still RUNNING',
    (d) => {
      const w = dep(d, TWO, 'Worker');
      return !!w && w.target_num_replicas === 0 && w.replicas.length === 0 && w.status === 'HEALTHY';
    },
    { timeoutMs: 120_000, intervalMs: 250, app: TWO },
  );
  await rec.proxy('proxy-healthz-scaled-to-zero', 'GET /-/healthz with the Worker at zero replicas', '/-/healthz');
  await rec.proxy('proxy-routes-scaled-to-zero', 'GET /-/routes with the Worker at zero replicas', '/-/routes');
  await rec.proxy('proxy-unknown-path', 'GET /no-such-route on the proxy', '/no-such-route');

  // Wake the Worker with a request through Front.
  const wake = ray.request(`/${TWO}?text=wake`, 120_000);
  await rec.capture(
    'worker-upscaling',
    'Worker waking from zero after an HTTP request: UPSCALING, replica STARTING',
    (d) => {
      const w = dep(d, TWO, 'Worker');
      return !!w && (w.status === 'UPSCALING' || w.replicas.some((r) => r.state !== 'RUNNING'));
    },
    { timeoutMs: 30_000, intervalMs: 50, required: false, app: TWO },
  );
  const woke = await wake;
  rec.saveReply('proxy-request-wakes-worker', `GET /${TWO}?text=wake (cold start through Front)`, woke);
  await rec.capture(
    'worker-upscaled',
    'Worker back at one RUNNING replica after the request: HEALTHY/UPSCALE_COMPLETED',
    (d) => {
      const w = dep(d, TWO, 'Worker');
      return !!w && w.status === 'HEALTHY' && w.replicas.length > 0 && w.replicas.every((r) => r.state === 'RUNNING');
    },
    { timeoutMs: 30_000, intervalMs: 100, app: TWO },
  );

  // Failing apps next to the healthy one.
  await ray.deploy(cfg('two-step.yaml', 'bad-import.yaml', 'crash-on-start.yaml', 'turns-sick.yaml'));
  await rec.captureMany(
    [
      {
        name: 'app-crash-retrying',
        what: 'crash-on-start while Serve still retries the failing constructor (app DEPLOYING, deployment message set)',
        pred: (d) => app(d, 'crash-on-start')?.status === 'DEPLOYING' && !!dep(d, 'crash-on-start', 'Crasher')?.message,
        required: false,
        app: 'crash-on-start',
      },
      {
        name: 'app-bad-import-deploy-failed',
        what: 'bad-import: import_path names a missing module -> app DEPLOY_FAILED with traceback message',
        pred: (d) => app(d, 'bad-import')?.status === 'DEPLOY_FAILED',
        app: 'bad-import',
      },
      {
        name: 'app-crash-on-start-failed',
        what: 'crash-on-start: every replica raises in __init__ -> whatever Ray reports once it gives up',
        pred: (d) => {
          const a = app(d, 'crash-on-start');
          return !!a && a.status !== 'DEPLOYING' && a.status !== 'NOT_STARTED';
        },
        app: 'crash-on-start',
      },
      {
        name: 'app-turns-sick-running',
        what: 'turns-sick RUNNING before its health check fails',
        pred: (d) => app(d, 'turns-sick')?.status === 'RUNNING',
        app: 'turns-sick',
      },
    ],
    180_000,
    100,
  );
  rec.saveReply('proxy-request-make-sick', 'GET /turns-sick?fail=1', await ray.request('/turns-sick?fail=1'));
  await rec.capture(
    'app-unhealthy',
    'turns-sick after its replica failed health checks: deployment UNHEALTHY, app UNHEALTHY',
    (d) => dep(d, 'turns-sick', 'Patient')?.status === 'UNHEALTHY',
    { timeoutMs: 60_000, intervalMs: 100, app: 'turns-sick' },
  );
  await rec.capture(
    'app-recovered',
    'turns-sick after Ray replaced the sick replica: HEALTHY again',
    (d) => dep(d, 'turns-sick', 'Patient')?.status === 'HEALTHY' && app(d, 'turns-sick')?.status === 'RUNNING',
    { timeoutMs: 90_000, intervalMs: 250, required: false, app: 'turns-sick' },
  );

  // Delete the healthy app and catch it in DELETING.
  await ray.deleteApp(TWO);
  await rec.capture('app-deleting', `${TWO} removed from the config: app DELETING`, (d) => app(d, TWO)?.status === 'DELETING', {
    timeoutMs: 20_000,
    intervalMs: 50,
    required: false,
    app: TWO,
  });
  await rec.capture('app-deleted', `${TWO} gone, other apps still listed`, (d) => !app(d, TWO), {
    timeoutMs: 60_000,
    intervalMs: 250,
  });

  await ray.deleteAllApps();
  await rec.capture('serve-all-apps-deleted', 'empty application list deployed: Serve up, no apps', (d) => Object.keys(d.applications).length === 0, {
    timeoutMs: 90_000,
    intervalMs: 250,
  });
  await rec.proxy('proxy-healthz-all-apps-deleted', 'GET /-/healthz after every app was deleted', '/-/healthz');

  // A 503 needs the controller call to fail with RayTaskError; killing the controller is the closest
  // thing to a controller failure we can cause. Record whatever non-200 reply appears, if any.
  await ray.deploy(cfg('two-step.yaml'));
  await ray.waitApp(TWO, (a) => a.status === 'RUNNING', 120_000);
  await provokeControllerFailure(ray, rec);

  await ray.shutdownServe();
  await rec.capture('serve-shut-down', 'after DELETE /api/serve/applications/ (serve.shutdown)', (d) => Object.keys(d.applications).length === 0 && !d.controller_info?.actor_id, {
    timeoutMs: 60_000,
    intervalMs: 250,
  });
}

async function provokeControllerFailure(ray: RayCluster, rec: Recorder): Promise<void> {
  const details = await ray.getApplications();
  const pid = findControllerPid(ray);
  if (!pid) {
    rec.notes.push('Serve controller process not found; no controller-failure reply recorded.');
    return;
  }
  rec.log(`killing Serve controller pid ${pid} (${String(details.controller_info?.actor_id)})`);
  process.kill(pid, 'SIGKILL');
  const deadline = Date.now() + 20_000;
  const statuses = new Map<number, number>();
  while (Date.now() < deadline) {
    let reply: HttpReply;
    try {
      reply = await ray.getApplicationsRaw();
    } catch (e) {
      statuses.set(-1, (statuses.get(-1) ?? 0) + 1);
      rec.log(`GET failed while controller down: ${errorCode(e)}`);
      await sleep(50);
      continue;
    }
    statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
    if (reply.status !== 200 && !rec.files['serve-controller-killed-error.json']) {
      rec.saveReply('serve-controller-killed-error', `GET /api/serve/applications/ right after SIGKILL of the Serve controller`, reply);
    }
    await sleep(50);
  }
  const summary = [...statuses].map(([s, n]) => `${s === -1 ? 'error' : s} x${n}`).join(', ');
  rec.notes.push(`After SIGKILL of the Serve controller, 20 s of GET /api/serve/applications/ gave: ${summary}.`);
  if (!rec.files['serve-controller-killed-error.json']) {
    rec.notes.push('No non-200 reply seen: the dashboard waits for the restarted controller, so the 503 text body was not provoked.');
  }
  await ray.waitApp('two-step', (a) => a.status === 'RUNNING', 120_000);
}

function findControllerPid(ray: RayCluster): number | undefined {
  for (const pid of ray.sessionPids()) {
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('ray::ServeController')) return pid;
    } catch {
      /* gone */
    }
  }
  return undefined;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const t0 = Date.now();
  const ray = await startRay({ rayBin: args.rayBin });
  const stopOnSignal = () => {
    void ray.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  const minor = ray.rayVersion.split('.').slice(0, 2).join('.');
  const dir = args.out ?? path.join(repoRoot(), 'test', 'fixtures', 'ray', minor);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const rec = new Recorder(ray, dir);
  rec.log(`Ray ${ray.rayVersion} up in ${ray.startMs} ms (dashboard ${ray.dashboardUrl}); writing to ${dir}`);
  let failure: unknown;
  try {
    await record(ray, rec);
  } catch (e) {
    failure = e;
  } finally {
    await ray.stop();
  }
  const index = {
    ray_version: ray.rayVersion,
    recorded_at: new Date().toISOString(),
    recorded_with: 'node dist/scripts/record-ray-fixtures.js (configs in test/ray-apps)',
    duration_s: Math.round((Date.now() - t0) / 1000),
    files: rec.files,
    missed_transient_states: rec.missed,
    notes: rec.notes,
    ...(failure ? { failed: String(failure) } : {}),
  };
  fs.writeFileSync(path.join(dir, 'index.json'), JSON.stringify(index, null, 2) + '\n');
  rec.log(`done in ${index.duration_s} s; ${Object.keys(rec.files).length} files, missed: ${rec.missed.length}`);
  if (failure) throw failure;
}

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
    process.exit(1);
  });
}
