import fs from 'node:fs';
import path from 'node:path';
import { startAlertChain } from '../harness/alert-path';
import type { Stack } from '../harness/stack';
import { artifactsDir, waitFor } from '../harness/proc';
import type { PrometheusServer } from '../harness/prometheus';
import { assertPrometheusBinaries, PrometheusVersion } from '../harness/prometheus-versions';

type Receiver = Stack['receiver'];

/** Fault-to-page times measured by the replays, collected for BENCHMARKS.md. */
export const measured: Array<{ scenario: string; alert: string; ms: number; prometheus?: string }> = [];

/**
 * Records one fault-to-page time. Entries of every Prometheus version share the scenario name
 * (bench/time-to-page.ts reads the first match: the stack's own Debian 2.42 path records first).
 */
export function recordTime(scenario: string, alert: string, ms: number, prometheus?: string): void {
  measured.push({ scenario, alert, ms, ...(prometheus ? { prometheus } : {}) });
  const on = prometheus ? ` [Prometheus ${prometheus}]` : '';
  process.stdout.write(`[e2e] ${scenario}${on}: fault → ${alert} delivered to the webhook in ${(ms / 1000).toFixed(1)} s\n`);
  fs.writeFileSync(path.join(artifactsDir(), 'e2e-times.json'), JSON.stringify(measured, null, 2));
}

/**
 * One Prometheus version's way from the exporter to a page: its Prometheus (the shipped rules with
 * the same test override), its own Alertmanager 0.25 with the example routing, its own webhook
 * receiver. Separate Alertmanagers, because two Prometheus servers sending identical alerts to one
 * would be deduplicated into a single page and hide a version that does not page.
 */
export interface AlertPath {
  /** Prometheus version label, e.g. "2.42" or "3.16". */
  label: string;
  prometheus: PrometheusServer;
  receiver: Receiver;
  stop(): Promise<void>;
}

/** The stack's own Prometheus (whatever binary it started), as an alert path. */
export function stackAlertPath(stack: Stack): AlertPath {
  return { label: `${stack.prometheus.version.major}.${stack.prometheus.version.minor}`, prometheus: stack.prometheus, receiver: stack.receiver, stop: async () => undefined };
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
  return { label: version.label, prometheus: chain.prometheus, receiver: chain.receiver, stop: chain.stop };
}

/** Waits for a firing notification of `alert` (matching labels) delivered after `since`; returns the delay. */
export async function waitForPage(via: { receiver: Receiver }, alert: string, since: number, timeoutMs: number, labels: Record<string, string> = {}, receiverPath?: string): Promise<{ ms: number; labels: Record<string, string>; annotations: Record<string, string> }> {
  const hit = await waitFor(`${alert} page`, async () => {
    for (const p of via.receiver.pages) {
      if (p.receivedAt < since || (receiverPath && p.path !== receiverPath)) continue;
      const a = p.alerts.find((x) => x.status === 'firing' && x.labels.alertname === alert && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
      if (a) return { ms: p.receivedAt - since, labels: a.labels, annotations: a.annotations };
    }
    return undefined;
  }, timeoutMs, 250);
  return hit;
}

/** Firing notifications of `alert` delivered since `since`. */
export function pagesSince(via: { receiver: Receiver }, alert: string, since: number, labels: Record<string, string> = {}): number {
  return via.receiver.pages.filter((p) => p.receivedAt >= since && p.alerts.some((x) => x.status === 'firing' && x.labels.alertname === alert && Object.entries(labels).every(([k, v]) => x.labels[k] === v))).length;
}

/** Names of alerts Prometheus currently has firing (not yet routed). */
export async function firingInPrometheus(via: { prometheus: PrometheusServer }): Promise<string[]> {
  return (await via.prometheus.alerts()).filter((a) => a.state === 'firing').map((a) => a.labels.alertname);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
