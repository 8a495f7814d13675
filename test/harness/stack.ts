/**
 * The whole chain on loopback, started once and shared: a real Hypha server (with
 * its artifact manager on moto S3), a real Ray Serve cluster, the exporter CLI,
 * and the alert path (alert-path.ts): Prometheus with the shipped rules (or their
 * test override), Alertmanager with the example routing, and a webhook receiver.
 * Used by the end-to-end replays and by the demo. Every process ends by PID.
 */
import fs from 'node:fs';
import path from 'node:path';
import { AlertChain, startAlertChain } from './alert-path';
import type { Alertmanager } from './alertmanager';
import { spawnExporter } from './exporter-process';
import { HyphaHandle, startHypha } from './hypha';
import type { PrometheusServer } from './prometheus';
import { artifactsDir, Proc, startTogether } from './proc';
import { RayCluster, startRay } from './ray';
import { isSeq, parseDocument } from 'yaml';
import { MIN_UNCERTAIN_WAIT } from '../../src/config/hypha-schema';
import { durationMs } from '../../src/config/validators';
import { repoRoot } from '../../src/util/repo-root';

export interface StackOptions {
  /** Divide every alert's `for:` by this (1 = shipped rules). */
  forDivisor: number;
  /** Exporter sampling interval and upstream timeout. */
  sampleInterval: string;
  sampleTimeout: string;
  scrapeInterval: string;
  evaluationInterval: string;
  /** Alertmanager route timers (undefined = the example's). */
  groupWait?: string;
  groupInterval?: string;
  /** canary.witness_max of the watched artifact manager (undefined: the shipped default, no bound). */
  canaryWitnessMax?: string;
  /** canary.self_healing_release of the watched artifact manager (undefined: the shipped default, 5m). */
  canarySelfHealingRelease?: string;
  /** Hypha's fixed server id at start (restarts may change it). */
  hyphaServerId?: string;
  /** Extra YAML appended to the exporter config (e.g. registration mapping). */
  exporterExtraConfig?: string;
  log?: (msg: string) => void;
}

export interface Stack {
  hypha: HyphaHandle;
  ray: RayCluster;
  exporter: Proc;
  exporterUrl: string;
  exporterConfigFile: string;
  /** The exporter's --storage.path (witnesses and registration history survive its restart). */
  exporterStoragePath: string;
  /** The Hypha root token in a 0600 file, for app proxies that register themselves. */
  hyphaTokenFile: string;
  prometheus: PrometheusServer;
  alertmanager: Alertmanager;
  receiver: AlertChain['receiver'];
  pagesLog: string;
  stop(): Promise<void>;
}

/**
 * The exporter config of a real-stack run: one Ray cluster, Hypha (token in
 * $HYPHA_TOKEN), the artifact manager watched. Without canaryWitnessMax
 * the canary keeps the shipped default.
 */
export function exporterConfig(
  o: Pick<StackOptions, 'sampleInterval' | 'sampleTimeout' | 'exporterExtraConfig' | 'canarySelfHealingRelease'> & {
    canaryWitnessMax?: string; cluster?: string; rayTimeout?: string;
    /** The rules' `for:` divisor of the run: the exporter's page waits are scaled alike (floored at their 30 s minimum). */
    forDivisor?: number;
  },
  hypha: HyphaHandle,
  ray: RayCluster,
): string {
  const text = [
    'global:',
    `  interval: ${o.sampleInterval}`,
    `  timeout: ${o.sampleTimeout}`,
    'ray_clusters:',
    `  - name: ${o.cluster ?? 'local'}`,
    `    dashboard_url: ${ray.dashboardUrl}`,
    ...(o.rayTimeout === undefined ? [] : [`    timeout: ${o.rayTimeout}`]),
    'hypha:',
    '  name: local',
    `  server_url: ${hypha.url}`,
    '  bearer_token_env: HYPHA_TOKEN',
    'watched_services:',
    '  - service: public/artifact-manager',
    ...(o.canaryWitnessMax === undefined && o.canarySelfHealingRelease === undefined ? [] : ['    canary:']),
    ...(o.canaryWitnessMax === undefined ? [] : [`      witness_max: ${o.canaryWitnessMax}`]),
    ...(o.canarySelfHealingRelease === undefined ? [] : [`      self_healing_release: ${o.canarySelfHealingRelease}`]),
    o.exporterExtraConfig ?? '',
  ].join('\n') + '\n';
  return scalePageWaits(text, o.forDivisor ?? 1);
}

