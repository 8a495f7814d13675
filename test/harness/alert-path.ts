/**
 * The one builder of the way from an exporter to a page: Prometheus scraping the exporter with the shipped rules
 * (or their test override), Alertmanager 0.25 with the example routing, and a webhook receiver standing in for
 * pager and chat. The stack builds its own with it; the end-to-end replays build one more per Prometheus version.
 * Every process ends by PID.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Alertmanager, startAlertmanager } from './alertmanager';
import { PrometheusServer, startPrometheus } from './prometheus';
import { repoRoot } from './proc';
import { overriddenRuleFiles } from './rules-override';
import { startWebhookReceiver } from './webhook-receiver';

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

/** Starts receiver, Alertmanager and Prometheus; resolves once the exporter is scraped and no rule fails. */
export async function startAlertChain(o: AlertChainOptions): Promise<AlertChain> {
  const started: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const s of started.reverse()) await s().catch(() => undefined);
  };
  try {
    const receiver = await startWebhookReceiver(o.pagesLog);
    started.push(() => receiver.close());
    const alertmanager = await startAlertmanager({
      webhookBase: receiver.url, groupWait: o.groupWait, groupInterval: o.groupInterval, repeatInterval: o.groupWait ? '1h' : undefined,
    });
    started.push(() => alertmanager.stop());
    const rules = o.forDivisor === 1
      ? { files: ['alerts.yml', 'recording.yml'].map((f) => path.join(repoRoot(), 'rules', f)), dir: '' }
      : overriddenRuleFiles({ forDivisor: o.forDivisor, minFor: '5s' });
    if (rules.dir) started.push(async () => fs.rmSync(rules.dir, { recursive: true, force: true }));
    const prometheus = await startPrometheus({
      ...(o.prometheusBinary ? { binary: o.prometheusBinary } : {}),
      scrapeTargets: [{ job: EXPORTER_JOB, targets: o.exporterTargets, honorLabels: true }],
      ruleFiles: rules.files,
      scrapeInterval: o.scrapeInterval,
      evaluationInterval: o.evaluationInterval,
      alertmanagerUrl: alertmanager.url,
    });
    started.push(() => prometheus.stop());
    await prometheus.waitForTargetsUp(60_000, EXPORTER_JOB);
    // A rule the version cannot evaluate would never page; fail here rather than time out later.
    const bad = (await prometheus.rules()).flatMap((g) => g.rules).filter((r) => r.health === 'err');
    if (bad.length) throw new Error(`Prometheus ${prometheus.version.raw}: rules failing: ${bad.map((r) => `${r.name}: ${r.lastError}`).join('; ')}`);
    return { prometheus, alertmanager, receiver, pagesLog: o.pagesLog, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}
