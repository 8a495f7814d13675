import fs from 'node:fs';
import path from 'node:path';
import { RuleEngine, startAlertChain, startEngineChain } from '../harness/alert-path';
import type { Stack } from '../harness/stack';
import { artifactsDir, waitFor } from '../harness/proc';
import type { PrometheusServer, Sample } from '../harness/prometheus';
import { assertPrometheusBinaries, PrometheusVersion } from '../harness/prometheus-versions';

type Receiver = Stack['receiver'];

/** Fault-to-page times measured by the replays, collected for BENCHMARKS.md. */
export const measured: Array<{ scenario: string; alert: string; ms: number; prometheus?: string }> = [];

/**
 * Records one fault-to-page time. Entries of every alert path share the scenario name; `prometheus`
 * is the path's label: a Prometheus version ("2.42", "3.16") or another engine ("Thanos 0.42.4",
 * "VictoriaMetrics 1.151.0"). bench/time-to-page.ts reads the first match: the stack's own Debian
 * 2.42 path records first.
 */
export function recordTime(scenario: string, alert: string, ms: number, prometheus?: string): void {
  measured.push({ scenario, alert, ms, ...(prometheus ? { prometheus } : {}) });
  const on = prometheus ? (/^\d/.test(prometheus) ? ` [Prometheus ${prometheus}]` : ` [${prometheus}]`) : '';
  process.stdout.write(`[e2e] ${scenario}${on}: fault → ${alert} delivered to the webhook in ${(ms / 1000).toFixed(1)} s\n`);
  fs.writeFileSync(path.join(artifactsDir(), 'e2e-times.json'), JSON.stringify(measured, null, 2));
}

/**
 * One rule engine's way from the exporter to a page: a Prometheus version, Thanos Ruler or vmalert
 * (the shipped rules with the same test override), its own Alertmanager 0.25 with the example
 * routing, its own webhook receiver. Separate Alertmanagers, because two engines sending identical
 * alerts to one would be deduplicated into a single page and hide an engine that does not page.
 */
export interface AlertPath {
  /** A Prometheus version ("2.42", "3.16") or another engine ("Thanos 0.42.4", "VictoriaMetrics 1.151.0"). */
  label: string;
  /** How the engine is wired and its exact version, for the log. */
  describe: string;
  receiver: Receiver;
  /** Instant query of the series the engine's rules read (its Prometheus, Thanos query, VictoriaMetrics). */
  vector(expr: string): Promise<Sample[]>;
  /** Names of the alerts the engine has firing (its /api/v1/alerts; not yet routed). */
  firing(): Promise<string[]>;
  /**
   * How much later than Prometheus this engine evaluates what it sees (the vmalert rules' eval_delay):
   * a window in which a look-alike must stay silent is extended by it.
   */
  lagMs: number;
  stop(): Promise<void>;
}

function prometheusPath(label: string, prometheus: PrometheusServer, receiver: Receiver, stop: () => Promise<void>): AlertPath {
  return {
    label, describe: `Prometheus ${prometheus.version.raw}`, receiver, lagMs: 0, stop,
    vector: (expr) => prometheus.vector(expr),
    firing: async () => (await prometheus.alerts()).filter((a) => a.state === 'firing').map((a) => a.labels.alertname),
  };
}

/** The stack's own Prometheus (whatever binary it started), as an alert path. */
export function stackAlertPath(stack: Stack): AlertPath {
  return prometheusPath(`${stack.prometheus.version.major}.${stack.prometheus.version.minor}`, stack.prometheus, stack.receiver, async () => undefined);
}

export interface ExtraPathOptions {
  forDivisor: number;
  scrapeInterval: string;
  evaluationInterval: string;
  groupWait?: string;
  groupInterval?: string;
}

/**
 * A second alert path on another Prometheus version (harness/alert-path.ts, as the stack builds its own),
 * scraping the stack's exporter: the same real faults are then evaluated by both versions at once, so a
 * replay costs no extra time per version.
 * Options must match the stack's (same rule override, intervals and Alertmanager timers).
 */
export async function startAlertPath(stack: Stack, version: PrometheusVersion, o: ExtraPathOptions): Promise<AlertPath> {
  assertPrometheusBinaries(version);
  const chain = await startAlertChain({
    ...o, exporterTargets: [new URL(stack.exporterUrl).host], prometheusBinary: version.prometheus,
    pagesLog: path.join(artifactsDir(), `pages-prometheus-${version.label}-${Date.now()}.log`),
  });
  return prometheusPath(version.label, chain.prometheus, chain.receiver, chain.stop);
}

/**
 * An alert path on another rule engine (Thanos Ruler through its querier, or vmalert on a
 * single-node VictoriaMetrics), scraping the stack's exporter with the same rule files, evaluation
 * interval and Alertmanager timers as the Prometheus paths, so the same real faults are judged by it.
 */
export async function startEngineAlertPath(stack: Stack, engine: RuleEngine, o: ExtraPathOptions): Promise<AlertPath> {
  const chain = await startEngineChain(engine, {
    ...o, exporterTargets: [new URL(stack.exporterUrl).host],
    pagesLog: path.join(artifactsDir(), `pages-${engine}-${Date.now()}.log`),
  });
  return { label: chain.label, describe: chain.describe, receiver: chain.receiver, vector: chain.vector, firing: chain.firing, lagMs: chain.lagMs, stop: chain.stop };
}

/** Waits for a firing notification of `alert` (matching labels) delivered after `since`; returns the delay. */
export async function waitForPage(
  via: { receiver: Receiver; firing?: () => Promise<string[]> }, alert: string, since: number, timeoutMs: number, labels: Record<string, string> = {}, receiverPath?: string,
): Promise<{ ms: number; labels: Record<string, string>; annotations: Record<string, string> }> {
  try {
    return await waitFor(`${alert} page`, async () => {
      for (const p of via.receiver.pages) {
        if (p.receivedAt < since || (receiverPath && p.path !== receiverPath)) continue;
        const a = p.alerts.find((x) => x.status === 'firing' && x.labels.alertname === alert && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
        if (a) return { ms: p.receivedAt - since, labels: a.labels, annotations: a.annotations };
      }
      return undefined;
    }, timeoutMs, 250);
  } catch (e) {
    // What the path did instead, so a page that never came can be told from one notified before the fault or held back.
    const seen = via.receiver.pages.flatMap((p) => p.alerts.filter((x) => x.labels.alertname === alert)
      .map((x) => `${x.status} at ${p.path} ${((p.receivedAt - since) / 1000).toFixed(1)} s ${JSON.stringify(x.labels)}`));
    const firing = via.firing ? await via.firing().catch((err: unknown) => [`(unreadable: ${String(err)})`]) : [];
    throw new Error(`${e instanceof Error ? e.message : String(e)}; notifications of ${alert} (seconds after the fault): [${seen.join('; ')}]; `
      + `firing in the engine now: [${firing.join(', ')}]`);
  }
}

/** Firing notifications of `alert` delivered since `since`. */
export function pagesSince(via: { receiver: Receiver }, alert: string, since: number, labels: Record<string, string> = {}): number {
  return via.receiver.pages.filter((p) => p.receivedAt >= since && p.alerts.some((x) => x.status === 'firing' && x.labels.alertname === alert && Object.entries(labels).every(([k, v]) => x.labels[k] === v))).length;
}

/** Names of alerts the path's engine currently has firing (not yet routed). */
export async function firingInEngine(via: Pick<AlertPath, 'firing'>): Promise<string[]> {
  return via.firing();
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
