import pino from 'pino';
import { ConfigError, loadConfig } from '../../src/config/load';
import { SnapshotStore } from '../../src/snapshot/store';
import { planWatchedServices } from '../../src/sources/services/planner';
import { tmpDir } from '../helpers/tmp';

describe('watched_services config', () => {
  const t = tmpDir();
  afterAll(() => t.cleanup());
  const load = (text: string, env: NodeJS.ProcessEnv = {}) => loadConfig(t.write('c.yml', text), env);
  function error(text: string): ConfigError {
    try {
      load(text);
    } catch (e) {
      if (e instanceof ConfigError) return e;
      throw e;
    }
    throw new Error('no error');
  }
  const HYPHA = 'hypha:\n  name: main\n  server_url: http://127.0.0.1:9527\n';

  it('defaults to the artifact manager with a silent list probe, a witness without time limit and global timing', () => {
    const cfg = load(`global:\n  interval: 20s\n  timeout: 4s\n${HYPHA}`);
    expect(cfg.hypha).toEqual({ name: 'main', serverUrl: 'http://127.0.0.1:9527', workspace: undefined, token: undefined });
    expect(cfg.watchedServices).toEqual([{
      service: 'public/artifact-manager', workspace: 'public', serviceId: 'artifact-manager',
      intervalMs: 20_000, timeoutMs: 4000, resolveMode: 'random',
      probe: { method: 'list', args: [], kwargs: { limit: 1, silent: true } },
      canary: { enabled: true, releasedClientIds: [] },
      holders: [],
      // The exporter's waits of HyphaServiceCachedProxyStale and the window of the probe pages (contract v0.4).
      pageWaits: { provenMs: 0, uncertainMs: 120_000 },
      probeWindowMs: 180_000,
    }]);
    expect(cfg.watchedServices[0].canary.witnessMaxMs).toBeUndefined();
  });

  it('without a hypha connection no watched-service source is planned; with one, one per service', () => {
    const log = pino({ level: 'silent' });
    expect(planWatchedServices(load(''), new SnapshotStore(), log)).toEqual([]);
    const cfg = load(`${HYPHA}  bearer_token_env: TOK\nwatched_services:\n  - service: public/artifact-manager\n  - service: my-ws/my-svc\n`, { TOK: 'secret-value-1234' });
    const planned = planWatchedServices(cfg, new SnapshotStore(), log);
    expect(planned.map((p) => p.key)).toEqual(['service/public/artifact-manager', 'service/my-ws/my-svc']);
    expect(planned[0].fingerprint).not.toContain('secret-value-1234');
    expect(cfg.hypha?.token?.reveal()).toBe('secret-value-1234');
    // A changed token restarts the sources (new fingerprint).
    const cfg2 = load(`${HYPHA}  bearer_token_env: TOK\nwatched_services:\n  - service: public/artifact-manager\n  - service: my-ws/my-svc\n`, { TOK: 'other-value-5678' });
    expect(planWatchedServices(cfg2, new SnapshotStore(), log)[0].fingerprint).not.toBe(planned[0].fingerprint);
  });

  it('adds silent=true to artifact-manager reads that accept it, unless set; other services get their probe as written', () => {
    const cfg = load(`${HYPHA}watched_services:
  - service: public/artifact-manager
    probe: {method: read, kwargs: {artifact_id: ws/x}}
    canary: {reresolve_after: never}
  - service: other/artifact-manager
    probe: {method: read, args: [ws/x, false]}
    canary: {reresolve_after: immediately}
  - service: third/artifact-manager
    probe: {method: list_files, args: [ws/x]}
    canary: {reresolve_after: 90s}
  - service: ws/svc
    probe: {method: read, args: [a]}
  - service: ws/nothing
`);
    const [a, b, c, d, e] = cfg.watchedServices;
    expect(a.probe).toEqual({ method: 'read', args: [], kwargs: { artifact_id: 'ws/x', silent: true } });
    // The deprecated key is read as witness_max: never = no limit, immediately = no witness, a duration = that bound.
    expect(a.canary).toEqual({ enabled: true, releasedClientIds: [], deprecatedReresolveAfter: 'never' });
    expect(b.probe).toEqual({ method: 'read', args: ['ws/x', false], kwargs: {} });
    expect(b.canary).toEqual({ enabled: true, releasedClientIds: [], witnessMaxMs: 0, deprecatedReresolveAfter: 'immediately' });
    expect(c.probe).toEqual({ method: 'list_files', args: ['ws/x'], kwargs: {} });
    expect(c.canary).toEqual({ enabled: true, releasedClientIds: [], witnessMaxMs: 90_000, deprecatedReresolveAfter: '90s' });
    expect(d.probe).toEqual({ method: 'read', args: ['a'], kwargs: {} });
    expect(e.probe).toBeUndefined();
  });

  it('reads witness_max and operator releases; refuses both names of the bound and a zero bound', () => {
    const cfg = load(`${HYPHA}watched_services:
  - service: public/artifact-manager
    canary:
      witness_max: 2h
      released_client_ids: [public/old-am:artifact-manager, bare-id, public/other]
  - service: ws/svc
    canary: {witness_max: none}
`);
    expect(cfg.watchedServices[0].canary).toEqual({ enabled: true, witnessMaxMs: 7_200_000, releasedClientIds: ['old-am', 'bare-id', 'other'] });
    expect(cfg.watchedServices[1].canary).toEqual({ enabled: true, releasedClientIds: [] });
    let e = error(`${HYPHA}watched_services:\n  - service: ws/a\n    canary:\n      witness_max: 1h\n      reresolve_after: 10m\n`);
    expect(e.field).toBe('watched_services[0].canary.reresolve_after');
    expect(e.problem).toMatch(/deprecated name of witness_max/);
    expect(e.line).toBe(8);
    e = error(`${HYPHA}watched_services:\n  - service: ws/a\n    canary: {witness_max: 0s}\n`);
    expect(e.field).toBe('watched_services[0].canary.witness_max');
  });

  it('reads holder probes (probe-only holders too) and refuses write-looking methods and holders with nothing to do', () => {
    const cfg = load(`${HYPHA}watched_services:
  - service: public/artifact-manager
    timeout: 4s
    holders:
      - name: kth-worker
        service: bioengine/bioengine-worker
        probe: {method: list_apps, timeout: 30s, interval: 1m}
      - name: lab
        service: lab/worker
        method: get_status
        field: am
        probe: {service: lab/admin, method: get_app_manifest, kwargs: {artifact_id: lab/x}}
`);
    expect(cfg.watchedServices[0].holders).toEqual([
      { name: 'kth-worker', service: 'bioengine/bioengine-worker', method: undefined, args: [], kwargs: {}, field: undefined,
        probe: { service: 'bioengine/bioengine-worker', method: 'list_apps', args: [], kwargs: {}, timeoutMs: 30_000, intervalMs: 60_000 } },
      { name: 'lab', service: 'lab/worker', method: 'get_status', args: [], kwargs: {}, field: ['am'],
        probe: { service: 'lab/admin', method: 'get_app_manifest', args: [], kwargs: { artifact_id: 'lab/x' }, timeoutMs: 4000, intervalMs: 0 } },
    ]);
    for (const m of ['deploy_app', 'stop_all_apps', 'delete_app', 'run_code', 'createThing', 'upload_app']) {
      const e = error(`${HYPHA}watched_services:\n  - service: ws/a\n    holders:\n      - {name: w, service: ws/w, probe: {method: ${m}}}\n`);
      expect(e.field).toBe('watched_services[0].holders[0].probe.method');
      expect(e.problem).toMatch(/read-only/);
    }
    // A name that merely starts like a verb is fine.
    expect(() => load(`${HYPHA}watched_services:\n  - service: ws/a\n    holders:\n      - {name: w, service: ws/w, probe: {method: settings_view}}\n`)).not.toThrow();
    const e = error(`${HYPHA}watched_services:\n  - service: ws/a\n    holders:\n      - {name: w, service: ws/w}\n`);
    expect(e.field).toBe('watched_services[0].holders[0].method');
  });

  it('reads holders with their field path', () => {
    const cfg = load(`${HYPHA}watched_services:
  - service: public/artifact-manager
    holders:
      - name: kth-worker
        service: bioengine/bioengine-worker
        method: get_status
        field: artifact_manager.client_id
`);
    expect(cfg.watchedServices[0].holders).toEqual([{
      name: 'kth-worker', service: 'bioengine/bioengine-worker', method: 'get_status', args: [], kwargs: {}, field: ['artifact_manager', 'client_id'], probe: undefined,
    }]);
  });

  it('refuses write probes, bad ids, duplicates and the reserved holder name, with their location', () => {
    let e = error(`${HYPHA}watched_services:\n  - service: public/artifact-manager\n    probe: {method: create}\n`);
    expect(e.field).toBe('watched_services[0].probe.method');
    expect(e.problem).toMatch(/read-only/);
    expect(e.line).toBe(6);
    e = error(`${HYPHA}watched_services:\n  - service: artifact-manager\n`);
    expect(e.field).toBe('watched_services[0].service');
    expect(e.problem).toMatch(/workspace\/service-id/);
    e = error(`${HYPHA}watched_services:\n  - service: ws/a\n  - service: ws/a\n`);
    expect(e.field).toBe('watched_services[1].service');
    expect(e.problem).toMatch(/duplicate/);
    e = error(`${HYPHA}watched_services:\n  - service: ws/a\n    holders:\n      - {name: exporter, service: ws/w, method: m}\n`);
    expect(e.field).toBe('watched_services[0].holders[0].name');
    e = error(`${HYPHA}watched_services:\n  - service: ws/a\n    canary: {reresolve_after: soon}\n`);
    expect(e.field).toBe('watched_services[0].canary.reresolve_after');
    e = error(`${HYPHA}watched_services:\n  - service: ws/a\n    holders:\n      - {name: w, service: ws/w, method: m, field: a..b}\n`);
    expect(e.field).toBe('watched_services[0].holders[0].field');
    e = error('hypha:\n  name: main\n  server_url: http://user:pw@h:1\n');
    expect(e.field).toBe('hypha.server_url');
  });

  it('an empty list turns the watch off', () => {
    expect(load(`${HYPHA}watched_services: []\n`).watchedServices).toEqual([]);
  });
});
