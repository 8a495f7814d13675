/**
 * The one builder of the way from an exporter to a page: Prometheus scraping the exporter with the shipped rules
 * (or their test override), Alertmanager 0.25 with the example routing, and a webhook receiver standing in for
 * pager and chat. The stack builds its own with it; the end-to-end replays build one more per Prometheus version,
 * and one per other rule engine (startEngineChain: Thanos Ruler, VictoriaMetrics vmalert) with the same rule
 * files (vmalert its copies in rules/vmalert/), Alertmanager and receiver. Every process ends by PID.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Alertmanager, startAlertmanager } from './alertmanager';
import { firingAlertNames, guarded, queryVector, Teardown } from './engine-api';
import { PrometheusServer, Sample, startPrometheus } from './prometheus';
import { startThanosRuler, ThanosRuler } from './thanos';
import { startVictoriaMetrics, VictoriaMetrics } from './victoriametrics';
import { overriddenRuleFiles } from './rules-override';
import { startWebhookReceiver } from './webhook-receiver';
import { repoRoot } from '../../src/util/repo-root';
import { VMALERT_DIR } from '../../mixin';
import { parseDuration } from '../../src/util/duration';

export const EXPORTER_JOB = 'hypha-serve-exporter';

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

export interface AlertChainOptions {
  /** host:port of the exporter(s), scraped as job EXPORTER_JOB with honor_labels. */
  exporterTargets: string[];
  /** Divide every alert's `for:` by this (1 = the shipped rules, unchanged). */
  forDivisor: number;
  scrapeInterval: string;
  evaluationInterval: string;
  /** Alertmanager route timers (undefined = the example's). */
  groupWait?: string;
  groupInterval?: string;
  /** The Prometheus build (default: $PROMETHEUS_BIN or Debian's 2.42). */
  prometheusBinary?: string;
  /** Where the receiver logs every notification. */
  pagesLog: string;
}

export interface AlertChain {
  prometheus: PrometheusServer;
  alertmanager: Alertmanager;
  receiver: WebhookReceiver;
  pagesLog: string;
  stop(): Promise<void>;
}

/** The rule files as Prometheus (and Thanos) load them and as vmalert does (rules/vmalert/). */
interface RuleFiles {
  prometheus: string[];
  vmalert: string[];
}

/** The shipped rule files (forDivisor 1) or their test override in a temp dir (removed by `t`). */
function ruleFiles(forDivisor: number, t: Teardown): RuleFiles {
  const shipped = (dir: string) => ['recording.yml', 'alerts.yml'].map((f) => path.join(repoRoot(), dir, f));
  if (forDivisor === 1) return { prometheus: shipped('rules'), vmalert: shipped(VMALERT_DIR) };
  const o = overriddenRuleFiles({ forDivisor, minFor: '5s' });
  t.add(async () => fs.rmSync(o.dir, { recursive: true, force: true }));
  return { prometheus: o.files, vmalert: o.vmalertFiles };
}

/**
 * The part every chain shares, whatever evaluates the rules: the receiver, Alertmanager 0.25 with the
 * example routing (and the given timers) and the rule files, each added to `t`.
 */
async function startRouting(o: AlertChainOptions, t: Teardown): Promise<{ receiver: WebhookReceiver; alertmanager: Alertmanager; rules: RuleFiles }> {
  const receiver = await startWebhookReceiver(o.pagesLog);
  t.add(() => receiver.close());
  const alertmanager = await startAlertmanager({
    webhookBase: receiver.url, groupWait: o.groupWait, groupInterval: o.groupInterval, repeatInterval: o.groupWait ? '1h' : undefined,
  });
  t.add(() => alertmanager.stop());
  return { receiver, alertmanager, rules: ruleFiles(o.forDivisor, t) };
}

