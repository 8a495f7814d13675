import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RegistrationTracker, TrackerInput, ProviderIndex } from '../../src/registration/tracker';
import {
  loadPersistedState, MAX_RESTORE_AGE_SECONDS, PersistedState, persistedStateOf, PersistedStateWriter, STATE_FILE,
} from '../../src/snapshot/persisted';
import { WatchState } from '../../src/sources/services/state';
import { ServerIdWatch } from '../../src/sources/hypha/server-id';
import { registrationKey, SavedState, serverIdKey } from '../../src/snapshot/handover';
import type { ServeApp } from '../../src/snapshot/types';
import { exporterWithConfig, memoryLogger } from '../helpers/exporter';
import { freePort } from '../harness/ports';

// What must survive an exporter restart so that the restart neither ends a page
// (the incident-2 witness) nor makes the exporter claim a cause it cannot know.

const idle: ServeApp = {
  name: 'a', status: 'RUNNING', messagePresent: false, message: '', routePrefix: null, lastDeployedSeconds: 1000,
  deployments: [
    { name: 'ProxyDeployment', status: 'HEALTHY', messagePresent: false, replicas: { RUNNING: 1 }, autoscaling: false, scaledToZero: false },
    { name: 'Model', status: 'HEALTHY', messagePresent: false, replicas: { RUNNING: 0 }, autoscaling: true, scaledToZero: true },
  ],
};
const exp = new Map([['a', { cluster: 'c', app: 'a', mapping: 'bioengine' as const, workspace: 'ws', clientId: 'p', serviceId: 'a', label: 'ws/p:a' }]]);
const input = (now: number, startedSeconds: number): TrackerInput => ({ nowSeconds: now, startedSeconds, connectedSeconds: startedSeconds, afterReconnect: false, settleMs: 90_000 });

const dirs: string[] = [];
function tmp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'state-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** What the exporter gathers from the sources' handovers and the registration stage. */
function savedWith(histories: SavedState['registration'], canaryStale: boolean): SavedState {
  const canary = { fullId: 'public/old:artifact-manager', clientId: 'old', sinceSeconds: 100, ...(canaryStale ? { staleSinceSeconds: 200 } : {}) };
  return {
    witnesses: new Map([['public/artifact-manager', canary]]),
    holders: new Map(),
    workers: new Map(),
    // The registry connection has not reported an id yet.
    serverIds: new Map([[serverIdKey('hypha', 'main'), { replaced: [] }]]),
    registration: histories,
  };
}

