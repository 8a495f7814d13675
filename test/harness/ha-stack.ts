/**
 * High availability and sharding on loopback, built from the shipped examples/ha/ files (the exporter
 * replicas or shards themselves are started by exporter-process.ts): Prometheus servers whose configuration is an examples/ha/
 * Prometheus file with only addresses, intervals and rule paths replaced, and Alertmanagers
 * clustered over their gossip ports with the cluster flags of examples/ha/alertmanager.default.
 * Every process is ended by PID.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { AlertmanagerOptions, alertmanagerBinary, alertmanagerConfig } from './alertmanager';
import { freePorts } from './ports';
import { PrometheusServer, startPrometheus } from './prometheus';
import { Proc, startProc, waitFor } from './proc';
import { repoRoot } from '../../src/util/repo-root';

export const HA_EXAMPLES = path.join(repoRoot(), 'examples', 'ha');

// ---------------------------------------------------------------- clustered Alertmanagers

export interface AlertmanagerPeer {
  url: string;
  /** host:port of the API, for Prometheus' alertmanagers targets. */
  host: string;
  clusterAddress: string;
  proc: Proc;
  /** The cluster's view from this peer (GET /api/v2/status). */
  clusterStatus(): Promise<{ name: string; status: string; peers: Array<{ name: string; address: string }> }>;
  /** Alerts this peer holds (GET /api/v2/alerts), labels only. */
  alerts(): Promise<Array<{ labels: Record<string, string>; status: { state: string } }>>;
  stop(): Promise<void>;
  kill(): Promise<void>;
}

/**
 * The `--cluster.*` flags of examples/ha/alertmanager.default that are not addresses (those are
 * per host, and replaced by loopback ones here). Throws if the example lost its cluster flags.
 */
export function exampleClusterFlags(): { passThrough: string[]; has: Set<string> } {
  const text = fs.readFileSync(path.join(HA_EXAMPLES, 'alertmanager.default'), 'utf8');
  const m = /^ARGS="([^"]*)"/m.exec(text);
  if (!m) throw new Error('examples/ha/alertmanager.default: no ARGS="..." line');
  const flags = m[1].split(/\s+/).filter((f) => f.startsWith('--cluster.'));
  const has = new Set(flags.map((f) => f.split('=')[0]));
  for (const need of ['--cluster.listen-address', '--cluster.peer']) if (!has.has(need)) throw new Error(`examples/ha/alertmanager.default: ARGS lacks ${need}`);
  const perHost = new Set(['--cluster.listen-address', '--cluster.peer', '--cluster.advertise-address']);
  return { passThrough: flags.filter((f) => !perHost.has(f.split('=')[0])), has };
}

/**
 * `n` Alertmanager peers (`o.binary`, default Debian's 0.25) with the shipped routing (examples/alertmanager.yml, webhooks
 * pointed at `o.webhookBase`), each naming every other as --cluster.peer; resolves once every
 * peer sees all `n` members and reports the cluster ready.
 */
export async function startAlertmanagerCluster(n: number, o: AlertmanagerOptions): Promise<AlertmanagerPeer[]> {
  const ports = await freePorts(2 * n);
  const clusterAddrs = ports.slice(n).map((p) => `127.0.0.1:${p}`);
  const { passThrough } = exampleClusterFlags();
  const cfgText = alertmanagerConfig(o);
  const peers: AlertmanagerPeer[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `am${i}-`));
      fs.writeFileSync(path.join(dir, 'alertmanager.yml'), cfgText);
      const host = `127.0.0.1:${ports[i]}`;
      const proc = startProc(`alertmanager-${i}`, alertmanagerBinary(o), [
        `--config.file=${path.join(dir, 'alertmanager.yml')}`, `--storage.path=${dir}/data`, `--web.listen-address=${host}`,
        `--cluster.listen-address=${clusterAddrs[i]}`, `--cluster.advertise-address=${clusterAddrs[i]}`,
        ...clusterAddrs.filter((_, j) => j !== i).map((a) => `--cluster.peer=${a}`),
        ...passThrough, '--log.level=info',
      ]);
      const url = `http://${host}`;
      const getJson = async <T>(route: string): Promise<T> => {
        const r = await fetch(`${url}${route}`, { signal: AbortSignal.timeout(5000) });
        if (!r.ok) throw new Error(`${route}: HTTP ${r.status}`);
        return (await r.json()) as T;
      };
      const peer: AlertmanagerPeer = {
        url, host, clusterAddress: clusterAddrs[i], proc,
        async clusterStatus() {
          return (await getJson<{ cluster: { name: string; status: string; peers: Array<{ name: string; address: string }> } }>('/api/v2/status')).cluster;
        },
        alerts: () => getJson('/api/v2/alerts'),
        async stop() { await proc.stop(); fs.rmSync(dir, { recursive: true, force: true }); },
        async kill() { await proc.stop('SIGKILL'); },
      };
      peers.push(peer);
      await waitFor(`alertmanager-${i} ready`, async () => {
        if (proc.child.exitCode !== null) throw new Error(`alertmanager-${i} exited: ${proc.output().slice(-2000)}`);
        return (await fetch(`${url}/-/healthy`, { signal: AbortSignal.timeout(2000) })).ok;
      }, 30_000);
    }
    await waitFor('Alertmanager cluster formed', async () => {
      for (const p of peers) {
        const s = await p.clusterStatus();
        if (s.status !== 'ready' || s.peers.length !== n) return false;
      }
      return true;
    }, 120_000, 500);
    return peers;
  } catch (e) {
    for (const p of peers) await p.stop().catch(() => undefined);
    throw e;
  }
}

