// Issue 19 §4: a BioEngine worker that left the Hypha registry (a restart gives it a new client id;
// the old id never returns) is a known removal: its series end at the registry event, not at the
// next cross-check, so nothing of it stands in for the worker that replaced it.
import { DEFAULT_PAGE_WAITS } from '../../src/registration/tracker';
import { defaultClusterMapping } from '../../src/config/hypha-schema';
import { RegistrationStage } from '../../src/registration/stage';
import type { HyphaServerSample } from '../../src/snapshot/hypha';
import type { WorkerSample } from '../../src/snapshot/registration';
import { SnapshotStore } from '../../src/snapshot/store';
import { newSourceHealth } from '../../src/snapshot/types';
import type { ServiceInfo } from '../../src/sources/hypha/types';
import { memoryLogger } from '../helpers/exporter';

const flush = () => new Promise((r) => setImmediate(r));
const workerSvc = (client: string): ServiceInfo => ({ id: `ws/${client}:bioengine-worker`, workspace: 'ws', clientId: client, serviceId: 'bioengine-worker', type: 'bioengine-worker' });
const sample = (client: string): WorkerSample => ({ worker: `ws/${client}:bioengine-worker`, workspace: 'ws', clientId: client, up: true, apps: [{ app: 'x', status: 'RUNNING' }] });

function hypha(listed: ServiceInfo[] | undefined, workers: WorkerSample[]): HyphaServerSample {
  return {
    target: 'main', health: { ...newSourceHealth('hypha', 'main'), up: true }, reconnectsTotal: 0, generation: 1, workspace: 'ws',
    listedSeconds: listed ? 1 : 0, connectionsListed: 1, registry: listed ? new Map([['ws', listed]]) : new Map(), workers, malformedTotal: 0,
  };
}

describe('workers in the registration part', () => {
  function setup() {
    const store = new SnapshotStore();
    const stage = new RegistrationStage(store, { request: () => undefined }, memoryLogger().log);
    stage.configure({ reconnectSettleMs: 90_000, pageWaits: DEFAULT_PAGE_WAITS, clusters: [{ cluster: 'a', hypha: 'main', mapping: defaultClusterMapping('a') }] });
    stage.start();
    const workers = () => (store.get().registration?.workers ?? []).map((w) => [w.worker, w.rayCluster]);
    return { store, stage, workers };
  }

  it('a worker whose service left the listed registry ends at once; its successor is attributed as it was', async () => {
    const { store, stage, workers } = setup();
    store.setHyphaServer(hypha([workerSvc('w-old')], [sample('w-old')]));
    await flush();
    expect(workers()).toEqual([['ws/w-old:bioengine-worker', 'a']]);
    // The registry event: the old worker is gone; the source has not asked the workers again yet.
    store.setHyphaServer(hypha([], [sample('w-old')]));
    await flush();
    expect(workers()).toEqual([]);
    store.setHyphaServer(hypha([workerSvc('w-new')], [sample('w-new')]));
    await flush();
    expect(workers()).toEqual([['ws/w-new:bioengine-worker', 'a']]);
    stage.stop();
  });

  it('a registry that is not listed (not connected yet, or down) says nothing about departures: the worker stays', async () => {
    const { store, stage, workers } = setup();
    store.setHyphaServer(hypha(undefined, [sample('w-old')]));
    await flush();
    expect(workers()).toEqual([['ws/w-old:bioengine-worker', 'a']]);
    stage.stop();
  });
});