describe('state that survives a restart', () => {
  it('round trip: the stale canary and every app history are handed over; a fresh canary is not a witness', () => {
    const t = new RegistrationTracker();
    t.evaluateCluster('c', [idle], exp, new ProviderIndex([{ id: 'ws/p:a', workspace: 'ws', clientId: 'p', serviceId: 'a' }]), input(1100, 500));
    t.evaluateCluster('c', [idle], exp, new ProviderIndex([]), input(1200, 500));
    const apps = t.histories();
    const dir = tmp();
    const { log } = memoryLogger();
    const w = new PersistedStateWriter(dir, () => savedWith(apps, true), log);
    w.flush();
    const restart = loadPersistedState(dir, log, Date.now() / 1000 + 5);
    expect(restart?.witnesses.get('public/artifact-manager')).toEqual({ fullId: 'public/old:artifact-manager', clientId: 'old', sinceSeconds: 100, staleSinceSeconds: 200 });
    const history = restart?.registration.get(registrationKey('c', 'a'));
    expect(history).toMatchObject({ everRegistered: true, missingSinceSeconds: 1200 });
    expect(persistedStateOf(savedWith(apps, false), 1).witnesses).toEqual({});

    // A new tracker (a new process) continues the spell and still knows the cause.
    const next = new RegistrationTracker();
    next.takeHandover(restart?.registration ?? new Map());
    expect(next.evaluateCluster('c', [idle], exp, new ProviderIndex([]), input(1300, 1290))[0]).toMatchObject({ state: 'missing_scaled_to_zero', unregisteredSinceSeconds: 1200 });
    // Without it: the honest cause, and the spell restarts.
    expect(new RegistrationTracker().evaluateCluster('c', [idle], exp, new ProviderIndex([]), input(1300, 1290))[0]).toMatchObject({ state: 'missing_history_unknown', unregisteredSinceSeconds: 1300 });
  });

  it('a stale configured holder\'s spell and page survive a restart; a live one is not kept', () => {
    const saved = savedWith([], false);
    saved.holders.set('public/artifact-manager', [
      { name: 'w-stale', clientId: 'old', sinceSeconds: 10, staleSinceSeconds: 100, pagedSeconds: 220 },
      { name: 'w-live', clientId: 'new', sinceSeconds: 10 },
    ]);
    const dir = tmp();
    const { log } = memoryLogger();
    new PersistedStateWriter(dir, () => saved, log).flush();
    const restart = loadPersistedState(dir, log, Date.now() / 1000 + 5);
    expect(restart?.holders.get('public/artifact-manager')).toEqual([{ name: 'w-stale', clientId: 'old', sinceSeconds: 10, staleSinceSeconds: 100, pagedSeconds: 220 }]);
  });

  it('the worker holders of a stale witness survive a restart (a fresh process must not judge it without them); of a live canary they are not kept', () => {
    const known = [
      { holder: 'w-new', version: '0.16.43', recovery: 'self_healing' as const },
      { holder: 'w-gone', version: '0.16.1', recovery: 'stays_stale' as const, missingSinceSeconds: 250 },
    ];
    const { log } = memoryLogger();
    const roundTrip = (stale: boolean) => {
      const saved = savedWith([], stale);
      saved.workers.set('public/artifact-manager', known);
      const dir = tmp();
      new PersistedStateWriter(dir, () => saved, log).flush();
      return loadPersistedState(dir, log, Date.now() / 1000 + 5);
    };
    expect(roundTrip(true)?.workers.get('public/artifact-manager')).toEqual(known);
    expect(roundTrip(false)?.workers.get('public/artifact-manager')).toBeUndefined();
    // A file with an unknown recovery is malformed: nothing restored (never a guess).
    const dir = tmp();
    new PersistedStateWriter(dir, () => {
      const saved = savedWith([], true);
      saved.workers.set('public/artifact-manager', [{ holder: 'w', recovery: 'healed' as never }]);
      return saved;
    }, log).flush();
    expect(loadPersistedState(dir, log, Date.now() / 1000 + 5)).toBeUndefined();
  });

  it('what each connection saw of its server id survives a restart: a server that came back under a new id stays known', () => {
    const saved = savedWith([], true);
    const facts = { current: 'srv-b', previous: 'srv-a', changed: true, replaced: ['srv-a'] };
    saved.serverIds.set(serverIdKey('service', 'public/artifact-manager'), facts);
    const dir = tmp();
    const { log } = memoryLogger();
    new PersistedStateWriter(dir, () => saved, log).flush();
    const restart = loadPersistedState(dir, log, Date.now() / 1000 + 5);
    expect(restart?.serverIds.get(serverIdKey('service', 'public/artifact-manager'))).toEqual(facts);
    // A connection that never reported an id has nothing to continue.
    expect(restart?.serverIds.has(serverIdKey('hypha', 'main'))).toBe(false);

    // The next process continues: its first connection (not a comeback) under the same id keeps the
    // change and still proves the old id gone; under yet another id it is a change again.
    const same = new ServerIdWatch(restart?.serverIds.get(serverIdKey('service', 'public/artifact-manager')));
    expect(same.seen('srv-b', false)).toBeUndefined();
    expect(same.facts.changed).toBe(true);
    expect(same.replacedServer('srv-a')).toBe(true);
    const other = new ServerIdWatch(restart?.serverIds.get(serverIdKey('service', 'public/artifact-manager')));
    expect(other.seen('srv-c', false)).toEqual({ from: 'srv-b', to: 'srv-c' });
    expect(other.replacedServer('srv-b')).toBe(true);
    // Without the file: nothing is known until a comeback is seen.
    const fresh = new ServerIdWatch(undefined);
    expect(fresh.seen('srv-b', false)).toBeUndefined();
    expect(fresh.facts.changed).toBeUndefined();
    expect(fresh.replacedServer('srv-a')).toBe(false);
  });

  it('a state file written before server ids were kept still loads', () => {
    const dir = tmp();
    const { log } = memoryLogger();
    fs.writeFileSync(path.join(dir, STATE_FILE), JSON.stringify({ version: 1, savedSeconds: Date.now() / 1000, witnesses: {}, registration: [] }));
    expect(loadPersistedState(dir, log)?.serverIds.size).toBe(0);
  });

  it('a handed-over witness stays the canary and stays stale while its id is not a provider', () => {
    const st = new WatchState({ enabled: true }, 'list', [], undefined, { fullId: 'public/old:artifact-manager', clientId: 'old', sinceSeconds: 100, staleSinceSeconds: 200 });
    expect(st.adoptCanaryIfNone({ fullId: 'public/new:artifact-manager', clientId: 'new' }, 300)).toBe(false);
    st.applyRegistry({ nowSeconds: 300, providers: ['new'], resolved: { fullId: 'public/new:artifact-manager', clientId: 'new' } });
    expect(st.cached[0]).toMatchObject({ holder: 'exporter', clientId: 'old', stale: true, staleSinceSeconds: 200 });
  });

  it('restores nothing from a missing, malformed or too old file, and says why', () => {
    const { log, lines } = memoryLogger();
    const dir = tmp();
    expect(loadPersistedState(dir, log)).toBeUndefined();
    expect(lines).toEqual([]);
    fs.writeFileSync(path.join(dir, STATE_FILE), '{"version": 1, "witnesses": 3}');
    expect(loadPersistedState(dir, log)).toBeUndefined();
    expect(lines.some((l) => l.includes('ignoring a malformed state file'))).toBe(true);
    const old = { version: 1, savedSeconds: Date.now() / 1000 - MAX_RESTORE_AGE_SECONDS - 60, witnesses: {}, registration: [] };
    fs.writeFileSync(path.join(dir, STATE_FILE), JSON.stringify(old));
    expect(loadPersistedState(dir, log)).toBeUndefined();
    expect(lines.some((l) => l.includes('too old'))).toBe(true);
  });

  it('an unwritable directory is reported once and does not stop anything', () => {
    const { log, lines } = memoryLogger();
    const dir = tmp();
    const file = path.join(dir, 'not-a-dir');
    fs.writeFileSync(file, 'x');
    const w = new PersistedStateWriter(file, () => savedWith([], true), log);
    w.flush();
    w.flush();
    expect(lines.filter((l) => l.includes('cannot write the state file'))).toHaveLength(1);
  });

  it('the exporter writes the file on stop and a new exporter continues from it (--storage.path)', async () => {
    const dir = tmp();
    const data = path.join(dir, 'data');
    // A state file as 0.2.0 wrote it: the stale canary and what both connections saw of the server id.
    const facts = { current: 'srv-b', previous: 'srv-a', changed: true, replaced: ['srv-a'] };
    const canary = { fullId: 'public/old:artifact-manager', clientId: 'old', sinceSeconds: 100, staleSinceSeconds: 200 };
    fs.mkdirSync(data);
    fs.writeFileSync(path.join(data, STATE_FILE), JSON.stringify({
      version: 1, savedSeconds: Date.now() / 1000, witnesses: { 'public/artifact-manager': canary }, registration: [],
      serverIds: { [serverIdKey('hypha', 'main')]: facts, [serverIdKey('service', 'public/artifact-manager')]: facts },
    }));
    // Nothing listens there: the sources stay down, so all they know is what they continued from.
    const hypha = `hypha:\n  name: main\n  server_url: http://127.0.0.1:${await freePort()}\n`;
    const cfg = path.join(dir, 'c.yml');
    fs.writeFileSync(cfg, hypha);
    const saved = () => JSON.parse(fs.readFileSync(path.join(data, STATE_FILE), 'utf8')) as PersistedState;
    const a = exporterWithConfig({ file: cfg }, { storagePath: data });
    a.exporter.start();
    await a.exporter.stop();
    // Written from the sources' handovers: each source took its part at start and gives it back.
    expect(saved().witnesses).toEqual({ 'public/artifact-manager': canary });
    expect(saved().serverIds).toEqual({ [serverIdKey('hypha', 'main')]: facts, [serverIdKey('service', 'public/artifact-manager')]: facts });

    const b = exporterWithConfig({ file: cfg }, { storagePath: data });
    b.exporter.start();
    expect(b.lines.some((l) => l.includes('continuing from the state saved before the restart'))).toBe(true);
    // Consumed at start: a source a later reload adds back (here the watched service) starts fresh.
    b.rewrite(`${hypha}watched_services: []\n`);
    expect(b.exporter.reload().ok).toBe(true);
    b.rewrite(hypha);
    expect(b.exporter.reload().ok).toBe(true);
    await b.exporter.stop();
    expect(saved().witnesses).toEqual({});
    expect(saved().serverIds).toEqual({ [serverIdKey('hypha', 'main')]: facts });
  });

  it('histories handed over but not judged yet are saved again (a second restart loses nothing); a removed cluster\'s are not', async () => {
    const dir = tmp();
    const data = path.join(dir, 'data');
    fs.mkdirSync(data);
    const spell = { birthObserved: true, everRegistered: true, registered: false, missingSinceSeconds: 1200, clientIdChanges: 1 };
    fs.writeFileSync(path.join(data, STATE_FILE), JSON.stringify({
      version: 1, savedSeconds: Date.now() / 1000, witnesses: {}, serverIds: {},
      registration: [{ cluster: 'c1', app: 'a', history: spell }, { cluster: 'gone', app: 'b', history: spell }],
    }));
    // Neither upstream answers, so no app is judged before the stop.
    const cfg = path.join(dir, 'c.yml');
    fs.writeFileSync(cfg, `hypha:\n  name: main\n  server_url: http://127.0.0.1:${await freePort()}\n`
      + `ray_clusters:\n  - name: c1\n    dashboard_url: http://127.0.0.1:${await freePort()}\n`);
    for (let restart = 0; restart < 2; restart++) {
      const h = exporterWithConfig({ file: cfg }, { storagePath: data });
      h.exporter.start();
      await h.exporter.stop();
      const saved = JSON.parse(fs.readFileSync(path.join(data, STATE_FILE), 'utf8')) as PersistedState;
      expect(saved.registration).toEqual([{ cluster: 'c1', app: 'a', history: spell }]);
    }
  });
});
