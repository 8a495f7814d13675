import { AppJson, RayCluster, rayAppConfig, startRay, summarizeApp } from '../harness/ray';

jest.setTimeout(300_000);

const workerOf = (app: AppJson) => app.deployments.Worker;

describe('real Ray Serve harness', () => {
  let ray: RayCluster | undefined;

  afterAll(async () => {
    await ray?.stop();
  });

  it('deploys, scales the worker to zero, wakes it by HTTP, and leaves no process behind', async () => {
    ray = await startRay();
    const cluster = ray;
    // eslint-disable-next-line no-console
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

    const pids = cluster.sessionPids();
    expect(pids.length).toBeGreaterThan(3);
    const t3 = Date.now();
    await cluster.stop();
    ray = undefined;
    console.log(`stop: ${Date.now() - t3} ms`);
    const alive = pids.filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
    expect(alive).toEqual([]);
  });
});