/**
 * The exporter decides the pages' waits (hypha_registration.page_waits; watched_services[].page_waits and
 * probe_window): a run whose rules' `for:` is divided gets them divided alike, the incident-1 waits never
 * below the exporter's minimum.
 */
function scalePageWaits(text: string, divisor: number): string {
  if (divisor === 1) return text;
  const doc = parseDocument(text);
  if (doc.getIn(['hypha_registration', 'page_waits', 'uncertain']) !== undefined) return text;
  const wait = `${Math.round(Math.max(durationMs(MIN_UNCERTAIN_WAIT), 300_000 / divisor) / 1000)}s`;
  doc.setIn(['hypha_registration', 'page_waits', 'uncertain'], wait);
  doc.setIn(['hypha_registration', 'page_waits', 'worker'], wait);
  const services = doc.get('watched_services');
  if (isSeq(services)) {
    services.items.forEach((_s, i) => {
      if (doc.getIn(['watched_services', i, 'page_waits']) === undefined) doc.setIn(['watched_services', i, 'page_waits', 'uncertain'], `${Math.round(120 / divisor)}s`);
      if (doc.getIn(['watched_services', i, 'probe_window']) === undefined) doc.setIn(['watched_services', i, 'probe_window'], `${Math.round(180 / divisor)}s`);
    });
  }
  return doc.toString();
}

export async function startStack(o: StackOptions): Promise<Stack> {
  const log = o.log ?? ((m: string) => process.stdout.write(`${m}\n`));
  const started: { stop(): Promise<void> }[] = [];
  const stopAll = async () => {
    for (const s of started.reverse()) await s.stop().catch(() => undefined);
  };
  const dir = path.join(repoRoot(), '.tmp', `stack-${process.pid}-${Date.now()}`);
  try {
    const t0 = Date.now();
    const since = () => `+${((Date.now() - t0) / 1000).toFixed(1)}s`;
    log(`[stack ${since()}] starting Hypha (artifact manager on moto S3) and Ray Serve`);
    const [hypha, ray] = await startTogether([startHypha({ enableS3: true, serverId: o.hyphaServerId }), startRay()]);
    started.push(hypha, ray);
    log(`[stack ${since()}] Hypha ${hypha.url}, Ray dashboard ${ray.dashboardUrl}`);

    fs.mkdirSync(dir, { recursive: true });
    const hyphaTokenFile = path.join(dir, 'hypha-token');
    fs.writeFileSync(hyphaTokenFile, hypha.rootToken, { mode: 0o600 });
    const exporterConfigFile = path.join(dir, 'exporter.yml');
    const exporterStoragePath = path.join(dir, 'data');
    fs.writeFileSync(exporterConfigFile, exporterConfig(o, hypha, ray));
    const exporter = await spawnExporter({
      name: 'stack-exporter', config: { file: exporterConfigFile }, storagePath: exporterStoragePath, env: { HYPHA_TOKEN: hypha.rootToken },
    });
    started.push(exporter);
    log(`[stack ${since()}] exporter ${exporter.url}`);

    const pagesLog = path.join(artifactsDir(), `pages-${Date.now()}.log`);
    const chain = await startAlertChain({
      exporterTargets: [exporter.instance], forDivisor: o.forDivisor, scrapeInterval: o.scrapeInterval, evaluationInterval: o.evaluationInterval,
      groupWait: o.groupWait, groupInterval: o.groupInterval, pagesLog,
    });
    started.push(chain);
    log(`[stack ${since()}] Prometheus ${chain.prometheus.url} scraping the exporter, rules loaded; Alertmanager ${chain.alertmanager.url} → `
      + `webhook receiver ${chain.receiver.url} (pages logged to ${pagesLog})`);
    return {
      hypha, ray, exporter: exporter.proc, exporterUrl: exporter.url, exporterConfigFile, exporterStoragePath, hyphaTokenFile,
      prometheus: chain.prometheus, alertmanager: chain.alertmanager, receiver: chain.receiver, pagesLog,
      stop: async () => { await stopAll(); fs.rmSync(dir, { recursive: true, force: true }); },
    };
  } catch (e) {
    await stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}
