// The runbooks of the exporter, source and Hypha-service alerts, run as written (docs/runbooks/*.md, steps by
// id) against one real stack: Hypha with its artifact manager, Ray Serve, the exporter (its Hypha token in a
// file, as the runbooks assume), Prometheus with the rules (for: ÷ 10). Each phase puts the stack into an
// alert's state, runs the diagnosis steps and checks what they print, applies the runbook's fix by running
// its step (or, for a Hypha restart, what the reader's restart does) and runs the confirmation steps:
//   a rejected config reload (ConfigReloadFailed) → healthy sources (the readings of SourceStale,
//   CallLatencyHigh, ProbeFailing) → Hypha back under a new server id (ServerIdUnstable, CachedProxyStale,
//   CachedProbeFailing, ClientIdChurn) → Hypha back with a new JWT secret (SourceDown, auth_secret_changed)
//   → the exporter stopped (ExporterDown).
// The stuck sampler of SourceStale, a slow artifact manager and one without provider cannot be produced
// from outside the processes: those runbooks' steps run against the healthy state and show its reading.
import fs from 'node:fs';
import path from 'node:path';
import { STATE_FILE } from '../../src/snapshot/persisted';
import { workspaceToken } from '../harness/hypha-registrant';
import { waitFor } from '../harness/proc';
import { exporterConfig, Stack, startStack } from '../harness/stack';
import { ensureBuilt } from '../helpers/cli';
import { runStep, StepEnv } from '../helpers/runbook-step';
import { tmpDir } from '../helpers/tmp';

jest.setTimeout(600_000);

const WS = 'ws-user-root';
const AM = 'public/artifact-manager';
const OPTS = { sampleInterval: '1s', sampleTimeout: '3s', canaryWitnessMax: '20s' } as const;

