// The runbook docs/runbooks/HyphaServeExporterWebConfigReloadFailed.md, run as written (steps by id)
// against the real exporter serving TLS (--web.config.file, its certificate in a Kubernetes-style secret
// volume as cert-manager renews it) and Prometheus scraping it over https with the rules (for: ÷ 10):
// a renewal caught half-way (the new certificate next to the old key) cannot be applied → the alert
// fires while the old certificate is still served; the renewal finished (the matching key) → applied
// within seconds without a restart, the alert resolves and the renewed certificate is served. No Ray or
// Hypha: the web config is the exporter's own; the exporter samples an empty config.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { EXPORTER_JOB } from '../harness/alert-path';
import { ExporterProcess, spawnExporter } from '../harness/exporter-process';
import { PrometheusServer, startPrometheus } from '../harness/prometheus';
import { waitFor } from '../harness/proc';
import { overriddenRuleFiles } from '../harness/rules-override';
import { TestCa, secretVolumeFiles } from '../helpers/certs';
import { ensureBuilt } from '../helpers/cli';
import { runStep, StepEnv } from '../helpers/runbook-step';
import { tmpDir } from '../helpers/tmp';

jest.setTimeout(600_000);

const ALERT = 'HyphaServeExporterWebConfigReloadFailed';

