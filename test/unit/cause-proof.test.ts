// Issue 19: the facts that prove a cause final, positive and negative: a BioEngine app missing
// while a deployment its proxy gates on is idle at zero (stuckAtZero), and a Hypha server id
// replaced on a comeback (ServerIdWatch).
import { stuckAtZero } from '../../src/registration/tracker';
import { ServerIdWatch } from '../../src/sources/hypha/server-id';
import type { RegistrationState } from '../../src/snapshot/registration';
import type { ServeApp, ServeDeployment } from '../../src/snapshot/types';

function dep(name: string, running: number, target: number, status = 'HEALTHY'): ServeDeployment {
  return {
    name, status, messagePresent: false,
    replicas: { STARTING: target > running ? target - running : 0, RUNNING: running },
    autoscaling: true, minReplicas: 0, maxReplicas: 2, targetReplicas: target,
    scaledToZero: running === 0 && target === 0 && status === 'HEALTHY',
  };
}
function app(deps: ServeDeployment[]): ServeApp {
  return { name: 'a', status: 'RUNNING', messagePresent: false, message: '', routePrefix: '/a', lastDeployedSeconds: 1, deployments: deps };
}
const proxy = dep('ProxyDeployment', 1, 1);
const OLD_GATE = { gate: 'deregisters_at_zero', source: 'version', version: '0.16.1' } as const;

describe('stuckAtZero: the registration cause the upstream never leaves by itself', () => {
  test.each<[string, RegistrationState, ServeApp, boolean]>([
    ['1a: deregistered, a gated deployment idle at zero (target 0)', 'missing_scaled_to_zero', app([proxy, dep('Model', 0, 0)]), true],
    ['1b: deployed cold, never registered, idle at zero', 'missing_never_registered', app([proxy, dep('Model', 0, 0)]), true],
    ['1b with two gated deployments, one at zero: the gate waits for all', 'missing_never_registered', app([proxy, dep('Cpu', 1, 1), dep('Model', 0, 0)]), true],
    // The look-alikes: a replica is being started, so the proxy registers within its cycle.
    ['a deploy whose replicas are starting (target 1)', 'missing_never_registered', app([proxy, dep('Model', 0, 1)]), false],
    ['woken (a replica runs again), proxy not back yet', 'missing_scaled_to_zero', app([proxy, dep('Model', 1, 1)]), false],
    ['registered at zero (a proxy that keeps it registered)', 'registered', app([proxy, dep('Model', 0, 0)]), false],
    // Causes BioEngine may still recover from, or that the exporter cannot prove.
    ['missing after a Hypha reconnect', 'missing_after_reconnect', app([proxy, dep('Model', 0, 0)]), false],
    ['history unknown (exporter restarted without its state)', 'missing_history_unknown', app([proxy, dep('Model', 0, 0)]), false],
    ['crashed', 'missing_crashed', app([proxy, dep('Model', 0, 0, 'UNHEALTHY')]), false],
    ['a plain Serve app (no ProxyDeployment: the registrant is unknown)', 'missing_never_registered', app([dep('Model', 0, 0)]), false],
  ])('%s → %s', (_what, state, a, want) => {
    expect(stuckAtZero(a, state, OLD_GATE)).toBe(want);
    // Only the old gate makes the state final: the fixed gate registers such an app by itself, and an unknown one may.
    expect(stuckAtZero(a, state, { gate: 'serviceable_at_zero', source: 'version', version: '0.16.30' })).toBe(false);
    expect(stuckAtZero(a, state, { gate: 'unknown', source: 'none' })).toBe(false);
    expect(stuckAtZero(a, state, undefined)).toBe(false);
  });
});

describe('ServerIdWatch: a server id replaced on a comeback', () => {
  test('first connection: known id, no comeback yet (unknown)', () => {
    const w = new ServerIdWatch();
    expect(w.seen('fixed-0', false)).toBeUndefined();
    expect(w.facts).toEqual({ current: 'fixed-0', replaced: [] });
    expect(w.facts.changed).toBeUndefined();
  });

  test('comeback under the same id (a fixed --server-id): changed false, nothing replaced', () => {
    const w = new ServerIdWatch();
    w.seen('fixed-0', false);
    expect(w.seen('fixed-0', true)).toBeUndefined();
    expect(w.facts.changed).toBe(false);
    expect(w.replacedServer('fixed-0')).toBe(false);
  });

  test('comeback under a random id: changed true, the old id replaced for good; the current id never counts', () => {
    const w = new ServerIdWatch();
    w.seen('sharp-pig-1', false);
    expect(w.seen('calm-owl-2', true)).toEqual({ from: 'sharp-pig-1', to: 'calm-owl-2' });
    expect(w.facts).toMatchObject({ current: 'calm-owl-2', previous: 'sharp-pig-1', changed: true });
    expect(w.replacedServer('sharp-pig-1')).toBe(true);
    expect(w.replacedServer('calm-owl-2')).toBe(false);
    expect(w.replacedServer('some-worker-client')).toBe(false);
    // A later comeback under the same id clears "changed" but not what was replaced.
    w.seen('calm-owl-2', true);
    expect(w.facts.changed).toBe(false);
    expect(w.replacedServer('sharp-pig-1')).toBe(true);
  });

  test('a server that did not say its id changes nothing; a reload continues the facts', () => {
    const w = new ServerIdWatch();
    w.seen('a', false);
    w.seen('b', true);
    expect(w.seen(undefined, true)).toBeUndefined();
    const continued = new ServerIdWatch(w.facts);
    expect(continued.replacedServer('a')).toBe(true);
    expect(continued.facts.current).toBe('b');
  });

  test('the replaced ids are bounded', () => {
    const w = new ServerIdWatch();
    for (let i = 0; i < 20; i++) w.seen(`id-${i}`, i > 0);
    expect(w.facts.replaced.length).toBeLessThanOrEqual(8);
    expect(w.replacedServer('id-18')).toBe(true);
    expect(w.replacedServer('id-0')).toBe(false);
  });
});
