// The operator status page in Debian's Chromium (driven by playwright-core)
// against the exporter attached to a real Ray Serve 2.60 cluster and a real
// Hypha server with its artifact manager: an app that scales to zero and wakes
// up, two DEPLOY_FAILED apps (one named and failing with an HTML payload), a
// BioEngine-like app whose proxy deregisters it at zero (the first incident),
// Hypha restarting under a new artifact-manager client id (the second), then
// the Ray dashboard going away.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrowserContext, chromium, Page } from 'playwright-core';
import type { Exporter } from '../../src/exporter/exporter';
import type { StatusV1 } from '../../src/status-page/model';
import { exporterWithConfig, InProcessExporter } from '../helpers/exporter';
import { tmpDir } from '../helpers/tmp';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { bioengineClientId, startWorkerStandIn, WorkerStandIn } from '../harness/hypha-registrant';
import { artifactsDir, waitFor, startTogether } from '../harness/proc';
import { RayCluster, rayAppConfig, ServeAppConfig, startRay } from '../harness/ray';


// The page.evaluate callbacks run in Chromium. This program has no DOM typings (the server code it
// shares a tsconfig with must not see them), so the browser globals those callbacks touch are declared
// here, loosely: what they return is checked by the assertions, not by the compiler.
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const window: any;
declare function getComputedStyle(e: unknown, pseudo?: string): any;
type HTMLElement = any;

jest.setTimeout(600_000);

const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
const XSS = '<img src=x onerror=alert(1)>';
const AM = 'public/artifact-manager';
const PREFIX = 'wk-page-test';
const BUGGY = 'be-buggy';