/**
 * The peer that notifies first: Alertmanager orders members by name, and the one at position i
 * waits i × --cluster.peer-timeout before it sends (and then only what the gossiped notification
 * log does not show as sent).
 */
export async function firstNotifier(peers: AlertmanagerPeer[]): Promise<AlertmanagerPeer> {
  const named = await Promise.all(peers.map(async (p) => ({ p, name: (await p.clusterStatus()).name })));
  named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return named[0].p;
}

// ---------------------------------------------------------------- Prometheus from an example file

export interface ExampleSubstitutions {
  /** Targets per job_name of the example; every job of the example must be given. */
  targets: Record<string, string[]>;
  /** host:port of every Alertmanager. */
  alertmanagers: string[];
  /** Absolute paths replacing the example's rule_files. */
  ruleFiles: string[];
  scrapeInterval: string;
  evaluationInterval: string;
}

interface ExamplePromConfig {
  global: { scrape_interval?: string; evaluation_interval?: string; external_labels?: Record<string, string> };
  rule_files: string[];
  alerting: { alert_relabel_configs?: unknown[]; alertmanagers: Array<{ static_configs: Array<{ targets: string[] }> }> };
  scrape_configs: Array<{ job_name: string; scrape_interval?: string; scrape_timeout?: string; static_configs: Array<{ targets: string[] }> }>;
}

/** An examples/ha/ Prometheus file with loopback addresses, test intervals and absolute rule paths; nothing else changed. */
export function examplePrometheusConfig(file: string, s: ExampleSubstitutions): { text: string; parsed: ExamplePromConfig } {
  const cfg = parse(fs.readFileSync(path.join(HA_EXAMPLES, file), 'utf8')) as ExamplePromConfig;
  cfg.global.scrape_interval = s.scrapeInterval;
  cfg.global.evaluation_interval = s.evaluationInterval;
  cfg.rule_files = s.ruleFiles;
  if (cfg.alerting.alertmanagers.length !== 1 || cfg.alerting.alertmanagers[0].static_configs.length !== 1) throw new Error(`${file}: expected one alertmanagers entry with one static_config`);
  cfg.alerting.alertmanagers[0].static_configs[0].targets = s.alertmanagers;
  for (const job of cfg.scrape_configs) {
    const t = s.targets[job.job_name];
    if (!t) throw new Error(`${file}: no targets given for job ${job.job_name}`);
    job.static_configs = [{ targets: t }];
    job.scrape_interval = s.scrapeInterval;
    job.scrape_timeout = s.scrapeInterval;
  }
  const unknown = Object.keys(s.targets).filter((j) => !cfg.scrape_configs.some((c) => c.job_name === j));
  if (unknown.length) throw new Error(`${file}: has no job ${unknown.join(', ')}`);
  return { text: stringify(cfg), parsed: cfg };
}

/**
 * The harness's Prometheus (free port, private TSDB, ended by PID), its configuration replaced by
 * the example's and reloaded; resolves once every target is up and no rule fails.
 */
export async function startPrometheusFromExample(file: string, s: ExampleSubstitutions): Promise<PrometheusServer & { kill(): Promise<void> }> {
  const { text } = examplePrometheusConfig(file, s);
  const prom = await startPrometheus({ scrapeTargets: [] });
  try {
    fs.writeFileSync(prom.configFile, text);
    const r = await fetch(`${prom.url}/-/reload`, { method: 'POST', signal: AbortSignal.timeout(30_000) });
    if (r.status !== 200) throw new Error(`${file}: reload refused: ${(await r.text()).slice(0, 1000)}`);
    await prom.waitForTargetsUp(90_000);
    await waitFor(`${file}: rules evaluated`, async () => {
      const rules = (await prom.rules()).flatMap((g) => g.rules);
      const bad = rules.filter((x) => x.health === 'err');
      if (bad.length) throw new Error(`rules failing: ${bad.map((x) => `${x.name}: ${x.lastError}`).join('; ')}`);
      return rules.length > 0 && rules.every((x) => x.health === 'ok');
    }, 60_000, 500);
  } catch (e) {
    await prom.stop().catch(() => undefined);
    throw e;
  }
  return Object.assign(prom, { kill: () => prom.proc.stop('SIGKILL') });
}