describe('runbook of HyphaServeExporterWebConfigReloadFailed, run against the exporter serving TLS and Prometheus', () => {
  const tmp = tmpDir('hse-runbooks-web-');
  let exporter: ExporterProcess | undefined;
  let prometheus: PrometheusServer | undefined;
  let rulesDir: string | undefined;
  let env: StepEnv;
  let ca: TestCa;
  let volume: { swap(next: Record<string, string>): void };
  let first: { crt: string; key: string };
  let renewed: { crt: string; key: string };

  const value = async (expr: string) => (await (prometheus as PrometheusServer).vector(expr))[0]?.value[1];
  const values = (r: { queries: Array<{ series: Array<{ value: string }> }> }) => r.queries.map((q) => q.series.map((s) => s.value));
  /** What `openssl x509 -noout -serial` prints for the certificate. */
  const serial = (pem: string) => `serial=${new X509Certificate(pem).serialNumber}`;
  const alertState = async () => (await (prometheus as PrometheusServer).vector(`ALERTS{alertname="${ALERT}"}`))[0]?.metric.alertstate;

  beforeAll(async () => {
    ensureBuilt();
    const certs = path.join(tmp.dir, 'issuer');
    fs.mkdirSync(certs);
    ca = new TestCa(certs);
    first = ca.issue('first', ['IP:127.0.0.1', 'DNS:localhost']).pem;
    renewed = ca.issue('renewed', ['IP:127.0.0.1', 'DNS:localhost']).pem;
    const tlsDir = path.join(tmp.dir, 'tls');
    fs.mkdirSync(tlsDir);
    volume = secretVolumeFiles(tlsDir, { 'tls.crt': first.crt, 'tls.key': first.key });
    const webConfig = tmp.write('web.yml', 'tls_server_config:\n  cert_file: tls/tls.crt\n  key_file: tls/tls.key\n');
    const config = tmp.write('exporter.yml', 'global:\n  interval: 1s\n  timeout: 1s\n');
    const storage = path.join(tmp.dir, 'data');
    exporter = await spawnExporter({
      name: 'runbooks-web-exporter', config: { file: config }, storagePath: storage, logLevel: 'info',
      args: [`--web.config.file=${webConfig}`], waitReady: false,
    });
    const hostport = exporter.instance;
    await waitFor('exporter ready over TLS', async () => {
      try {
        return execFileSync('curl', ['-s', '--cacert', ca.crt, '-o', '/dev/null', '-w', '%{http_code}', `https://${hostport}/-/ready`]).toString() === '200';
      } catch {
        return false;
      }
    }, 90_000, 500);
    const rules = overriddenRuleFiles({ forDivisor: 10, minFor: '5s' });
    rulesDir = rules.dir;
    prometheus = await startPrometheus({
      scrapeTargets: [{ job: EXPORTER_JOB, targets: [hostport], honorLabels: true, scheme: 'https', tlsConfig: { ca_file: ca.crt } }],
      ruleFiles: rules.files, scrapeInterval: '1s', evaluationInterval: '1s',
    });
    await prometheus.waitForTargetsUp(60_000, EXPORTER_JOB);
    env = {
      cwd: tmp.dir, prometheusUrl: prometheus.url,
      vars: {
        EXPORTER: `https://${hostport}`, PROMETHEUS: prometheus.url, CONFIG: config, STATE: storage,
        EXPORTER_LOG: exporter.proc.logFile, TLS_CERT: path.join(tlsDir, 'tls.crt'), TLS_KEY: path.join(tlsDir, 'tls.key'),
        EXPORTER_HOSTPORT: hostport,
      },
    };
  });

  afterAll(async () => {
    await prometheus?.stop();
    await exporter?.stop();
    if (rulesDir) fs.rmSync(rulesDir, { recursive: true, force: true });
    tmp.cleanup();
  });

  test('a renewal caught half-way (new certificate, old key): rejected, the old certificate still served, the alert fires', async () => {
    expect(await value('hypha_serve_exporter_web_config_last_reload_successful')).toBe('1');
    // The secret volume swapped to the renewed certificate while the key is still the previous one.
    volume.swap({ 'tls.crt': renewed.crt, 'tls.key': first.key });
    await waitFor(`${ALERT} firing`, async () => (await alertState()) === 'firing', 180_000, 1000);

    const check = await runStep('hyphaserveexporterwebconfigreloadfailed-check', env);
    expect(check.stdout).toMatch(/no alert condition holds \(exit 0\)/);
    expect(check.stdout).toMatch(/^exit 0$/m);
    const series = await runStep('hyphaserveexporterwebconfigreloadfailed-promql', env);
    expect(values(series)[0]).toEqual(['0']);
    expect(Number(values(series)[1][0])).toBeGreaterThanOrEqual(1);
    expect(Number(values(series)[2][0])).toBeLessThan(Date.now() / 1000);
    const log = await runStep('hyphaserveexporterwebconfigreloadfailed-log', env);
    expect(log.stdout).toContain('web config changed but cannot be applied; the previous one is still served');
    expect(log.stdout).toMatch(/tls_server_config\.cert_file: cannot use the certificate and key \([^)]*tls\.crt, [^)]*tls\.key\)/);
    expect((await runStep('hyphaserveexporterwebconfigreloadfailed-pair', env)).stdout.trim()).toBe('certificate and key DO NOT match');
    // Still served: the first certificate (Prometheus scrapes on).
    const served = await runStep('hyphaserveexporterwebconfigreloadfailed-confirm-fix-served-cert', env);
    const [now, onDisk] = served.stdout.split('\n').filter((l) => l.startsWith('serial='));
    expect([now, onDisk]).toEqual([serial(first.crt), serial(renewed.crt)]);
  });

  test('the renewal finished (the matching key): applied without a restart, the alert resolves, the renewed certificate is served', async () => {
    const pid = exporter?.proc.pid;
    const t0 = Date.now() / 1000;
    volume.swap({ 'tls.crt': renewed.crt, 'tls.key': renewed.key });
    await waitFor('re-read succeeded, scraped', async () => (await value('hypha_serve_exporter_web_config_last_reload_successful')) === '1', 60_000, 500);
    await waitFor(`${ALERT} resolved`, async () => (await alertState()) === undefined, 60_000, 500);
    expect((await runStep('hyphaserveexporterwebconfigreloadfailed-pair', env)).stdout.trim()).toBe('certificate and key match');
    const fix = await runStep('hyphaserveexporterwebconfigreloadfailed-confirm-fix', env);
    expect(values(fix)[0]).toEqual(['1']);
    expect(Number(values(fix)[1][0])).toBeLessThan(Date.now() / 1000 - t0 + 5);
    expect(values(fix)[2]).toEqual([]);
    const served = await runStep('hyphaserveexporterwebconfigreloadfailed-confirm-fix-served-cert', env);
    const lines = served.stdout.split('\n').filter((l) => /^(serial|notAfter)=/.test(l));
    expect(lines).toHaveLength(4);
    expect(lines.slice(0, 2)).toEqual(lines.slice(2));
    expect(lines[0]).toBe(serial(renewed.crt));
    expect(exporter?.proc.pid).toBe(pid);
    expect(exporter?.proc.child.exitCode).toBeNull();
  });
});
