// Incident 1's cause on vmalert at a state change (issue 25): vmalert on a single-node VictoriaMetrics evaluates
// the shipped rules every second over a static exposition of five apps that turn from registered to
// missing_scaled_to_zero (proven stuck) at the same moment; through Alertmanager with the example routing, each
// app's first page must name that cause. While a cause record held only the causes, the new state's series was
// a new series in VictoriaMetrics, not yet readable at the page's first evaluation: the first notifications said
// "unknown" (0 and 2 of 5 right in two runs of this scenario, 2026-12-04). Since metric contract v0.4 the page and
// its cause are scraped series, the exporter's decision and hypha_serve_app_not_registered_cause_info, read by the
// alert and its annotations with no recorded level in between (docs/engines.md).
// The end-to-end replay checks the same on the real stack; this makes the race likely.
import http from 'node:http';
import path from 'node:path';
import { EngineChain, EXPORTER_JOB, startEngineChain } from '../harness/alert-path';
import { requireEngine } from '../harness/engines';
import { artifactsDir, waitFor } from '../harness/proc';
import { CAUSE_TEXT, REGISTRATION_STATES } from '../../src/snapshot/registration';

jest.setTimeout(300_000);

const APPS = ['a0', 'a1', 'a2', 'a3', 'a4'];

/** What the exporter serves for APPS, RUNNING, in `state` (explicit zeros, as the exporter does). */
function exposition(state: 'registered' | 'missing_scaled_to_zero', sinceS: number): string {
  const out = [`hypha_serve_source_up{source="ray",ray_cluster="kth"} 1`, `hypha_serve_source_up{source="hypha",hypha="main"} 1`];
  for (const a of APPS) {
    const app = `ray_cluster="kth",app="${a}"`;
    out.push(`hypha_serve_app_status{${app},status="RUNNING"} 1`, `hypha_serve_app_status{${app},status="DEPLOYING"} 0`);
    for (const s of REGISTRATION_STATES) out.push(`hypha_serve_app_registration_state{${app},hypha="main",state="${s}"} ${s === state ? 1 : 0}`);
    out.push(`hypha_serve_app_registration_stuck{${app},hypha="main"} ${state === 'registered' ? 0 : 1}`);
    if (state !== 'registered') out.push(`hypha_serve_app_unregistered_since_timestamp_seconds{${app},hypha="main"} ${sinceS}`);
    out.push(`hypha_serve_app_expected_service_info{${app},hypha="main",workspace="ws",service="ws/w-${a}:${a}"} 1`);
    // The exporter's decision and its cause (contract v0.4): proven final, so it pages at once.
    out.push(`hypha_serve_app_running_not_registered_page{${app},hypha="main"} ${state === 'registered' ? 0 : 1}`);
    if (state !== 'registered') {
      out.push(`hypha_serve_app_not_registered_cause_info{${app},hypha="main",cause="${state}",reason="${CAUSE_TEXT[state]}",gate="deregisters_at_zero",proven="true",service="ws/w-${a}:${a}"} 1`);
    }
  }
  return `${out.join('\n')}\n`;
}

describe('vmalert names the cause in the first page after a state change', () => {
  let server: http.Server;
  let chain: EngineChain | undefined;
  let body = exposition('registered', 0);

  beforeAll(async () => {
    server = http.createServer((_req, res) => res.end(body));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  });
  afterAll(async () => {
    await chain?.stop();
    await new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });
  });

  it('five apps turn missing_scaled_to_zero at once: every first notification says missing_scaled_to_zero', async () => {
    if (!requireEngine('victoriametrics', 'the vmalert cause test')) return;
    const addr = server.address();
    if (addr === null || typeof addr === 'string') throw new Error('no address');
    chain = await startEngineChain('victoriametrics', {
      exporterTargets: [`127.0.0.1:${addr.port}`], forDivisor: 1, scrapeInterval: '1s', evaluationInterval: '1s',
      pagesLog: path.join(artifactsDir(), `pages-vmalert-cause-${Date.now()}.log`),
    });
    // Every app scraped for a while as registered (no cause_info series, the decision 0), so what the flip adds is
    // the cause_info series and a changed value of the decision.
    await waitFor('the registered apps scraped', async () =>
      (await chain!.vector(`hypha_serve_app_running_not_registered_page{job="${EXPORTER_JOB}"} == 0 unless on (ray_cluster, app, hypha) hypha_serve_app_not_registered_cause_info{job="${EXPORTER_JOB}"}`)).length === APPS.length,
    120_000, 1000);
    const flip = Date.now();
    body = exposition('missing_scaled_to_zero', Math.floor(flip / 1000));
    const first = await waitFor('a page for every app', async () => {
      const seen = new Map<string, string>();
      for (const p of chain!.receiver.pages) {
        if (p.receivedAt < flip) continue;
        for (const a of p.alerts) {
          if (a.status === 'firing' && a.labels.alertname === 'HyphaServeAppRunningNotRegistered' && !seen.has(a.labels.app)) seen.set(a.labels.app, a.annotations.cause);
        }
      }
      return seen.size === APPS.length ? seen : undefined;
    }, 180_000, 250);
    expect(Object.fromEntries([...first].sort())).toEqual(Object.fromEntries(APPS.map((a) => [a, 'missing_scaled_to_zero'])));
  });
});