/** Starts receiver, Alertmanager and Prometheus; resolves once the exporter is scraped and no rule fails. */
export async function startAlertChain(o: AlertChainOptions): Promise<AlertChain> {
  return guarded(async (t) => {
    const { receiver, alertmanager, rules } = await startRouting(o, t);
    const prometheus = await startPrometheus({
      ...(o.prometheusBinary ? { binary: o.prometheusBinary } : {}),
      scrapeTargets: [{ job: EXPORTER_JOB, targets: o.exporterTargets, honorLabels: true }],
      ruleFiles: rules.prometheus,
      scrapeInterval: o.scrapeInterval,
      evaluationInterval: o.evaluationInterval,
      alertmanagerUrl: alertmanager.url,
    });
    t.add(() => prometheus.stop());
    await prometheus.waitForTargetsUp(60_000, EXPORTER_JOB);
    // A rule the version cannot evaluate would never page; fail here rather than time out later.
    const bad = (await prometheus.rules()).flatMap((g) => g.rules).filter((r) => r.health === 'err');
    if (bad.length) throw new Error(`Prometheus ${prometheus.version.raw}: rules failing: ${bad.map((r) => `${r.name}: ${r.lastError}`).join('; ')}`);
    return { prometheus, alertmanager, receiver, pagesLog: o.pagesLog, stop: () => t.run() };
  });
}

/** The rule engines other than Prometheus that the replays run (test/harness/engines.ts builds them). */
export type RuleEngine = 'thanos' | 'victoriametrics';

export interface EngineChain {
  /** e.g. "Thanos 0.42.4" or "VictoriaMetrics 1.151.0". */
  label: string;
  /** How the engine is wired, for logs. */
  describe: string;
  alertmanager: Alertmanager;
  receiver: WebhookReceiver;
  pagesLog: string;
  /** An instant query of what the engine's rules read (Thanos query; VictoriaMetrics, which answers 30 s behind). */
  vector(expr: string): Promise<Sample[]>;
  /** Names of the alerts the engine has firing (thanos rule's or vmalert's /api/v1/alerts). */
  firing(): Promise<string[]>;
  /** How much later than Prometheus the engine evaluates what it sees (the vmalert rules' eval_delay; 0 for Thanos). */
  lagMs: number;
  stop(): Promise<void>;
}

export type EngineChainOptions = Omit<AlertChainOptions, 'prometheusBinary'>;

/**
 * The same way to a page as startAlertChain, with another engine evaluating the same rule files (the
 * shipped ones or the same test override) at the same evaluation interval: receiver, Alertmanager 0.25
 * with the example routing, then the engine scraping the exporter(s). Resolves once every rule evaluates
 * without error.
 */
export async function startEngineChain(engine: RuleEngine, o: EngineChainOptions): Promise<EngineChain> {
  return guarded(async (t) => {
    const { receiver, alertmanager, rules } = await startRouting(o, t);
    const common = {
      exporterTargets: o.exporterTargets, job: EXPORTER_JOB, ruleFiles: rules.prometheus, scrapeInterval: o.scrapeInterval,
      evaluationInterval: o.evaluationInterval, alertmanagerUrl: alertmanager.url,
    };
    const base = { alertmanager, receiver, pagesLog: o.pagesLog, stop: () => t.run() };
    if (engine === 'thanos') {
      const th: ThanosRuler = await startThanosRuler(common);
      t.add(() => th.stop());
      return {
        ...base, label: `Thanos ${th.version}`, lagMs: 0,
        describe: `Thanos ${th.version}: thanos rule (stateful, --eval-interval=${o.evaluationInterval}) → thanos query ${th.queryUrl} → sidecar of Prometheus ${th.prometheus.version.raw} + the ruler's store`,
        vector: (expr) => queryVector(th.queryUrl, expr),
        firing: () => firingAlertNames(th.ruleUrl),
      };
    }
    const v: VictoriaMetrics = await startVictoriaMetrics({ ...common, ruleFiles: rules.vmalert });
    t.add(() => v.stop());
    return {
      ...base, label: `VictoriaMetrics ${v.version}`, lagMs: parseDuration(v.evalDelay) ?? 0,
      describe: `VictoriaMetrics ${v.version}: vmalert (-evaluationInterval=${o.evaluationInterval}, the rules' eval_delay and latency_offset ${v.evalDelay}) → victoria-metrics ${v.vmUrl} (remote write and read there too)`,
      vector: (expr) => queryVector(v.vmUrl, expr),
      firing: () => firingAlertNames(v.vmalertUrl),
    };
  });
}
