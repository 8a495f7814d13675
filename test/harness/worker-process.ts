/**
 * The worker stand-in (startWorkerStandIn) in a process of its own, so a test can freeze it with
 * SIGSTOP: Hypha keeps listing a frozen client for a while, which is how a hung BioEngine worker
 * looks from outside. Run from dist: `node dist/test/harness/worker-process.js`; reads
 * HYPHA_URL, HYPHA_TOKEN_FILE, WORKER_CLIENT_ID and optionally WORKER_VERSION (get_status's
 * bioengine_version; the stand-in's default when unset); prints "READY <service id>".
 */
import fs from 'node:fs';
import { startWorkerStandIn } from './hypha-registrant';

async function main(): Promise<void> {
  const token = fs.readFileSync(process.env.HYPHA_TOKEN_FILE ?? '', 'utf8').trim();
  const w = await startWorkerStandIn({
    serverUrl: process.env.HYPHA_URL ?? '',
    token,
    clientId: process.env.WORKER_CLIENT_ID ?? 'frozen-worker',
    apps: { 'some-app': { status: 'RUNNING', deployed_by_worker_client_id: process.env.WORKER_CLIENT_ID } },
    ...(process.env.WORKER_VERSION ? { version: process.env.WORKER_VERSION } : {}),
  });
  process.stdout.write(`READY ${w.serviceId}\n`);
  process.on('SIGTERM', () => void w.disconnect().finally(() => process.exit(0)));
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`worker-process: ${String(e)}\n`);
    process.exit(1);
  });
}