describe('status page in a real browser against real Ray Serve', () => {
  let ray: RayCluster;
  let hypha: HyphaHandle;
  let worker: WorkerStandIn;
  let tokenFile: string;
  let exporter: Exporter;
  let logLines: string[];
  const tmp = tmpDir();
  let h: InProcessExporter | undefined;
  let base: string;
  let ctx: BrowserContext;
  let page: Page;
  let profileDir: string;
  const dialogs: string[] = [];
  const pageErrors: string[] = [];
  const cspViolations: string[] = [];

  const api = async (): Promise<StatusV1> => (await (await fetch(`${base}/api/v1/status`)).json()) as StatusV1;
  const app = (s: StatusV1, name: string) => s.apps.find((a) => a.app === name);
  /** Text of the visible rows of the apps table, one string per row. */
  const visibleAppRows = (): Promise<string[]> =>
    page.$$eval('#apps tbody tr', (rows) => rows.filter((r) => !(r as HTMLElement).hidden).map((r) => (r as HTMLElement).innerText.replace(/\s+/g, ' ').trim()));
  const refreshes = async (): Promise<number> => Number(await page.getAttribute('body', 'data-refreshes'));
  /**
   * The visible rows once they satisfy `ok`, or the last read after 10 s. Right after a navigation on CI's
   * shared cores a read once saw a row's text without its cell separators (its textContent, as for a row
   * not laid out yet); a second read a moment later is the page as a person sees it.
   */
  const appRowsOnceShown = async (ok: (rows: string[]) => boolean): Promise<string[]> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const rows = await visibleAppRows();
      if (ok(rows) || Date.now() > deadline) return rows;
      await page.waitForTimeout(200);
    }
  };

  beforeAll(async () => {
    const t0 = Date.now();
    [ray, hypha] = await startTogether([startRay(), startHypha({ enableS3: true })]);
    process.stdout.write(`Ray ${ray.rayVersion} and Hypha (moto S3) up in ${Date.now() - t0} ms\n`);
    tokenFile = tmp.write('hypha-token', hypha.rootToken);
    fs.chmodSync(tokenFile, 0o600);
    // What a BioEngine worker says about its app: deployed_by_worker_client_id names the proxies' prefix.
    worker = await startWorkerStandIn({
      serverUrl: hypha.url, token: hypha.rootToken, clientId: PREFIX,
      apps: { [BUGGY]: { status: 'RUNNING', service_registered: false, deployed_by_worker_client_id: PREFIX } },
    });
    // The canary is never re-resolved here, so a stale one stays visible. The page expects no Ray sampling
    // error while healthy: on CI's shared cores the Ray dashboard left a 5 s deadline unanswered while it
    // deployed the apps, so Ray gets 20 s (a stopped Ray is refused at once).
    const file = tmp.write('config.yml', `
global: {interval: 2s, timeout: 3s}
ray_clusters:
  - name: test
    dashboard_url: ${ray.dashboardUrl}
    interval: 500ms
    timeout: 20s
hypha:
  name: test-hypha
  server_url: ${hypha.url}
  bearer_token_env: PAGE_TEST_TOKEN
watched_services:
  - service: ${AM}
    interval: 1s
    timeout: 3s
    canary:
      reresolve_after: never
`);
    h = exporterWithConfig({ file }, { logLevel: 'info', env: { PAGE_TEST_TOKEN: hypha.rootToken } });
    logLines = h.lines;
    exporter = h.exporter;
    exporter.start();
    base = (await h.serve()).url;
    profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'status-page-chromium-'));
    const tb = Date.now();
    // A persistent context is how Playwright takes a user-data-dir: a fresh one per run.
    ctx = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
      timezoneId: 'UTC',
    });
    process.stdout.write(`chromium ${ctx.browser()?.version() ?? ''} up in ${Date.now() - tb} ms\n`);
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
    });
  });

  afterAll(async () => {
    await ctx?.close();
    if (profileDir) fs.rmSync(profileDir, { recursive: true, force: true });
    await h?.close();
    await worker?.disconnect().catch(() => undefined);
    tmp.cleanup();
    await Promise.all([ray?.stop(), hypha?.stop()]);
  });

  /** The BioEngine-like app with the proxy that deregisters it when Model is idle at zero (the first incident). */
  function buggyApp(): ServeAppConfig {
    const base = rayAppConfig('bioengine-like.yaml').applications[0];
    const deployments = (base.deployments ?? []).map((d) => d.name === 'ProxyDeployment'
      ? { ...d, user_config: { behaviour: 'buggy_deregister_at_zero', server_url: hypha.url, token_file: tokenFile, client_id_prefix: PREFIX } }
      // Long enough at one replica for the registration to be seen before it goes.
      : { ...d, autoscaling_config: { ...(d.autoscaling_config as Record<string, unknown>), downscale_delay_s: 30, downscale_to_zero_delay_s: 30 } });
    return { ...base, name: BUGGY, route_prefix: `/${BUGGY}`, deployments };
  }

  it('lists the apps with Serve state and Hypha registration, problems first, scaled-to-zero shown as such', async () => {
    const xssApp = { name: XSS, route_prefix: '/xss', import_path: `no_such_module_${XSS}:app` };
    await ray.deploy({ applications: [...rayAppConfig('two-step.yaml', 'bad-import.yaml').applications, xssApp, buggyApp()] });
    const buggyId = `ws-user-root/${bioengineClientId(PREFIX, BUGGY)}:${BUGGY}`;
    const tr = Date.now();
    await waitFor(`${BUGGY} registered`, async () => app(await api(), BUGGY)?.registration?.state === 'registered', 240_000, 250);
    process.stdout.write(`deploy → ${BUGGY} registered on the status API: ${Date.now() - tr} ms\n`);
    const t0 = Date.now();
    await waitFor('two-step RUNNING with Worker at zero, both failed apps DEPLOY_FAILED', async () => {
      const s = await api();
      const w = app(s, 'two-step')?.deployments.find((d) => d.name === 'Worker');
      const am = s.watched_services.find((x) => x.service === AM);
      // Each condition by name: a timeout says which ones were still unmet (thrown, so waitFor reports it).
      const unmet = Object.entries({
        'two-step RUNNING': app(s, 'two-step')?.status === 'RUNNING',
        'Worker HEALTHY at zero': w?.scaled_to_zero === true && w.status === 'HEALTHY',
        'bad-import DEPLOY_FAILED': app(s, 'bad-import')?.status === 'DEPLOY_FAILED',
        'xss app DEPLOY_FAILED': app(s, XSS)?.status === 'DEPLOY_FAILED',
        'two successful probes, one cached': am?.probes.length === 2 && am.probes.every((p) => p.success) && am.cached.length === 1,
        [`${BUGGY} missing_scaled_to_zero (is ${app(s, BUGGY)?.registration?.state ?? 'absent'})`]: app(s, BUGGY)?.registration?.state === 'missing_scaled_to_zero',
        [`${BUGGY} worker view`]: app(s, BUGGY)?.worker_view !== undefined,
        [`${BUGGY} Model HEALTHY`]: app(s, BUGGY)?.deployments.find((d) => d.name === 'Model')?.status === 'HEALTHY',
      }).filter(([, ok]) => !ok).map(([k]) => k);
      if (unmet.length > 0) throw new Error(`unmet: ${unmet.join('; ')}`);
      return true;
    }, 240_000, 500);
    process.stdout.write(`deploy → page state reached: ${Date.now() - t0} ms\n`);

    await page.goto(`${base}/`);
    await page.waitForSelector('body[data-refreshes]');
    const rows = await visibleAppRows();
    expect(rows).toHaveLength(4);
    // Problems first (then by name): the two DEPLOY_FAILED apps and the RUNNING app missing from Hypha above the healthy one.
    expect(rows[0]).toMatch(/DEPLOY_FAILED/);
    expect(rows[1]).toMatch(/^test bad-import .*DEPLOY_FAILED/);
    expect(rows[2]).toMatch(new RegExp(`^test ${BUGGY} /${BUGGY} RUNNING`));
    expect(rows[3]).toMatch(/^test two-step \/two-step RUNNING/);
    expect(rows[3]).toMatch(/Worker HEALTHY running 0\/0 · min 0 max 2 scaled to zero/);
    expect(rows[3]).toMatch(/Front HEALTHY running 1\/1 · min 1 max 1/);
    expect(await page.locator('#apps tbody tr.sev-critical').count()).toBe(3);
    expect(await page.locator('#apps tbody tr.sev-ok').count()).toBe(1);

    // The first incident on the page: Serve RUNNING (green badge) in a red row, with the registration state and its cause.
    const buggy = page.locator('#apps tbody tr').filter({ hasText: BUGGY });
    const cell = async (label: string) => (await buggy.locator(`td[data-label="${label}"]`).innerText()).replace(/\s+/g, ' ').trim();
    expect(await buggy.getAttribute('class')).toBe('sev-critical');
    expect(await buggy.locator('td[data-label="Serve status"] .badge').first().getAttribute('class')).toBe('badge ok');
    expect(await cell('Deployments')).toMatch(/Model HEALTHY running 0\/0 · min 0 max 1 scaled to zero/);
    expect(await cell('Hypha service')).toBe(`${buggyId} on test-hypha`);
    // The gate its proxy runs: seen deregistering at zero (evidence outranks the worker's version).
    expect(await cell('Registration')).toBe('missing_scaled_to_zero not in Hypha while every deployment is idle at zero replicas: deregistered for being scaled to zero '
      + '(at zero: Model) gate deregisters_at_zero (seen doing so; BioEngine 0.16.1)');
    expect(await cell('Missing since')).toMatch(/^(just now|\d+ s ago) \(\d\d:\d\d:\d\d UTC\)$/);
    expect(await cell("Worker's view")).toBe(`${worker.serviceId} up app RUNNING · says not registered`);
    // Apps without a ProxyDeployment are not expected in Hypha.
    expect((await page.locator('#apps tbody tr').filter({ hasText: 'two-step' }).locator('td[data-label="Registration"]').innerText()).trim()).toBe('not expected in Hypha');

    const problems = await page.locator('#problems li').allInnerTexts();
    expect(problems).toEqual(expect.arrayContaining([
      expect.stringMatching(/^critical test\/bad-import Serve status DEPLOY_FAILED/),
      expect.stringMatching(new RegExp(`^critical test/${BUGGY} registration missing_scaled_to_zero: not in Hypha`)),
    ]));
    expect(await page.locator('#summary').innerText()).toMatch(/3 problems · 4 apps · sources 3 up, 0 down/);

    const sources = (await page.locator('#sources > .body > table tbody tr').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
    // Watched services report as source "hypha_service" with the service id as target.
    expect(sources).toEqual([
      expect.stringMatching(/^hypha test-hypha up (just now|\d+ s ago) \(\d\d:\d\d:\d\d UTC\)/),
      expect.stringMatching(/^hypha_service public\/artifact-manager up (just now|\d+ s ago) \(\d\d:\d\d:\d\d UTC\)/),
      expect.stringMatching(/^ray test up (just now|\d+ s ago) \(\d\d:\d\d:\d\d UTC\) \d+ ms none 0$/),
    ]);

    // Steady state of the watched artifact manager: one provider, resolved = cached, both probes ok.
    const am = (await api()).watched_services[0];
    const provider = am.provider_client_ids[0];
    expect(am).toMatchObject({ severity: 'ok', providers: 1, resolved_client_id: provider, cached: [{ holder: 'exporter', client_id: provider, stale: false }] });
    const svcRow = (await page.locator('#services tbody tr').innerText()).replace(/\s+/g, ' ');
    expect(svcRow).toContain(`public/artifact-manager 1 live ${provider} ${provider} exporter ${provider} current`);
    expect(svcRow).toMatch(/cached ok \d+ ms list\(\)/);
    expect(svcRow).toMatch(/fresh ok \d+ ms list\(\)/);

    const transitions = (await page.locator('#transitions tbody tr').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
    expect(transitions).toEqual(expect.arrayContaining([
      expect.stringMatching(/app status test\/two-step DEPLOYING → RUNNING/),
      expect.stringMatching(/scale to zero test\/two-step\/Worker running → scaled to zero/),
      expect.stringMatching(/app status test\/bad-import DEPLOYING → DEPLOY_FAILED/),
      expect.stringMatching(new RegExp(`registration test/${BUGGY} registered → missing_scaled_to_zero`)),
    ]));
    // Times are shown relative with the absolute time beside them.
    expect(transitions[0]).toMatch(/(just now|ago) \(\d\d:\d\d:\d\d UTC\)/);

    await page.screenshot({ path: path.join(artifactsDir(), 'status-page-laptop.png'), fullPage: true });
  });

  it('renders an app name and a message carrying HTML as text; no script runs', async () => {
    const nameCell = page.locator('#apps tbody tr').filter({ hasText: XSS }).locator('td[data-label="App"] strong');
    expect(await nameCell.textContent()).toBe(XSS);
    // The message is Serve's own traceback, which quotes the module name with the payload in it.
    const s = await api();
    expect(app(s, XSS)?.message).toContain(`No module named 'no_such_module_${XSS}'`);
    const row = page.locator('#apps tbody tr').filter({ hasText: XSS });
    await row.locator('details summary').click();
    expect(await row.locator('details pre').textContent()).toContain(`No module named 'no_such_module_${XSS}'`);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.locator('#problems li').filter({ hasText: XSS }).count()).toBe(1);

    // Even HTML injected by a bug could not run script: the page's CSP blocks inline handlers.
    await page.evaluate(() => {
      const d = document.createElement('div');
      d.id = 'csp-probe';
      d.innerHTML = '<img src="data:," onerror="window.__ran = 1"><img src=x onerror=alert(2)>';
      document.body.appendChild(d);
    });
    await page.waitForTimeout(500);
    expect(await page.evaluate(() => (window as unknown as { __ran?: number }).__ran)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(cspViolations.length).toBeGreaterThan(0);
    await page.evaluate(() => document.getElementById('csp-probe')?.remove());
    expect(pageErrors).toEqual([]);
  });

  it('the filter narrows every section; auto-refresh and a reload keep it while the data moves', async () => {
    await page.goto(`${base}/?refresh=1`);
    await page.waitForSelector('body[data-refreshes]');
    await page.fill('#filter', 'two-step');
    const oneRow = (rows: string[]) => rows.length === 1 && /^test two-step/.test(rows[0]);
    expect(await appRowsOnceShown(oneRow)).toEqual([expect.stringMatching(/^test two-step/)]);
    expect(await page.locator('#apps h2 .count').textContent()).toBe(' (1 of 4 shown)');
    expect(new URL(page.url()).searchParams.get('filter')).toBe('two-step');
    const visibleTransitions = await page.$$eval('#transitions tbody tr', (rs) => rs.filter((r) => !(r as HTMLElement).hidden).map((r) => (r as HTMLElement).innerText));
    expect(visibleTransitions.length).toBeGreaterThan(0);
    for (const t of visibleTransitions) expect(t).toContain('two-step');

    // Wake the Worker with a real request while the filter is on: refreshes must show it under the filter.
    const n = await refreshes();
    const reply = await ray.request('/two-step?text=hi', 120_000);
    expect(reply.status).toBe(200);
    await page.waitForFunction(() => {
      const row = Array.from((document.querySelectorAll('#apps tbody tr') as HTMLElement[])).find((r: HTMLElement) => !r.hidden);
      return row !== undefined && /Worker \S+ running [12]\//.test(row.innerText);
    }, undefined, { timeout: 60_000 });
    expect(await refreshes()).toBeGreaterThan(n);
    expect(await page.inputValue('#filter')).toBe('two-step');
    expect(await visibleAppRows()).toEqual([expect.stringMatching(/^test two-step/)]);
    expect(await page.locator('#apps tbody tr[hidden]').count()).toBe(3);

    await page.reload();
    await page.waitForSelector('body[data-refreshes]');
    expect(await page.inputValue('#filter')).toBe('two-step');
    expect(await appRowsOnceShown(oneRow)).toEqual([expect.stringMatching(/^test two-step/)]);

    // A registration state is a filter word too.
    await page.fill('#filter', 'missing_scaled');
    expect(await visibleAppRows()).toEqual([expect.stringMatching(new RegExp(`^test ${BUGGY}`))]);

    // Problems only: the two failed apps and the unregistered one, not the healthy one.
    await page.fill('#filter', '');
    await page.check('#only-problems');
    const problemRows = await visibleAppRows();
    expect(problemRows).toHaveLength(3);
    for (const r of problemRows) expect(r).toMatch(/DEPLOY_FAILED|missing_scaled_to_zero/);
    await page.uncheck('#only-problems');
    expect(await visibleAppRows()).toHaveLength(4);
  });

  it('is readable at phone width: one card per row, nothing wider than the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/`);
    await page.waitForSelector('body[data-refreshes]');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    // Each row a card, each field labelled beside its value, no header row.
    expect(await page.$eval('#apps tbody tr', (tr) => getComputedStyle(tr).display)).toBe('block');
    expect(await page.$eval('#apps tbody tr td', (td) => getComputedStyle(td).display)).toBe('grid');
    expect(await page.$eval('#apps thead', (th) => getComputedStyle(th).display)).toBe('none');
    expect(await page.$eval('#apps tbody tr td', (td) => getComputedStyle(td, '::before').content)).toBe('"Cluster"');
    await page.screenshot({ path: path.join(artifactsDir(), 'status-page-phone.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('Hypha restarts under a new artifact-manager client id (the second incident): the stale canary shows, fresh works', async () => {
    await page.goto(`${base}/?refresh=1`);
    await page.waitForSelector('body[data-refreshes]');
    const oldId = (await api()).watched_services[0].resolved_client_id;
    expect(oldId).not.toBeNull();
    const t0 = Date.now();
    await hypha.restart({ serverId: undefined });
    await page.waitForFunction(() => /stale/.test(document.querySelector('#services tbody tr')?.textContent ?? '')
      && /cached\s*timeout/.test(document.querySelector('#services tbody tr')?.textContent ?? ''), undefined, { timeout: 90_000 });
    process.stdout.write(`hypha restart → stale canary and cached timeout on the page: ${Date.now() - t0} ms\n`);
    const s = await api();
    const am = s.watched_services[0];
    const newId = am.resolved_client_id;
    expect(newId).not.toBe(oldId);
    expect(am).toMatchObject({ severity: 'critical', provider_client_ids: [newId], cached: [{ holder: 'exporter', client_id: oldId, stale: true }] });
    const row = (await page.locator('#services tbody tr').innerText()).replace(/\s+/g, ' ');
    // A server id the restarted Hypha replaced: the exporter proves it gone and decides the page at once.
    expect(row).toContain(`exporter holds stale client id ${oldId} (not among the live providers, a replaced server id: it never returns); `
      + 'HyphaServiceCachedProxyStale fires');
    expect(am.cached[0].page).toMatchObject({ firing: true, cause: 'server_gone', self_healing: false });
    expect(row).toMatch(/cached timeout 3\.\d\d s list\(\)/);
    expect(row).toMatch(/fresh ok \d+ ms list\(\)/);
    expect(await page.locator('#services tbody tr.sev-critical').count()).toBe(1);
    expect(await page.locator('#problems li').filter({ hasText: 'public/artifact-manager' }).first().innerText()).toMatch(/^critical public\/artifact-manager exporter holds stale client id/);
    const transitions = (await page.locator('#transitions tbody tr').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
    expect(transitions).toEqual(expect.arrayContaining([
      expect.stringContaining(`providers public/artifact-manager ${oldId} → ${newId}`),
      expect.stringContaining(`client id public/artifact-manager (fresh resolve) ${oldId} → ${newId}`),
      expect.stringContaining('client id public/artifact-manager cached by exporter current → stale'),
    ]));
    await page.screenshot({ path: path.join(artifactsDir(), 'status-page-stale-service.png'), fullPage: true });
    // No credential on the page, in the JSON or in the exporter's log.
    expect(await page.content()).not.toContain(hypha.rootToken);
    expect(JSON.stringify(s)).not.toContain(hypha.rootToken);
    expect(logLines.join('')).not.toContain(hypha.rootToken);
  });

  it('Ray dashboard gone: the page says the source is down and the apps unknown', async () => {
    await page.goto(`${base}/?refresh=1`);
    await page.waitForSelector('body[data-refreshes]');
    await ray.stopDashboard();
    const rayRow = page.locator('#sources > .body > table tbody tr').filter({ has: page.locator('td[data-label="Source"]').getByText('ray', { exact: true }) });
    await page.waitForFunction(() => Array.from((document.querySelectorAll('#sources > .body > table tbody tr') as HTMLElement[]))
      .some((r: HTMLElement) => /^ray\s+test\s+down/.test(r.innerText)), undefined, { timeout: 60_000 });
    expect(await page.locator('#summary').innerText()).toMatch(/sources \d up, [1-9] down/);
    const rows = await visibleAppRows();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatch(/^test — unknown Ray source down: apps unknown/);
    expect((await rayRow.innerText()).replace(/\s+/g, ' ')).toMatch(/^ray test down (just now|\d+ s ago) \(\d\d:\d\d:\d\d UTC\) .+ \d+ \((connect|timeout|http_status) \d+/);
    const transitions = (await page.locator('#transitions tbody tr').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
    expect(transitions).toEqual(expect.arrayContaining([expect.stringMatching(/source ray\/test up → down/)]));
    expect(await page.locator('#problems li').allInnerTexts()).toEqual(expect.arrayContaining([expect.stringMatching(/^critical ray\/test down/)]));
    await page.screenshot({ path: path.join(artifactsDir(), 'status-page-source-down.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
    expect(dialogs).toEqual([]);
  });
});