describe('runbooks of the exporter, source and Hypha-service alerts, run against the real stack', () => {
  let stack: Stack;
  const tmp = tmpDir('hse-runbooks-hypha-');
  let env: StepEnv;
  let tokenFile: string;
  let goodConfig: string;
  let startedPid: number | undefined;
  const svc = { service: AM, hypha: 'local', cluster: 'local' };

  const value = async (expr: string) => (await stack.prometheus.vector(expr))[0]?.value[1];
  const values = (r: { queries: Array<{ series: Array<{ value: string }> }> }) => r.queries.map((q) => q.series.map((s) => s.value));
  const amProvider = async () => {
    const ids = (await (await fetch(`${stack.hypha.url}/public/services/`)).json() as Array<{ id: string }>).map((s) => s.id);
    return ids.find((id) => id.endsWith(':artifact-manager'));
  };

  beforeAll(async () => {
    ensureBuilt();
    stack = await startStack({ forDivisor: 10, ...OPTS, scrapeInterval: '1s', evaluationInterval: '1s', hyphaServerId: 'rb-a' });
    tokenFile = tmp.write('hypha-token', await workspaceToken(stack.hypha.url, stack.hypha.rootToken, WS, 'read'));
    fs.chmodSync(tokenFile, 0o600);
    goodConfig = exporterConfig(OPTS, stack.hypha, stack.ray).replace('bearer_token_env: HYPHA_TOKEN', `workspace: ${WS}\n  bearer_token_file: "${tokenFile}"`);
    env = {
      cwd: tmp.dir, prometheusUrl: stack.prometheus.url,
      vars: {
        RAY: stack.ray.dashboardUrl, HYPHA: stack.hypha.url, WS, EXPORTER: stack.exporterUrl, PROMETHEUS: stack.prometheus.url,
        HYPHA_TOKEN: stack.hypha.rootToken, HYPHA_ADMIN_TOKEN: stack.hypha.rootToken, CONFIG: stack.exporterConfigFile, STATE: stack.exporterStoragePath,
      },
    };
  });

  afterAll(async () => {
    if (startedPid !== undefined) try { process.kill(startedPid, 'SIGTERM'); } catch { /* gone */ }
    await stack?.stop();
    tmp.cleanup();
  });

  test('HyphaServeExporterConfigReloadFailed: a bad file is rejected; corrected, reloaded, confirmed', async () => {
    fs.writeFileSync(stack.exporterConfigFile, goodConfig.replace('interval: 1s', 'interval: 5'));
    const rejected = await runStep('hyphaserveexporterconfigreloadfailed-reload', env);
    expect(rejected.stdout).toMatch(/global\.interval/);
    const check = await runStep('hyphaserveexporterconfigreloadfailed-check', env);
    expect(check.code).toBe(2);
    expect(check.stderr).toMatch(/exporter\.yml:\d+:\d+: global\.interval/);
    await waitFor('reload failure scraped', async () => (await value('hypha_serve_exporter_config_last_reload_successful')) === '0', 60_000, 500);
    const series = await runStep('hyphaserveexporterconfigreloadfailed-promql', env);
    expect(values(series)[0]).toEqual(['0']);

    // The fix: the corrected file (the token now from a file, as the runbooks assume), reloaded the same way.
    fs.writeFileSync(stack.exporterConfigFile, goodConfig);
    const t0 = Date.now() / 1000;
    const ok = await runStep('hyphaserveexporterconfigreloadfailed-reload', env);
    expect(ok.stdout.trim()).toMatch(/^Reloaded\.\s*HTTP reload done: exit 0$/);
    await waitFor('reload success scraped', async () => (await value('hypha_serve_exporter_config_last_reload_successful')) === '1', 60_000, 500);
    const fix = await runStep('hyphaserveexporterconfigreloadfailed-confirm-fix', env);
    expect(values(fix)[0]).toEqual(['1']);
    expect(Number(values(fix)[1][0])).toBeLessThan(Date.now() / 1000 - t0 + 5);
    await waitFor('sources up with the file token', async () => (await value('min(hypha_serve_source_up)')) === '1', 120_000, 500);
  });

  test('healthy sources: the readings the SourceStale, CallLatencyHigh and ProbeFailing runbooks compare against', async () => {
    const stale = await runStep('hyphaservesourcestale-check', env);
    expect(stale.stdout).toMatch(/\bup +hypha\/local/);
    expect(values(await runStep('hyphaservesourcestale-promql', env))[0]).toEqual([]);
    const staleSh = await runStep('hyphaservesourcestale-sh', env);
    expect(staleSh.stdout).toMatch(/^hypha_serve_source_up\{[^}]*source="hypha"[^}]*\} 1$/m);
    expect(staleSh.stdout).toMatch(/^hypha_serve_source_sample_age_seconds\{/m);
    expect(values(await runStep('hyphaservesourcestale-confirm-fix', env))[0]).toEqual([]);

    expect((await runStep('hyphaservicecalllatencyhigh-check', env)).stdout).toContain(AM);
    expect((await runStep('hyphaservicecalllatencyhigh-promql', env, svc)).queries).toHaveLength(2);
    const timed = await runStep('hyphaservicecalllatencyhigh-sh', env, { ws: WS, collection: 'rb-no-such-collection' });
    expect(timed.stderr).toMatch(/real\s+0m0\.\d+s/);
    expect(timed.stdout.length).toBeGreaterThan(0);
    const p90 = await runStep('hyphaservicecalllatencyhigh-confirm-fix', env, svc);
    expect(Number(p90.queries[0].series[0]?.value ?? '0')).toBeLessThan(1);

    expect((await runStep('hyphaserviceprobefailing-check', env)).stdout).toContain(AM);
    expect(values(await runStep('hyphaserviceprobefailing-promql', env, svc))[0]).toEqual(['1']);
    const probe = await runStep('hyphaserviceprobefailing-sh', env);
    expect(probe.stdout).toMatch(/^rb-a:artifact-manager$/m);
    expect(probe.stdout).toMatch(/^200$/m);
    const pfix = await runStep('hyphaserviceprobefailing-confirm-fix', env, svc);
    expect(values(pfix)[0]).toEqual(['1']);
    expect(values(pfix)[1]).toEqual(['1', '1']);
  });

  test('incident 2: Hypha back under a new server id → ServerIdUnstable, CachedProxyStale, CachedProbeFailing, ClientIdChurn; fixed id, confirmed', async () => {
    expect((await runStep('check-service-js', env)).stdout).toBe('wrote check-service.js');
    await stack.hypha.restart({ serverId: undefined });
    const provider = await waitFor('artifact manager back', amProvider, 120_000, 500);
    const newId = provider.split(':')[0];
    expect(newId).not.toBe('rb-a');
    await waitFor('server id change and stale canary scraped', async () => (await value('hypha_serve_hypha_server_id_changed')) === '1'
      && (await value(`hypha_serve_service_cached_stale{service="${AM}"}`)) === '1', 120_000, 500);
    // `check --storage.path` continues the running exporter's witness from its state file, which is written
    // 2 s after a change (debounced): the step shows STALE once the witness is on disk, as for a reader.
    await waitFor('stale witness in the state file', async () => {
      try {
        const saved = JSON.parse(fs.readFileSync(path.join(stack.exporterStoragePath, STATE_FILE), 'utf8')) as { witnesses?: Record<string, unknown> };
        return saved.witnesses !== undefined && AM in saved.witnesses;
      } catch {
        return false;
      }
    }, 30_000, 250);

    const sid = await runStep('hyphaserveserveridunstable-check', env);
    expect(sid.stdout).toMatch(/STALE/);
    const sidSeries = await runStep('hyphaserveserveridunstable-promql', env, svc);
    expect(values(sidSeries)[0]).toEqual(['1']);
    expect(sidSeries.queries[1].series.map((s) => s.metric.server_id)).toEqual([newId]);
    expect((await runStep('hyphaserveserveridunstable-server-id', env)).stdout.trim()).toBe(`${newId}:artifact-manager`);

    const stale = await runStep('hyphaservicecachedproxystale-check', env);
    expect(stale.code).toBe(1);
    expect(stale.stdout).toContain('HyphaServiceCachedProxyStale');
    const staleSeries = await runStep('hyphaservicecachedproxystale-promql', env);
    expect(values(staleSeries)[0]).toEqual(['1']);
    expect(staleSeries.queries[2].series.map((s) => s.metric.client_id)).toContain(newId);
    const fresh = await runStep('hyphaservicecachedproxystale-sh', env);
    expect(fresh.code).toBe(0);
    expect(fresh.stdout).toMatch(new RegExp(`^${newId}:artifact-manager$`, 'm'));
    expect(fresh.stdout).toMatch(/artifact-manager/);

    // The cached path fails only until the canary re-resolves (witness_max 20 s): the step is run while it
    // holds, and shows it.
    const probe = await waitFor('cached probe fails, fresh one works (the promql step)', async () => {
      const r = await runStep('hyphaservicecachedprobefailing-promql', env, svc);
      const via = Object.fromEntries(r.queries[0].series.map((s) => [s.metric.via, s.value]));
      return via.cached === '0' && via.fresh === '1' ? r : undefined;
    }, 120_000, 500);
    expect(Object.fromEntries(probe.queries[0].series.map((s) => [s.metric.via, s.value]))).toEqual({ cached: '0', fresh: '1' });
    expect(probe.queries[1].series.length).toBeGreaterThan(0);
    expect((await runStep('hyphaservicecachedprobefailing-check', env)).stdout).toContain(AM);

    expect((await runStep('hyphaserviceclientidchurn-check', env)).stdout).toContain(AM);
    const churn = await runStep('hyphaserviceclientidchurn-promql', env, svc);
    expect(Number(values(churn)[0][0])).toBeGreaterThan(0);
    expect((await runStep('hyphaserviceclientidchurn-providers', env)).stdout.trim()).toBe(`${newId}:artifact-manager`);

    // The fix: the server keeps its id across the next restart (what --server-id / HYPHA_SERVER_ID does).
    await stack.hypha.restart({ serverId: newId });
    await waitFor('server id unchanged after the restart', async () => (await value('hypha_serve_hypha_server_id_changed')) === '0', 120_000, 500);
    const sidFix = await runStep('hyphaserveserveridunstable-confirm-fix', env, svc);
    expect(values(sidFix)[0]).toEqual(['0']);
    expect(sidFix.queries[1].series.map((s) => s.metric.server_id)).toEqual([newId]);
    // The canary, the witness of the clients that resolved before the change, resolves anew after witness_max.
    await waitFor('canary fresh again', async () => (await value(`hypha_serve_service_cached_stale{service="${AM}"}`)) === '0'
      && (await value(`hypha_serve_service_probe_success{service="${AM}", via="cached"}`)) === '1', 180_000, 500);
    expect(values(await runStep('hyphaservicecachedproxystale-confirm-fix', env))).toEqual([[], ['1']]);
    const probeFix = await runStep('hyphaservicecachedprobefailing-confirm-fix', env, svc);
    expect(values(probeFix)[0]).toEqual(['1', '1']);
    await waitFor('no provider change for 15 s', async () => (await value(`increase(hypha_serve_service_client_id_changes_total{service="${AM}"}[15s])`)) === '0', 120_000, 1000);
    const churnFix = await runStep('hyphaserviceclientidchurn-confirm-fix', env, { ...svc, window: '15s' });
    expect(Number(values(churnFix)[0][0])).toBeLessThan(5);
    expect(values(churnFix)[1]).toEqual([]);
  });

  test('HyphaServeSourceDown: Hypha back with a new JWT secret (auth_secret_changed); a new token in the file, confirmed', async () => {
    await stack.hypha.restart({ jwtSecret: 'runbooks-new-secret-0123456789abcdef' });
    await waitFor('Hypha source down, scraped', async () => (await value('hypha_serve_source_up{source="hypha"}')) === '0', 120_000, 500);
    // Down at once while Hypha restarts (connect); the refusal of the old token by the new server follows
    // at the exporter's next connect attempt after its backoff.
    await waitFor('auth_secret_changed counted, scraped', async () => Number(await value(
      'hypha_serve_source_errors_total{source="hypha", reason="auth_secret_changed"}')) > 0, 180_000, 1000);
    const check = await runStep('hyphaservesourcedown-check', env);
    expect(check.code).toBe(2);
    expect(check.stdout).toMatch(/DOWN +hypha\/local/);
    const series = await runStep('hyphaservesourcedown-promql', env);
    expect(series.queries[0].series.map((s) => s.metric.source)).toContain('hypha');
    const sh = await runStep('hyphaservesourcedown-sh', env);
    expect(sh.stdout).toMatch(/^hypha_serve_source_up\{[^}]*source="hypha"[^}]*\} 0$/m);
    expect(sh.stdout).toMatch(/^hypha_serve_source_errors_total\{[^}]*reason="auth_secret_changed"[^}]*\} [1-9]/m);
    expect(sh.stdout).toMatch(/^200 /m);
    const changed = await runStep('jwt-secret-changed', env);
    expect(changed.stdout).toContain('"last_error_reason": "auth_secret_changed"');
    // The harness runs Hypha with HYPHA_JWT_SECRET set (and changed it for this restart): 1 variable.
    expect((await runStep('jwt-secret-env', env, { 'hypha-pid': String(stack.hypha.pid()) })).stdout.trim()).toBe('1');
    // At Hypha's default log level (the harness runs WARNING) the INFO line is never in the log.
    const log = tmp.write('hypha-server.log', stack.hypha.output());
    expect((await runStep('jwt-secret-log', env, { 'hypha server log': log })).stdout.trim()).toBe('0');

    const mint = await runStep('jwt-mint-token', env, { 'token-file': tokenFile });
    expect(mint.code).toBe(0);
    await waitFor('sources up with the new token', async () => (await value('min(hypha_serve_source_up)')) === '1', 120_000, 500);
    expect(values(await runStep('hyphaservesourcedown-confirm-fix', env))).toEqual([[], ['1']]);
    const ok = await runStep('hyphaservesourcedown-confirm-fix-check', env);
    expect(ok.stdout).toMatch(/^exit 0$/m);
    expect(ok.stdout).toMatch(/\bup +hypha\/local/);
  });

  test('HyphaServeExporterDown: the exporter stopped; started by hand as the runbook says, confirmed', async () => {
    await stack.exporter.stop();
    await waitFor('scrape failing', async () => (await value('up{job=~"hypha-serve-exporter.*"}')) === '0', 60_000, 500);
    const check = await runStep('hyphaserveexporterdown-check', env);
    expect(check.stdout).toMatch(/\bup +hypha\/local/);
    expect(values(await runStep('hyphaserveexporterdown-promql', env))).toEqual([['0']]);
    const sh = await runStep('hyphaserveexporterdown-sh', env);
    expect(sh.stdout.trim()).toBe('000');
    const started = await runStep('hyphaserveexporterdown-start', env, { 'listen-address': new URL(stack.exporterUrl).host });
    startedPid = Number(/^started pid (\d+)$/m.exec(started.stdout)?.[1]);
    expect(startedPid).toBeGreaterThan(0);
    await waitFor('scraped again', async () => (await value('up{job=~"hypha-serve-exporter.*"}')) === '1', 120_000, 500);
    expect(values(await runStep('hyphaserveexporterdown-confirm-fix', env))).toEqual([['1']]);
    expect((await runStep('hyphaserveexporterdown-sh', env)).stdout).toMatch(/^200\n# HELP /);
  });
});
