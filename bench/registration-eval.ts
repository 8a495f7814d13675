// One registration evaluation (match every expected app against the registry
// view, classify the missing ones) as the registration stage runs it on every
// registry event and every Ray sample; no upstream involved.
import { ExpectedService } from '../src/registration/expected';
import { ProviderIndex, RegistrationTracker } from '../src/registration/tracker';
import type { ServeApp } from '../src/snapshot/types';
import type { ServiceInfo } from '../src/sources/hypha/types';
import { timeIt } from './stats';

export async function registrationEval(apps: number): Promise<{ p50: number; p99: number }> {
  const serve: ServeApp[] = [];
  const expected = new Map<string, ExpectedService>();
  const services: ServiceInfo[] = [];
  for (let i = 0; i < apps; i++) {
    const name = `app-${i}`;
    const replicas = { RUNNING: i % 3 === 0 ? 0 : 1 };
    serve.push({
      name, status: 'RUNNING', messagePresent: false, message: '', routePrefix: `/${name}`, lastDeployedSeconds: 1,
      deployments: [{ name: 'Model', status: 'HEALTHY', messagePresent: false, replicas, autoscaling: true, scaledToZero: i % 3 === 0 }],
    });
    expected.set(name, { cluster: 'c', app: name, mapping: 'bioengine', workspace: 'ws', clientId: `w-${i}`, serviceId: name, label: `ws/w-${i}:${name}` });
    // Every tenth app is missing from the registry; the rest registered.
    if (i % 10 !== 0) services.push({ id: `ws/w-${i}:${name}`, workspace: 'ws', clientId: `w-${i}`, serviceId: name });
  }
  const tracker = new RegistrationTracker();
  let now = 1000;
  const evaluate = () => {
    now += 1;
    const input = { nowSeconds: now, startedSeconds: 0, connectedSeconds: 500, afterReconnect: false, settleMs: 20_000 };
    return tracker.evaluateCluster('c', serve, expected, new ProviderIndex(services), input);
  };
  // Warm up, and start from a collected heap: the benchmark before this one leaves a large one.
  for (let i = 0; i < 5; i++) evaluate();
  (globalThis as { gc?: () => void }).gc?.();
  return timeIt(50, evaluate);
}
