import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { AppJson, RayCluster, rayAppConfig, startRay, summarizeApp } from '../harness/ray';

jest.setTimeout(300_000);

/** Zombies count as gone: they hold no resources, only an exit status for a parent to collect. */
function isLive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

const workerOf = (app: AppJson) => app.deployments.Worker;

describe('real Ray Serve harness', () => {
  let ray: RayCluster | undefined;

  afterAll(async () => {
    await ray?.stop();
  });

  it('deploys, scales the worker to zero, wakes it by HTTP, and leaves no process behind', async () => {
    ray = await startRay();
    const cluster = ray;
    console.log(`ray ${cluster.rayVersion}: start until Serve REST API answered ${cluster.startMs} ms`);
    expect(cluster.headNodeIp).toBe('127.0.0.1');

    const before = await cluster.getApplications();
    expect(before.applications).toEqual({});

    const t0 = Date.now();
    await cluster.deploy(rayAppConfig('two-step.yaml'));
    const running = await cluster.waitApp('two-step', (a) => a.status === 'RUNNING', 180_000);
    const firstRunningMs = Date.now() - t0;
    console.log(`first deploy until RUNNING: ${firstRunningMs} ms; ${JSON.stringify(summarizeApp(running))}`);
    expect(running.deployments.Front.replicas.length).toBe(1);

    const t1 = Date.now();
    const zero = await cluster.waitApp(
      'two-step',
      (a) => workerOf(a).target_num_replicas === 0 && workerOf(a).replicas.length === 0,
      120_000,
    );
    console.log(`RUNNING until Worker at zero replicas: ${Date.now() - t1} ms`);
    expect(zero.status).toBe('RUNNING');
    expect(workerOf(zero).status).toBe('HEALTHY');
    expect(workerOf(zero).status_trigger).toBe('DOWNSCALE_COMPLETED');

    const healthz = await cluster.request('/-/healthz');
    expect(healthz).toMatchObject({ status: 200, body: 'success' });

    const t2 = Date.now();
    const reply = await cluster.request('/two-step?text=wake', 120_000);
    console.log(`cold request through Front to scaled-to-zero Worker: ${Date.now() - t2} ms`);
    expect(reply).toMatchObject({ status: 200, body: 'WAKE' });
    const awake = await cluster.waitApp('two-step', (a) => workerOf(a).replicas.length > 0, 30_000);
    expect(workerOf(awake).target_num_replicas).toBeGreaterThanOrEqual(1);

    // Ray source down, Ray and Serve still up. A keep-alive socket to the killed dashboard may be reset rather than refused.
    await cluster.stopDashboard();
    await expect(cluster.getApplicationsRaw()).rejects.toThrow(/ECONNREFUSED|ECONNRESET/);
    expect(await cluster.request('/two-step?text=still')).toMatchObject({ status: 200, body: 'STILL' });
    const t4 = Date.now();
    await cluster.restartDashboard();
    console.log(`dashboard restart until the REST API answered: ${Date.now() - t4} ms`);
    expect((await cluster.getApplications()).applications['two-step'].status).toBe('RUNNING');

    const pids = cluster.sessionPids();
    expect(pids.length).toBeGreaterThan(5);
    const t3 = Date.now();
    await cluster.stop();
    ray = undefined;
    console.log(`stop: ${Date.now() - t3} ms`);
    expect(pids.filter(isLive)).toEqual([]);
    const { stdout } = await promisify(execFile)('ps', ['-eo', 'pid,stat,args']);
    expect(stdout.split('\n').filter((l) => l.includes(cluster.tempDir))).toEqual([]);
    expect(fs.existsSync(cluster.tempDir)).toBe(false);
  });
});
