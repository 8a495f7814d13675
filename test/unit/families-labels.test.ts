// Contract v0.3 (issue 28): the Hypha server has one label everywhere, `hypha`, and an upstream's
// health series name it by the label that names it in the rest of the contract (ray_cluster, hypha,
// service), so rules and dashboards need no label_replace.
import { FAMILIES, forEachSample, Scope, units } from '../../src/metrics/families';
import { newSourceHealth } from '../../src/snapshot/health';
import type { Snapshot } from '../../src/snapshot/types';
import type { WatchedServiceSample } from '../../src/snapshot/services';
import { hyphaParts } from '../helpers/hypha-snapshot';

/** Scopes whose unit belongs to one Hypha server (a source may: source="hypha" and "hypha_service"). */
const HYPHA_SCOPES: readonly Scope[] = ['hypha', 'registration', 'worker', 'source'];

describe('contract v0.3: one label for the Hypha server', () => {
  test('no family has a label named target', () => {
    expect(FAMILIES.filter((f) => f.labels.includes('target')).map((f) => f.name)).toEqual([]);
  });

  test('every family that names a Hypha server names it hypha', () => {
    const named = FAMILIES.filter((f) => HYPHA_SCOPES.includes(f.scope));
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter((f) => !f.labels.includes('hypha')).map((f) => f.name)).toEqual([]);
  });

  test('every source family has one label set: source, ray_cluster, hypha, service (+ its own)', () => {
    for (const f of FAMILIES.filter((x) => x.scope === 'source')) {
      expect({ f: f.name, labels: f.labels.slice(0, 4) }).toEqual({ f: f.name, labels: ['source', 'ray_cluster', 'hypha', 'service'] });
    }
  });

  test('each source series names its upstream by its own label; the others are empty', () => {
    const health = (h: ReturnType<typeof newSourceHealth>) => ({ ...h, up: true, lastSuccessSeconds: 1, lastDurationSeconds: 0.1 });
    const service = { service: 'public/artifact-manager', health: health(newSourceHealth('hypha_service', 'public/artifact-manager', 30, undefined, 'main')) };
    const snap: Snapshot = {
      version: 1,
      ray: new Map([['kth', { cluster: 'kth', health: health(newSourceHealth('ray', 'kth', 15)), appsDroppedTotal: 0, malformedTotal: 0 }]]),
      services: new Map([[service.service, service as unknown as WatchedServiceSample]]),
      ...hyphaParts({ target: 'main', health: health(newSourceHealth('hypha', 'main', 30)) }),
    };
    const up: Record<string, string>[] = [];
    const f = FAMILIES.find((x) => x.name === 'hypha_serve_source_up')!;
    for (const u of units(snap, 'source', 1)) {
      forEachSample(f, u.arg, (_n, names, vals) => up.push(Object.fromEntries(names.map((n, i) => [n, vals[i] ?? '<absent>']))));
    }
    expect(up.sort((a, b) => a.source.localeCompare(b.source))).toEqual([
      { source: 'hypha', ray_cluster: '', hypha: 'main', service: '' },
      { source: 'hypha_service', ray_cluster: '', hypha: 'main', service: 'public/artifact-manager' },
      { source: 'ray', ray_cluster: 'kth', hypha: '', service: '' },
    ]);
    // The Hypha server's own families carry the same value under the same label.
    const info: Record<string, string>[] = [];
    const gen = FAMILIES.find((x) => x.name === 'hypha_serve_hypha_connection_generation')!;
    for (const u of units(snap, 'hypha', 1)) forEachSample(gen, u.arg, (_n, names, vals) => info.push(Object.fromEntries(names.map((n, i) => [n, vals[i] ?? '']))));
    expect(info).toEqual([{ hypha: 'main' }]);
  });

  test('a watched service handed over keeps its identity but takes the server it is watched on now', () => {
    const before = { ...newSourceHealth('hypha_service', 'public/x', 30, undefined, 'old'), up: true };
    expect(newSourceHealth('hypha_service', 'public/x', 30, before, 'new')).toMatchObject({ hypha: 'new', up: true, target: 'public/x' });
    expect(newSourceHealth('hypha_service', 'public/x', 30, before)).not.toHaveProperty('hypha');
  });
});
