import { parseServeInstance } from '../../src/sources/ray-serve/parse';
import { SourceError } from '../../src/util/errors';

function app(over: Record<string, unknown> = {}, deployments: Record<string, unknown> = {}) {
  return { name: 'a', route_prefix: '/a', docs_path: null, status: 'RUNNING', message: '', last_deployed_time_s: 1, deployments, ...over };
}
function dep(over: Record<string, unknown> = {}) {
  return { name: 'D', status: 'HEALTHY', message: '', deployment_config: { name: 'D', num_replicas: 1 }, replicas: [{ replica_id: 'x', state: 'RUNNING', start_time_s: 1 }], ...over };
}

describe('parseServeInstance on malformed or unusual input', () => {
  it('rejects non-objects and missing applications with class schema', () => {
    for (const body of [null, 42, 'x', [], {}]) {
      try {
        parseServeInstance(body);
        throw new Error('no error');
      } catch (e) {
        expect(e).toBeInstanceOf(SourceError);
        expect((e as SourceError).errorClass).toBe('schema');
      }
    }
    expect(() => parseServeInstance({ applications: [1, 2] })).toThrow(/not an object/);
  });

  it('accepts the empty-Serve reply', () => {
    const p = parseServeInstance({ deploy_mode: 'MULTI_APP', controller_info: {}, proxies: {}, applications: {}, target_capacity: null });
    expect(p.apps).toEqual([]);
    expect(p.proxies).toEqual([]);
    expect(p.malformed).toEqual([]);
  });

  it('tolerates null proxies and legacy http_proxies', () => {
    expect(parseServeInstance({ applications: {}, proxies: null }).proxies).toEqual([]);
    const legacy = parseServeInstance({ controller_info: { node_id: 'n1' }, applications: {}, http_proxies: { n1: { node_id: 'n1', node_ip: '127.0.0.1', status: 'HEALTHY' } } });
    expect(legacy.proxies).toEqual([{ nodeId: 'n1', nodeIp: '127.0.0.1', status: 'HEALTHY', head: true }]);
    expect(legacy.httpPort).toBe(8000);
  });

  it('passes unknown enum values through', () => {
    const p = parseServeInstance({ applications: { a: app({ status: 'HIBERNATING' }, { D: dep({ status: 'WARMING', replicas: [{ state: 'TELEPORTING' }] }) }) } });
    expect(p.apps[0].status).toBe('HIBERNATING');
    expect(p.apps[0].deployments[0].status).toBe('WARMING');
    expect(p.apps[0].deployments[0].replicas).toMatchObject({ TELEPORTING: 1, RUNNING: 0, STARTING: 0 });
  });

  it('skips and counts a malformed app or deployment without dropping the rest', () => {
    const p = parseServeInstance({
      applications: {
        good: app({ name: 'good' }, { D: dep(), Bad: dep({ replicas: 'many' }) }),
        nostatus: app({ status: 7 }),
        notobj: 'x',
      },
    });
    expect(p.apps.map((a) => a.name)).toEqual(['good']);
    expect(p.apps[0].deployments.map((d) => d.name)).toEqual(['D']);
    expect(p.malformed).toHaveLength(3);
  });

  it('handles fields omitted by exclude_unset', () => {
    const p = parseServeInstance({ applications: { a: { status: 'DEPLOY_FAILED', message: 'Traceback ...' } } });
    expect(p.apps[0]).toMatchObject({ name: 'a', status: 'DEPLOY_FAILED', messagePresent: true, routePrefix: null, deployments: [] });
  });

  it('derives min/max from autoscaling config with defaults, or the fixed count', () => {
    const p = parseServeInstance({
      applications: {
        a: app({}, {
          Auto: dep({ deployment_config: { autoscaling_config: { max_replicas: 4 } }, target_num_replicas: 2 }),
          Fixed: dep({ deployment_config: { num_replicas: 3 } }),
          Nothing: dep({ deployment_config: {} }),
        }),
      },
    });
    const [auto, fixed, nothing] = p.apps[0].deployments;
    expect(auto).toMatchObject({ minReplicas: 1, maxReplicas: 4, targetReplicas: 2, autoscaling: true });
    expect(fixed).toMatchObject({ minReplicas: 3, maxReplicas: 3, targetReplicas: 3, autoscaling: false });
    expect(nothing.minReplicas).toBeUndefined();
    expect(nothing.targetReplicas).toBeUndefined();
  });

  it('calls a deployment scaled to zero only when idle by design', () => {
    const zeroCfg = { deployment_config: { autoscaling_config: { min_replicas: 0, max_replicas: 2 } } };
    const p = parseServeInstance({
      applications: {
        a: app({}, {
          Idle: dep({ ...zeroCfg, status: 'HEALTHY', target_num_replicas: 0, replicas: [] }),
          Crashed: dep({ ...zeroCfg, status: 'UNHEALTHY', target_num_replicas: 0, replicas: [] }),
          Waking: dep({ ...zeroCfg, status: 'UPSCALING', target_num_replicas: 1, replicas: [{ state: 'STARTING' }] }),
          MinOne: dep({ deployment_config: { autoscaling_config: { min_replicas: 1 } }, status: 'HEALTHY', target_num_replicas: 0, replicas: [] }),
        }),
      },
    });
    expect(Object.fromEntries(p.apps[0].deployments.map((d) => [d.name, d.scaledToZero]))).toEqual({ Idle: true, Crashed: false, Waking: false, MinOne: false });
  });

  it('marks the proxy on the controller node as head', () => {
    const p = parseServeInstance({
      controller_info: { node_id: 'head' },
      http_options: { port: 8123 },
      applications: {},
      proxies: { head: { node_id: 'head', node_ip: '10.0.0.1', status: 'HEALTHY' }, w1: { node_id: 'w1', node_ip: '10.0.0.2', status: 'DRAINING' } },
    });
    expect(p.httpPort).toBe(8123);
    expect(p.proxies.map((x) => [x.nodeId, x.head, x.status])).toEqual([['head', true, 'HEALTHY'], ['w1', false, 'DRAINING']]);
  });
});
