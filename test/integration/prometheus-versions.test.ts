// The Prometheus harness itself, on every version the rules and replays run on (Debian 2.42 and the
// Prometheus 3 build): the binaries are the versions they claim, a real server scrapes a tiny static
// target, evaluates a rule file (recording + alert with keep_firing_for), reloads, and the one
// scrape behaviour that differs between 2.x and 3.x (a target without a known Content-Type) is
// handled as each version does. In CI a missing 3.x build fails here (requirePrometheus3).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PrometheusServer, startPrometheus } from '../harness/prometheus';
import { waitFor } from '../harness/proc';
import {
  assertPrometheusBinaries, DEBIAN_PROMETHEUS, PROMETHEUS3_VERSION, prometheus3Missing, prometheus3Required,
  prometheusVersions, PrometheusVersion, requirePrometheus3,
} from '../harness/prometheus-versions';

jest.setTimeout(180_000);

interface TinyTarget { url: string; host: string; set(v: number): void; close(): Promise<void> }

/** A static exposition on loopback; contentType undefined sends none at all. */
async function tinyTarget(contentType: string | undefined): Promise<TinyTarget> {
  let value = 1;
  const srv = http.createServer((req, res) => {
    const body = `# HELP tiny_value A value the test sets.\n# TYPE tiny_value gauge\ntiny_value{kind="a"} ${value}\ntiny_value{kind="b"} 2\n`;
    if (contentType) res.setHeader('content-type', contentType);
    else res.removeHeader('content-type');
    res.end(body);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const addr = srv.address();
  if (addr === null || typeof addr === 'string') throw new Error('no address');
  return {
    url: `http://127.0.0.1:${addr.port}`,
    host: `127.0.0.1:${addr.port}`,
    set: (v) => { value = v; },
    close: () => new Promise((r) => { srv.closeAllConnections(); srv.close(() => r()); }),
  };
}

const RULES = `groups:
  - name: tiny
    interval: 1s
    rules:
      - record: tiny:value:sum
        expr: sum without (kind) (tiny_value)
      - alert: TinyHigh
        expr: tiny_value{kind="a"} > 5
        for: 2s
        keep_firing_for: 3s
        labels: {severity: test}
        annotations: {summary: "tiny value {{ $value }}"}
`;

const PROMTOOL_TEST = `rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'tiny_value{kind="a", job="tiny", instance="x"}'
        values: '1 9 9 9 1'
      - series: 'tiny_value{kind="b", job="tiny", instance="x"}'
        values: '2 2 2 2 2'
    promql_expr_test:
      - expr: tiny:value:sum
        eval_time: 1m
        exp_samples: [{labels: 'tiny:value:sum{job="tiny", instance="x"}', value: 11}]
    alert_rule_test:
      - {eval_time: 1m, alertname: TinyHigh, exp_alerts: []}
      - eval_time: 4m
        alertname: TinyHigh
        exp_alerts:
          - exp_labels: {severity: test, kind: a, job: tiny, instance: x}
            exp_annotations: {summary: "tiny value 9"}
`;

describe('Prometheus versions available to the tests', () => {
  test('Debian 2.42 is always in the list; Prometheus 3 is there when built, and required in CI', () => {
    const versions = prometheusVersions();
    expect(versions[0]).toEqual(DEBIAN_PROMETHEUS);
    const p3 = requirePrometheus3(); // throws in CI (or HSE_REQUIRE_PROMETHEUS3=1) when not built
    if (p3) {
      expect(versions.map((v) => v.label)).toEqual(['2.42', '3.16']);
    } else {
      // Only reachable outside CI: say what this run did not check.
      expect(prometheus3Required()).toBe(false);
      expect(prometheus3Missing()).toMatch(/setup-prometheus3\.sh/);
      process.stdout.write(`[prometheus-versions] NOT checked on Prometheus 3: ${prometheus3Missing()}\n`);
    }
  });
});

describe.each(prometheusVersions().map((v) => [v.label, v] as const))('Prometheus %s harness', (label, v: PrometheusVersion) => {
  const expectedVersion = label === '2.42' ? /^2\.42\.\d/ : new RegExp(`^${PROMETHEUS3_VERSION.replace(/\./g, '\\.')}$`);
  let dir: string;
  let good: TinyTarget;
  let bare: TinyTarget;
  let prom: PrometheusServer | undefined;

  beforeAll(async () => {
    assertPrometheusBinaries(v);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), `prom-harness-${label}-`));
    fs.writeFileSync(path.join(dir, 'rules.yml'), RULES);
    fs.writeFileSync(path.join(dir, 'rules.test.yml'), PROMTOOL_TEST);
    good = await tinyTarget('text/plain; version=0.0.4; charset=utf-8');
    bare = await tinyTarget(undefined);
  });

  afterAll(async () => {
    await prom?.stop();
    await good?.close();
    await bare?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('prometheus and promtool report the expected version', () => {
    for (const bin of [v.prometheus, v.promtool]) {
      const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
      expect(r.status).toBe(0);
      const m = /version (\S+) /.exec(r.stdout + r.stderr);
      expect(m?.[1]).toMatch(expectedVersion);
    }
  });

  test('promtool checks and unit-tests a rule file; a broken one fails', () => {
    const ok = spawnSync(v.promtool, ['test', 'rules', 'rules.test.yml'], { cwd: dir, encoding: 'utf8' });
    expect(ok.stdout + ok.stderr).toMatch(/SUCCESS/);
    expect(ok.status).toBe(0);
    // The same test expecting no alert at 4m must fail: promtool really evaluates.
    fs.writeFileSync(path.join(dir, 'wrong.test.yml'), PROMTOOL_TEST.replace(/- eval_time: 4m\n(.|\n)*$/, '- {eval_time: 4m, alertname: TinyHigh, exp_alerts: []}\n'));
    const wrong = spawnSync(v.promtool, ['test', 'rules', 'wrong.test.yml'], { cwd: dir, encoding: 'utf8' });
    expect(wrong.status).not.toBe(0);
    fs.writeFileSync(path.join(dir, 'broken.yml'), RULES.replace('sum without (kind) (tiny_value)', 'sum without (kind) (tiny_value'));
    const broken = spawnSync(v.promtool, ['check', 'rules', path.join(dir, 'broken.yml')], { encoding: 'utf8' });
    expect(broken.status).not.toBe(0);
  });

  test('a real server scrapes a static target, records, fires and keeps firing, reloads', async () => {
    prom = await startPrometheus({
      binary: v.prometheus,
      scrapeTargets: [{ job: 'tiny', targets: [good.host] }],
      ruleFiles: [path.join(dir, 'rules.yml')],
    });
    expect(prom.version.raw).toMatch(expectedVersion);
    await prom.waitForTargetsUp(30_000, 'tiny');
    const recorded = await waitFor('tiny:value:sum recorded', async () => {
      const s = await prom!.vector('tiny:value:sum');
      return s.length === 1 ? s : undefined;
    }, 30_000);
    expect(Number(recorded[0].value[1])).toBe(3);
    expect(recorded[0].metric).toMatchObject({ job: 'tiny', instance: good.host });
    // Negative: below the threshold nothing is pending or firing.
    expect((await prom.alerts()).filter((a) => a.labels.alertname === 'TinyHigh')).toEqual([]);
    good.set(9);
    const firing = await waitFor('TinyHigh firing', async () => (await prom!.alerts()).find((a) => a.labels.alertname === 'TinyHigh' && a.state === 'firing'), 30_000);
    expect(firing.labels).toMatchObject({ kind: 'a', severity: 'test' });
    expect(firing.annotations.summary).toBe('tiny value 9');
    // keep_firing_for: still firing for a while after the condition clears, then gone.
    good.set(1);
    await waitFor('tiny_value back to 1', async () => Number((await prom!.vector('tiny_value{kind="a"}'))[0]?.value[1]) === 1, 10_000);
    expect((await prom.alerts()).some((a) => a.labels.alertname === 'TinyHigh' && a.state === 'firing')).toBe(true);
    await waitFor('TinyHigh resolved', async () => !(await prom!.alerts()).some((a) => a.labels.alertname === 'TinyHigh'), 30_000);
    const groups = await prom.rules();
    expect(groups.flatMap((g) => g.rules).every((r) => r.health === 'ok')).toBe(true);

    // /-/reload (lifecycle API) picks up a new target.
    await prom.reload({ scrapeTargets: [{ job: 'tiny', targets: [good.host] }, { job: 'tiny2', targets: [good.host] }] });
    await prom.waitForTargetsUp(30_000, 'tiny2');
  });

  test('a target without a Content-Type: 2.x falls back to text, 3.x fails it unless a fallback protocol is configured', async () => {
    await prom!.reload({ scrapeTargets: [{ job: 'bare', targets: [bare.host] }] });
    if (prom!.version.major < 3) {
      await prom!.waitForTargetsUp(30_000, 'bare');
    } else {
      const down = await waitFor('bare target scraped and failed', async () => {
        const t = (await prom!.targets()).filter((x) => x.labels.job === 'bare');
        return t.length === 1 && t[0].health === 'down' ? t[0] : undefined;
      }, 30_000);
      expect(down.lastError).toMatch(/content-type|Content-Type|media type|fallback/i);
      await prom!.reload({ scrapeTargets: [{ job: 'bare', targets: [bare.host], fallbackScrapeProtocol: 'PrometheusText0.0.4' }] });
      await prom!.waitForTargetsUp(30_000, 'bare');
    }
    const s = await waitFor('bare series', async () => {
      const r = await prom!.vector('tiny_value{job="bare",kind="b"}');
      return r.length === 1 ? r : undefined;
    }, 30_000);
    expect(s[0].value[1]).toBe('2');
  });
});
