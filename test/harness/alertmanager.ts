/**
 * A real Alertmanager (Debian's /usr/bin/prometheus-alertmanager, 0.25, or another build such as
 * 0.35 from scripts/setup-engines.sh, see engines.ts) with the shipped routing example, its webhook
 * URLs pointed at a local receiver and its timers shortened for tests. Free loopback ports, private
 * data dir, ended by PID. The flags used here mean the same in 0.25 and 0.35; a 0.35 built from the
 * module proxy has no web UI (its bundle is not in the module) and the same /api/v2, /-/ready.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { freePorts } from './ports';
import { Proc, startProc, waitFor } from './proc';
import { repoRoot } from '../../src/util/repo-root';

export const EXAMPLE_WEBHOOK_BASE = 'http://127.0.0.1:5001';

export interface AlertmanagerOptions {
  /** Replaces the example's webhook base (http://127.0.0.1:5001). */
  webhookBase: string;
  /** Test override of route timers; defaults keep the example's values. */
  groupWait?: string;
  groupInterval?: string;
  repeatInterval?: string;
  /** The Alertmanager binary (default: $ALERTMANAGER_BIN, else Debian's 0.25). */
  binary?: string;
}

export const DEFAULT_ALERTMANAGER_BIN = '/usr/bin/prometheus-alertmanager';

/** The binary a start with these options runs. */
export function alertmanagerBinary(o: Pick<AlertmanagerOptions, 'binary'>): string {
  return o.binary ?? process.env.ALERTMANAGER_BIN ?? DEFAULT_ALERTMANAGER_BIN;
}

interface Route {
  group_wait?: string;
  group_interval?: string;
  repeat_interval?: string;
  routes?: Route[];
  [k: string]: unknown;
}

function retime(r: Route, o: AlertmanagerOptions): void {
  if (o.groupWait && r.group_wait !== undefined) r.group_wait = o.groupWait;
  if (o.groupInterval && r.group_interval !== undefined) r.group_interval = o.groupInterval;
  if (o.repeatInterval && r.repeat_interval !== undefined) r.repeat_interval = o.repeatInterval;
  for (const c of r.routes ?? []) retime(c, o);
}

/** The example config with local webhook URLs and (optionally) short timers. */
export function alertmanagerConfig(o: AlertmanagerOptions): string {
  const text = fs.readFileSync(path.join(repoRoot(), 'examples', 'alertmanager.yml'), 'utf8').split(EXAMPLE_WEBHOOK_BASE).join(o.webhookBase);
  const cfg = parse(text) as { route: Route };
  if (o.groupWait) cfg.route.group_wait = o.groupWait;
  if (o.groupInterval) cfg.route.group_interval = o.groupInterval;
  if (o.repeatInterval) cfg.route.repeat_interval = o.repeatInterval;
  retime(cfg.route, o);
  return stringify(cfg);
}

export interface Alertmanager {
  url: string;
  /** The binary that runs. */
  binary: string;
  proc: Proc;
  stop(): Promise<void>;
}

export async function startAlertmanager(o: AlertmanagerOptions): Promise<Alertmanager> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'am-'));
  const cfgFile = path.join(dir, 'alertmanager.yml');
  fs.writeFileSync(cfgFile, alertmanagerConfig(o));
  const [port, clusterPort] = await freePorts(2);
  const binary = alertmanagerBinary(o);
  const proc = startProc('alertmanager', binary, [
    `--config.file=${cfgFile}`, `--storage.path=${dir}/data`, `--web.listen-address=127.0.0.1:${port}`,
    `--cluster.listen-address=127.0.0.1:${clusterPort}`, '--cluster.advertise-address=127.0.0.1:' + clusterPort, '--log.level=warn',
  ]);
  const url = `http://127.0.0.1:${port}`;
  await waitFor('alertmanager ready', async () => {
    if (proc.child.exitCode !== null) throw new Error(`${binary} exited: ${proc.output().slice(-2000)}`);
    return (await fetch(`${url}/-/ready`)).ok;
  }, 30_000);
  return {
    url,
    binary,
    proc,
    async stop() {
      await proc.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
