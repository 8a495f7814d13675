import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports';
import { Proc, startProc, waitFor } from './proc';
import { repoRoot } from '../../src/util/repo-root';

/**
 * A real Hypha server (hypha==0.21.137 from .venv/hypha) on a loopback port,
 * optionally with a moto S3 endpoint so the artifact manager exists.
 */
export interface HyphaOptions {
  /** Fixed server id; undefined lets Hypha pick a random one on every start. */
  serverId?: string;
  /** Start moto and pass --enable-s3 (gives `public/artifact-manager`). */
  enableS3?: boolean;
  port?: number;
  /** Fixed so tokens and reconnection tokens survive restarts (hypha.md §7.9). */
  jwtSecret?: string;
  rootToken?: string;
  /** Readiness budget per start. */
  readyTimeoutMs?: number;
}

export interface HyphaHandle {
  /** http://127.0.0.1:PORT */
  url: string;
  /** ws://127.0.0.1:PORT/ws */
  wsUrl: string;
  port: number;
  rootToken: string;
  jwtSecret: string;
  /** The fixed server id of the current run, undefined when random. */
  serverId?: string;
  /** S3 endpoint (moto) when enableS3. */
  s3Url?: string;
  /** Milliseconds from spawn to /health/readiness 200, one entry per start. */
  startupMs: number[];
  running(): boolean;
  /** PID of the running server process (for SIGSTOP/SIGCONT freezes). */
  pid(): number | undefined;
  /** Stops Hypha only (an outage); startServer() brings it back on the same port. */
  stopServer(signal?: NodeJS.Signals): Promise<void>;
  /**
   * Starts Hypha again; options merge over the current ones (pass serverId: undefined for a random id;
   * a new jwtSecret is what an unset HYPHA_JWT_SECRET does at every upstream start).
   */
  startServer(newOpts?: Partial<Pick<HyphaOptions, 'serverId' | 'jwtSecret'>>): Promise<void>;
  /** stopServer() + startServer(newOpts): same port, root token, database and S3 (and JWT secret unless given). */
  restart(newOpts?: Partial<Pick<HyphaOptions, 'serverId' | 'jwtSecret'>>): Promise<void>;
  /** Stops Hypha and moto and removes the data directory. */
  stop(): Promise<void>;
  /** Server log so far (tokens never appear in it: they are passed as arguments, not logged). */
  output(): string;
}

const HYPHA_PY = () => path.join(repoRoot(), '.venv', 'hypha', 'bin', 'python');
const S3_PY = () => path.join(repoRoot(), '.venv', 's3', 'bin', 'python');

// §1.6: >= 64 chars skips Hypha's weak-substring check entirely. A leading
// "-" would make argparse read the token as an option, so it starts with a letter.
export function newRootToken(): string {
  return `t${crypto.randomBytes(48).toString('base64url')}`;
}

async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

async function startMoto(): Promise<{ proc: Proc; url: string }> {
  const port = await freePort();
  const proc = startProc('moto', S3_PY(), ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)]);
  const url = `http://127.0.0.1:${port}`;
  await waitFor('moto S3 endpoint', async () => {
    if (proc.child.exitCode !== null) throw new Error(`moto exited: ${proc.output().slice(-2000)}`);
    return httpOk(`${url}/moto-api/`);
  }, 30_000, 100);
  return { proc, url };
}

export async function startHypha(opts: HyphaOptions = {}): Promise<HyphaHandle> {
  const port = opts.port ?? (await freePort());
  let jwtSecret = opts.jwtSecret ?? crypto.randomBytes(24).toString('base64url');
  const rootToken = opts.rootToken ?? newRootToken();
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hypha-test-'));
  let serverId = opts.serverId;
  let moto: { proc: Proc; url: string } | undefined;
  if (opts.enableS3) moto = await startMoto();

  let proc: Proc | undefined;
  const startupMs: number[] = [];
  const url = `http://127.0.0.1:${port}`;

  const startServer = async (newOpts?: Partial<Pick<HyphaOptions, 'serverId' | 'jwtSecret'>>): Promise<void> => {
    if (proc && proc.child.exitCode === null && proc.child.signalCode === null) throw new Error('hypha already running');
    if (newOpts && 'serverId' in newOpts) serverId = newOpts.serverId;
    if (newOpts?.jwtSecret !== undefined) jwtSecret = newOpts.jwtSecret;
    const args = ['-m', 'hypha.server', '--host', '127.0.0.1', '--port', String(port), `--root-token=${rootToken}`,
      // A file database keeps artifacts across restarts (a temp one would vanish with the process).
      '--database-uri', `sqlite+aiosqlite:///${path.join(dataDir, 'hypha.db')}`];
    if (serverId !== undefined) args.push('--server-id', serverId);
    if (moto) {
      args.push('--enable-s3', '--endpoint-url', moto.url, '--endpoint-url-public', moto.url,
        '--access-key-id', 'test', '--secret-access-key', 'test', '--region-name', 'us-east-1',
        '--workspace-bucket', 'hypha-workspaces', '--s3-admin-type', 'generic');
    }
    const env: NodeJS.ProcessEnv = { ...process.env, HYPHA_JWT_SECRET: jwtSecret, HYPHA_LOGLEVEL: 'WARNING' };
    delete env.HYPHA_SERVER_ID;
    const t0 = Date.now();
    const p = startProc('hypha', HYPHA_PY(), args, { env, cwd: dataDir });
    proc = p;
    await waitFor('hypha /health/readiness', async () => {
      if (p.child.exitCode !== null) throw new Error(`hypha exited (${p.child.exitCode}): ${p.output().slice(-3000)}`);
      return httpOk(`${url}/health/readiness`);
    }, readyTimeoutMs, 100);
    startupMs.push(Date.now() - t0);
  };

  const stopServer = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    if (proc) await proc.stop(signal, 10_000);
  };

  const handle: HyphaHandle = {
    url,
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    port,
    rootToken,
    get jwtSecret() { return jwtSecret; },
    get serverId() { return serverId; },
    s3Url: moto?.url,
    startupMs,
    running: () => proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null,
    pid: () => (handle.running() ? proc?.pid : undefined),
    stopServer,
    startServer,
    async restart(newOpts) {
      await stopServer();
      await startServer(newOpts);
    },
    async stop() {
      await stopServer();
      if (moto) await moto.proc.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
    output: () => proc?.output() ?? '',
  };
  try {
    await startServer();
  } catch (e) {
    await handle.stop();
    throw e;
  }
  return handle;
}
