import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePorts } from './ports';
import { Proc, startProc, waitFor } from './proc';

const execFileP = promisify(execFile);

/**
 * A real kube-apiserver (built by scripts/install-deploy-tools.sh from k8s.io/kubernetes) on Debian's etcd, both on
 * loopback. No controller-manager, scheduler or kubelet: objects are admitted, defaulted, validated and stored,
 * pods never run. Token auth as system:masters; the kubeconfig is written into `dir`.
 */
export interface KubeTools {
  etcd: string;
  kubeApiserver: string;
  kubectl: string;
}

/** The deploy tools scripts/install-deploy-tools.sh installs, as its deploy-tools/env.sh names them. */
export interface DeployTools extends KubeTools {
  helm: string;
  kustomize: string;
  /** The ServiceMonitor and PrometheusRule CRDs of the pinned Prometheus Operator. */
  crds: string;
}

export function deployTools(): DeployTools {
  const cacheDir = process.env.HSE_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'hypha-serve-exporter');
  const env = fs.readFileSync(path.join(cacheDir, 'deploy-tools', 'env.sh'), 'utf8');
  const pick = (k: string) => {
    const v = new RegExp(`^${k}="(.*)"$`, 'm').exec(env)?.[1];
    if (!v) throw new Error(`${k} missing in deploy-tools/env.sh: run scripts/install-deploy-tools.sh`);
    return v;
  };
  return {
    helm: pick('HELM'), kustomize: pick('KUSTOMIZE'), crds: pick('PROMETHEUS_OPERATOR_CRDS'),
    etcd: pick('ETCD'), kubeApiserver: pick('KUBE_APISERVER'), kubectl: pick('KUBECTL'),
  };
}

export interface CmdResult {
  code: number;
  stdout: string;
  /** stdout and stderr together, for messages */
  out: string;
}

export interface KubeApiserver {
  kubeconfig: string;
  /** kubectl with this server's kubeconfig */
  kubectl(args: string[], input?: string): Promise<CmdResult>;
  stop(): Promise<void>;
}

export async function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): Promise<CmdResult> {
  const p = execFileP(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 300_000, maxBuffer: 64 * 1024 * 1024 });
  if (opts.input !== undefined) {
    p.child.stdin?.end(opts.input);
  }
  try {
    const r = await p;
    return { code: 0, stdout: r.stdout.toString(), out: `${r.stdout.toString()}${r.stderr.toString()}` };
  } catch (e) {
    const err = e as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

export async function startKubeApiserver(tools: KubeTools, dir: string): Promise<KubeApiserver> {
  const [etcdClient, etcdPeer, api] = await freePorts(3);
  const procs: Proc[] = [];
  const stop = async () => {
    for (const p of procs.reverse()) await p.stop('SIGTERM', 5_000);
  };
  try {
    procs.push(startProc('etcd', tools.etcd, [
      '--data-dir', path.join(dir, 'etcd'),
      '--listen-client-urls', `http://127.0.0.1:${etcdClient}`, '--advertise-client-urls', `http://127.0.0.1:${etcdClient}`,
      '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster', `default=http://127.0.0.1:${etcdPeer}`,
    ]));

    const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const saKey = path.join(dir, 'sa.key');
    const saPub = path.join(dir, 'sa.pub');
    fs.writeFileSync(saKey, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    fs.writeFileSync(saPub, publicKey.export({ type: 'spki', format: 'pem' }));
    const token = crypto.randomBytes(24).toString('hex');
    const tokens = path.join(dir, 'tokens.csv');
    fs.writeFileSync(tokens, `${token},admin,admin,system:masters\n`, { mode: 0o600 });
    procs.push(startProc('kube-apiserver', tools.kubeApiserver, [
      '--etcd-servers', `http://127.0.0.1:${etcdClient}`, '--bind-address', '127.0.0.1', '--advertise-address', '127.0.0.1',
      '--secure-port', String(api), '--cert-dir', path.join(dir, 'certs'), '--token-auth-file', tokens,
      '--authorization-mode', 'AlwaysAllow',
      '--service-account-key-file', saPub, '--service-account-signing-key-file', saKey,
      '--service-account-issuer', 'https://kubernetes.default.svc', '--service-cluster-ip-range', '10.96.0.0/16',
    ]));

    const kubeconfig = path.join(dir, 'kubeconfig');
    fs.writeFileSync(kubeconfig, [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: local, cluster: {server: "https://127.0.0.1:${api}", insecure-skip-tls-verify: true}}]`,
      `users: [{name: admin, user: {token: "${token}"}}]`,
      'contexts: [{name: local, context: {cluster: local, user: admin}}]',
      'current-context: local',
      '',
    ].join('\n'), { mode: 0o600 });
    const kubectl = (args: string[], input?: string) => run(tools.kubectl, ['--kubeconfig', kubeconfig, ...args], { input });
    await waitFor('kube-apiserver /readyz', async () => {
      for (const p of procs) if (p.child.exitCode !== null) throw new Error(`${p.name} exited: ${p.output().slice(-2000)}`);
      return (await kubectl(['get', '--raw', '/readyz'])).code === 0;
    }, 180_000, 500);
    return { kubeconfig, kubectl, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
