/**
 * VictoriaMetrics (v1.151.0, scripts/setup-engines.sh) as a rule engine for the shipped pack: a
 * single-node `victoria-metrics` scraping the exporter (-promscrape.config), and `vmalert` evaluating
 * the rule files against it, with -datasource.url, -remoteWrite.url and -remoteRead.url all pointing
 * at it, as VictoriaMetrics documents for a single node (docs/victoriametrics/vmalert.md, "Topology
 * examples"). vmalert keeps no local state: recording rule results and ALERTS/ALERTS_FOR_STATE exist
 * only through that remote write, and `for:` state is restored from remote read on a restart.
 *
 * The flags are VictoriaMetrics' production defaults, written out (docs/engines.md):
 * -search.latencyOffset=30s (a sample is visible to queries 30 s after its timestamp, so a query
 * never sees a half-ingested last point), -rule.evalDelay=30s (vmalert evaluates at now − 30 s to
 * match) and -datasource.queryStep=5m (how far back an instant query looks for a value, Prometheus'
 * lookback). The pack's vmalert files (rules/vmalert/) override the two delays per group
 * (eval_delay, params.latency_offset), so their pages come that much later than Prometheus', not 30 s.
 * Every process on free loopback ports, private data dir, ended by PID.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { assertEngine, engineBinary, ENGINE_VERSIONS } from './engines';
import { queryVector, RuleEngineOptions, waitReady, waitRulesHealthy, withTeardown } from './engine-api';
import { freePorts } from './ports';
import { startProc, waitFor } from './proc';

/** The production defaults passed explicitly (see above). */
const VM_DEFAULTS = { latencyOffset: '30s', evalDelay: '30s', queryStep: '5m' } as const;

/** The one evaluation delay of the rule files' groups (their eval_delay, else -rule.evalDelay); files that disagree are refused. */
function groupsEvalDelay(ruleFiles: readonly string[]): string {
  const delays = new Set(ruleFiles.flatMap((f) => {
    const doc = parse(fs.readFileSync(f, 'utf8')) as { groups?: Array<{ eval_delay?: string }> };
    return (doc.groups ?? []).map((g) => g.eval_delay ?? VM_DEFAULTS.evalDelay);
  }));
  if (delays.size !== 1) throw new Error(`vmalert rule files with ${delays.size === 0 ? 'no group' : `different evaluation delays (${[...delays].join(', ')})`}: ${ruleFiles.join(', ')}`);
  return [...delays][0];
}

export interface VictoriaMetrics {
  /** http://host:port of victoria-metrics (Prometheus query API). */
  vmUrl: string;
  /** http://host:port of vmalert (its /api/v1/rules and /api/v1/alerts). */
  vmalertUrl: string;
  /** e.g. "1.151.0". */
  version: string;
  /** The rule groups' evaluation delay: how much later than Prometheus vmalert judges what it sees. */
  evalDelay: string;
  stop(): Promise<void>;
}

/** vmalert's -evaluationInterval is `evaluationInterval`; `ruleFiles` are vmalert's (rules/vmalert/ or a copy). */
export async function startVictoriaMetrics(o: RuleEngineOptions): Promise<VictoriaMetrics> {
  assertEngine('victoriametrics');
  return withTeardown('vm-', async (dir, t) => {
    const scrapeFile = path.join(dir, 'scrape.yml');
    fs.writeFileSync(scrapeFile, stringify({
      global: { scrape_interval: o.scrapeInterval, scrape_timeout: o.scrapeInterval },
      scrape_configs: [{ job_name: o.job, honor_labels: true, static_configs: [{ targets: o.exporterTargets }] }],
    }));
    const [vmPort, vmalertPort] = await freePorts(2);
    const vmUrl = `http://127.0.0.1:${vmPort}`;
    const vm = startProc('victoria-metrics', engineBinary('victoriametrics', 'victoria-metrics'), [
      `-storageDataPath=${path.join(dir, 'data')}`, `-httpListenAddr=127.0.0.1:${vmPort}`, `-promscrape.config=${scrapeFile}`,
      '-retentionPeriod=1d', `-search.latencyOffset=${VM_DEFAULTS.latencyOffset}`, '-loggerLevel=WARN',
    ]);
    t.add(() => vm.stop());
    await waitReady('victoria-metrics', vm, `${vmUrl}/health`);
    const vmalertUrl = `http://127.0.0.1:${vmalertPort}`;
    const evalDelay = groupsEvalDelay(o.ruleFiles);
    const vmalert = startProc('vmalert', engineBinary('victoriametrics', 'vmalert'), [
      ...o.ruleFiles.map((f) => `-rule=${f}`),
      `-datasource.url=${vmUrl}`, `-remoteWrite.url=${vmUrl}`, `-remoteRead.url=${vmUrl}`, `-notifier.url=${o.alertmanagerUrl}`,
      `-evaluationInterval=${o.evaluationInterval}`, `-rule.evalDelay=${VM_DEFAULTS.evalDelay}`, `-datasource.queryStep=${VM_DEFAULTS.queryStep}`,
      `-httpListenAddr=127.0.0.1:${vmalertPort}`, '-loggerLevel=WARN',
    ]);
    t.add(() => vmalert.stop());
    await waitReady('vmalert', vmalert, `${vmalertUrl}/health`);
    await waitFor('victoria-metrics scraped the exporter', async () => (await queryVector(vmUrl, `up{job="${o.job}"} == 1`)).length > 0, 120_000, 1000);
    await waitRulesHealthy('vmalert', vmalertUrl);
    return { vmUrl, vmalertUrl, version: ENGINE_VERSIONS.victoriametrics.replace(/^v/, ''), evalDelay, stop: () => t.run() };
  });
}
