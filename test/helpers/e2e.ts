import fs from 'node:fs';
import path from 'node:path';
import type { Stack } from '../harness/stack';
import { artifactsDir, waitFor } from '../harness/proc';

/** Fault-to-page times measured by the replays, collected for BENCHMARKS.md. */
export const measured: Array<{ scenario: string; alert: string; ms: number }> = [];

export function recordTime(scenario: string, alert: string, ms: number): void {
  measured.push({ scenario, alert, ms });
  process.stdout.write(`[e2e] ${scenario}: fault → ${alert} delivered to the webhook in ${(ms / 1000).toFixed(1)} s\n`);
  fs.writeFileSync(path.join(artifactsDir(), 'e2e-times.json'), JSON.stringify(measured, null, 2));
}

/** Waits for a firing notification of `alert` (matching labels) delivered after `since`; returns the delay. */
export async function waitForPage(stack: Stack, alert: string, since: number, timeoutMs: number, labels: Record<string, string> = {}, receiverPath?: string): Promise<{ ms: number; labels: Record<string, string>; annotations: Record<string, string> }> {
  const hit = await waitFor(`${alert} page`, async () => {
    for (const p of stack.receiver.pages) {
      if (p.receivedAt < since || (receiverPath && p.path !== receiverPath)) continue;
      const a = p.alerts.find((x) => x.status === 'firing' && x.labels.alertname === alert && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
      if (a) return { ms: p.receivedAt - since, labels: a.labels, annotations: a.annotations };
    }
    return undefined;
  }, timeoutMs, 250);
  return hit;
}

/** Firing notifications of `alert` delivered since `since`. */
export function pagesSince(stack: Stack, alert: string, since: number, labels: Record<string, string> = {}): number {
  return stack.receiver.pages.filter((p) => p.receivedAt >= since && p.alerts.some((x) => x.status === 'firing' && x.labels.alertname === alert && Object.entries(labels).every(([k, v]) => x.labels[k] === v))).length;
}

/** Names of alerts Prometheus currently has firing (not yet routed). */
export async function firingInPrometheus(stack: Stack): Promise<string[]> {
  return (await stack.prometheus.alerts()).filter((a) => a.state === 'firing').map((a) => a.labels.alertname);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
