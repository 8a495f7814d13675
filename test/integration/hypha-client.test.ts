import { hyphaWebsocketClient } from 'hypha-rpc';
import { freePort } from '../harness/ports';
import { waitFor } from '../harness/proc';
import { HyphaHandle, startHypha } from '../harness/hypha';
import { bioengineClientId, startPythonRegistrant, startRegistrant, workspaceToken } from '../harness/hypha-registrant';
import { HyphaClient } from '../../src/sources/hypha/client';
import { connect, HyphaConnection } from '../../src/sources/hypha/connection';
import { ensureWebSocketGlobal } from '../../src/sources/hypha/shim';
import { HyphaEvent, SYSTEM_EVENTS } from '../../src/sources/hypha/types';
import { SourceError } from '../../src/util/errors';
import { Secret } from '../../src/util/secret';

// Facts about a real Hypha 0.21.137 server and hypha-rpc 0.21.40 that the
// exporter relies on; docs/hypha-behaviour.md records the figures printed here.

jest.setTimeout(180_000);

let hypha: HyphaHandle;
const open: { disconnect(): Promise<void> }[] = [];

beforeAll(async () => {
  hypha = await startHypha({ serverId: 'hc-test-1' });
  console.log(`hypha startup: ${hypha.startupMs[0]} ms`);
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.disconnect().catch(() => undefined)));
});

afterAll(async () => {
  await hypha?.stop();
});

function eventsInto(list: HyphaEvent[]): (e: HyphaEvent) => void {
  return (e) => list.push(e);
}

/** The client's live connection, as the sources read it. */
function live(client: HyphaClient): HyphaConnection {
  const c = client.connection;
  if (!c) throw new Error(`not connected (state ${client.state})`);
  return c;
}

async function rootConn(): Promise<HyphaConnection> {
  const c = await connect({ serverUrl: hypha.url, token: new Secret(hypha.rootToken), callTimeoutMs: 5000 });
  open.push(c);
  return c;
}

test('listServices returns typed entries of the own workspace, including our built-in service', async () => {
  const c = await rootConn();
  expect(c.workspace).toBe('ws-user-root');
  expect(c.info.serverId).toBe('hc-test-1');
  expect(c.info.hyphaVersion).toBe('0.21.137');
  const list = await c.listServices();
  expect(list.length).toBeGreaterThan(0);
  for (const s of list) {
    expect(s.id).toBe(`${s.workspace}/${s.clientId}:${s.serviceId}`);
    expect(s.workspace).toBe('ws-user-root');
  }
  const own = list.find((s) => s.clientId === c.clientId);
  expect(own).toMatchObject({ serviceId: 'built-in', type: 'built-in' });
  expect(c.malformedTotal).toBe(0);
  // A query narrows server-side; another workspace's public services are listable without events.
  const pub = await c.listServices({ workspace: 'public', serviceId: 'hypha-login' });
  expect(pub.map((s) => s.id)).toEqual(['public/hc-test-1:hypha-login']);
});

test('events: register/unregister give service_added/removed within a second; disconnect gives only client_disconnected', async () => {
  const c = await rootConn();
  const events: HyphaEvent[] = [];
  await c.subscribe(SYSTEM_EVENTS.filter((e) => e.startsWith('service_') || e.startsWith('client_')), eventsInto(events));
  const app = 'ev-app';
  const reg = await startRegistrant({ serverUrl: hypha.url, token: hypha.rootToken, prefix: 'wk-ev', app });
  expect(reg.clientId).toBe(bioengineClientId('wk-ev', app));
  await waitFor('client_connected', async () => events.find((e) => e.type === 'client_connected' && e.clientId === reg.clientId), 5000, 20);

  const tReg = Date.now();
  const id = await reg.register();
  expect(id).toBe(`ws-user-root/${reg.clientId}:${app}`);
  const added = await waitFor('service_added', async () => events.find((e) => e.type === 'service_added' && e.service.id === id), 5000, 5);
  if (added.type !== 'service_added') throw new Error('unreachable');
  expect(added.service).toMatchObject({ type: 'bioengine-app', visibility: 'public', serviceId: app, clientId: reg.clientId });

  const tUnreg = Date.now();
  await reg.unregister();
  const removed = await waitFor('service_removed', async () => events.find((e) => e.type === 'service_removed' && e.service.id === id), 5000, 5);
  const unregLatency = removed.receivedAtMs - tUnreg;
  console.log(`event latency: service_added ${added.receivedAtMs - tReg} ms after register call; service_removed ${unregLatency} ms after unregister call`);
  expect(unregLatency).toBeLessThan(1000);

  await reg.register();
  await waitFor('second service_added', async () => events.filter((e) => e.type === 'service_added' && e.service.id === id).length === 2, 5000, 5);
  const before = events.length;
  const tDisc = Date.now();
  await reg.disconnect();
  const gone = await waitFor('client_disconnected', async () => events.find((e) => e.type === 'client_disconnected' && e.clientId === reg.clientId), 5000, 5);
  expect(gone).toMatchObject({ workspace: 'ws-user-root' });
  console.log(`event latency: client_disconnected ${gone.receivedAtMs - tDisc} ms after disconnect call`);
  await new Promise((r) => setTimeout(r, 500));
  // No per-service removal on disconnect: consumers must drop the client's services themselves.
  expect(events.slice(before).filter((e) => e.type === 'service_removed')).toEqual([]);
  expect((await c.listServices()).some((s) => s.id === id)).toBe(false);
});

test('the Python client BioEngine uses (hypha-rpc 0.21.47): same events, same ids', async () => {
  const c = await rootConn();
  const events: HyphaEvent[] = [];
  await c.subscribe(['service_added', 'service_removed', 'client_disconnected'], eventsInto(events));
  const py = await startPythonRegistrant({ serverUrl: hypha.url, token: hypha.rootToken, prefix: 'wk-py', app: 'py-app' });
  try {
    expect(py.serviceId).toBe(`ws-user-root/${bioengineClientId('wk-py', 'py-app')}:py-app`);
    await waitFor('py service_added', async () => events.some((e) => e.type === 'service_added' && e.service.id === py.serviceId), 5000, 10);
    const t0 = Date.now();
    await py.unregister();
    const removed = await waitFor('py service_removed', async () => events.find((e) => e.type === 'service_removed' && e.service.id === py.serviceId), 5000, 5);
    console.log(`python unregister_service -> service_removed seen ${removed.receivedAtMs - t0} ms after the signal was sent (includes signal handling)`);
    await py.register();
    const t1 = Date.now();
    await py.stop();
    // The registrant reconnects on every re-registration (as upstream's proxy does): only a
    // disconnect seen after SIGTERM is the one this measures.
    const gone = await waitFor('py client_disconnected', async () => events.find((e) => e.type === 'client_disconnected' && e.clientId === py.clientId && e.receivedAtMs >= t1), 5000, 5);
    console.log(`python disconnect -> client_disconnected ${gone.receivedAtMs - t1} ms after SIGTERM`);
  } finally {
    await py.stop();
  }
});

test('getServiceInfo resolves a short id to its provider, callDirect calls it; a missing service is not_found, a missing method remote', async () => {
  const c = await rootConn();
  const reg = await startRegistrant({ serverUrl: hypha.url, token: hypha.rootToken, prefix: 'wk-gs', app: 'gs-app' });
  open.push(reg);
  const id = await reg.register();
  const svc = await c.getServiceInfo('ws-user-root/gs-app');
  expect(svc.id).toBe(id);
  expect(svc.clientId).toBe(reg.clientId);
  await expect(c.callDirect(svc.id, 'ping')).resolves.toBe('pong');
  await expect(c.callDirect(id, 'ping')).resolves.toBe('pong');
  const info = await c.getServiceInfo(id);
  expect(info).toMatchObject({ id, type: 'bioengine-app' });
  await expect(c.getServiceInfo('ws-user-root/nobody:nothing')).rejects.toMatchObject({ errorClass: 'not_found' });
  // A method the live provider lacks is the provider's answer (remote), not a provider that is gone (not_found).
  const noMethod = await c.callDirect(svc.id, 'no_such_method').then(() => undefined, (e: unknown) => e);
  console.log(`call of a missing method: ${(noMethod as SourceError).errorClass}: ${(noMethod as SourceError).message}`);
  expect(noMethod).toMatchObject({ errorClass: 'remote', op: 'gs-app.no_such_method', message: expect.stringMatching(/^gs-app\.no_such_method: RemoteError: /) });
});

test('a call to a provider that left fails fast (recently gone) and a never-seen one hits our deadline', async () => {
  const c = await rootConn();
  const reg = await startRegistrant({ serverUrl: hypha.url, token: hypha.rootToken, prefix: 'wk-gone', app: 'gone-app' });
  const id = await reg.register();
  const svc = await c.getServiceInfo(id);
  await reg.disconnect();
  const t0 = Date.now();
  const err = await c.callDirect(svc.id, 'ping', [], { timeoutMs: 3000 }).then(() => undefined, (e: unknown) => e);
  const recentMs = Date.now() - t0;
  expect(err).toBeInstanceOf(SourceError);
  const t1 = Date.now();
  const err2 = await c.callDirect('ws-user-root/never-existed:svc', 'ping', [], { timeoutMs: 1500 }).then(() => undefined, (e: unknown) => e);
  const neverMs = Date.now() - t1;
  console.log(`call to departed provider: ${(err as SourceError).errorClass} after ${recentMs} ms (${(err as SourceError).message}); to never-seen provider: ${(err2 as SourceError).errorClass} after ${neverMs} ms`);
  expect(['not_found', 'timeout']).toContain((err as SourceError).errorClass);
  expect(err2).toMatchObject({ errorClass: expect.stringMatching(/^(timeout|not_found)$/) });
  expect(neverMs).toBeLessThan(2500);
  expect(c.open).toBe(true);
});

test('wrong token: auth error, token not in the message', async () => {
  const bad = 'x'.repeat(20) + 'not-a-valid-token' + 'y'.repeat(20);
  const err = await connect({ serverUrl: hypha.url, token: new Secret(bad) }).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(SourceError);
  expect((err as SourceError).errorClass).toBe('auth');
  expect((err as SourceError).message).not.toContain(bad);
  console.log(`wrong token: ${(err as SourceError).message}`);
});

test('unknown workspace: auth error with and without a token', async () => {
  const withTok = await connect({ serverUrl: hypha.url, token: new Secret(hypha.rootToken), workspace: 'no-such-ws' }).then(() => undefined, (e: unknown) => e);
  expect(withTok).toMatchObject({ errorClass: 'auth' });
  expect((withTok as SourceError).message).not.toContain(hypha.rootToken);
  const anon = await connect({ serverUrl: hypha.url, workspace: 'no-such-ws' }).then(() => undefined, (e: unknown) => e);
  expect(anon).toMatchObject({ errorClass: 'auth' });
  console.log(`unknown workspace: ${(withTok as SourceError).message} / ${(anon as SourceError).message}`);
});

test('a workspace token connects to its workspace; a read token can list and subscribe', async () => {
  const tok = await workspaceToken(hypha.url, hypha.rootToken, 'hc-read-test', 'read');
  const c = await connect({ serverUrl: hypha.url, token: new Secret(tok), workspace: 'hc-read-test' });
  open.push(c);
  expect(c.workspace).toBe('hc-read-test');
  const events: HyphaEvent[] = [];
  await c.subscribe(['service_added'], eventsInto(events));
  const writer = await workspaceToken(hypha.url, hypha.rootToken, 'hc-read-test', 'read_write');
  const reg = await startRegistrant({ serverUrl: hypha.url, token: writer, workspace: 'hc-read-test', prefix: 'wk-rd', app: 'rd-app' });
  open.push(reg);
  const id = await reg.register();
  await waitFor('service_added in token workspace', async () => events.some((e) => e.type === 'service_added' && e.service.id === id), 5000, 10);
  expect((await c.listServices()).map((s) => s.id)).toContain(id);
});

test('server down at connect: connect error in milliseconds; HyphaClient keeps retrying and comes up when the server does', async () => {
  const port = await freePort();
  const t0 = Date.now();
  const err = await connect({ serverUrl: `http://127.0.0.1:${port}` }).then(() => undefined, (e: unknown) => e);
  expect(err).toMatchObject({ errorClass: 'connect' });
  console.log(`connect to closed port: ${(err as SourceError).message} after ${Date.now() - t0} ms`);

  const token = 'A'.repeat(30) + 'b'.repeat(34); // a valid root token for the server started below
  const client = new HyphaClient({ serverUrl: `http://127.0.0.1:${port}`, token: new Secret(token), reconnectMinMs: 200, reconnectMaxMs: 1000 });
  client.start();
  await waitFor('client down', async () => client.state === 'down', 5000, 20);
  expect(client.lastError?.errorClass).toBe('connect');
  const late = await startHypha({ port, rootToken: token, serverId: 'hc-late' });
  try {
    const t1 = Date.now();
    const conn = await client.waitUntilUp(15_000);
    console.log(`HyphaClient up ${Date.now() - t1} ms after the late server was ready (startup ${late.startupMs[0]} ms)`);
    expect(conn.info.serverId).toBe('hc-late');
    expect(client.generation).toBe(1);
  } finally {
    await client.stop();
    await late.stop();
  }
});

test('raw hypha-rpc 0.21.40: after a restart with a new server id the old server object stays stale', async () => {
  const srv = await startHypha({ serverId: 'stale-a' });
  ensureWebSocketGlobal();
  type Raw = { listServices(): Promise<unknown[]>; disconnect(): Promise<void>; on(ev: string, h: () => void): void };
  const quiet = { debug() {}, info() {}, warn() {}, error() {}, log() {} };
  const raw = (await (hyphaWebsocketClient.connectToServer as unknown as (c: object) => Promise<Raw>)({
    server_url: srv.url, token: srv.rootToken, logger: quiet, method_timeout: 3,
  }));
  try {
    let reconnected = 0;
    raw.on('connected', () => reconnected++);
    expect((await raw.listServices()).length).toBeGreaterThan(0);
    await srv.restart({ serverId: 'stale-b' });
    await waitFor('hypha-rpc internal reconnect', async () => reconnected > 0, 30_000, 100);
    const outcome = await Promise.race([
      raw.listServices().then(() => 'ok', (e: unknown) => `error: ${String(e).split('\n')[0]}`),
      new Promise<string>((r) => setTimeout(() => r('no answer within 4 s'), 4000)),
    ]);
    console.log(`raw hypha-rpc listServices after server-id change: ${outcome}`);
    expect(outcome).not.toBe('ok');
  } finally {
    await raw.disconnect().catch(() => undefined);
    await srv.stop();
  }
});

test('HyphaClient rebuilds after a restart with a new server id: new generation, fresh data, events re-subscribed', async () => {
  const srv = await startHypha({ serverId: 'rb-a' });
  const client = new HyphaClient({
    serverUrl: srv.url, token: new Secret(srv.rootToken), events: ['service_added', 'service_removed', 'client_disconnected'],
    reconnectMinMs: 250, reconnectMaxMs: 2000, callTimeoutMs: 3000,
    logger: process.env.HYPHA_TEST_DEBUG ? debugLogger : undefined,
  });
  const events: HyphaEvent[] = [];
  const disconnects: number[] = [];
  client.on({ event: eventsInto(events), disconnected: () => disconnects.push(Date.now()) });
  client.start();
  try {
    const g1 = await client.waitUntilUp(10_000);
    expect(g1.info.serverId).toBe('rb-a');
    const tStop = Date.now();
    await srv.stopServer();
    await waitFor('client noticed the outage', async () => client.state === 'down', 5000, 10);
    const noticedMs = (disconnects[0] ?? Date.now()) - tStop;
    expect(client.connection).toBeUndefined();
    await expect(g1.listServices()).rejects.toMatchObject({ errorClass: 'never_sent' });
    const tStart = Date.now();
    await srv.startServer({ serverId: 'rb-b' });
    const tReady = Date.now();
    const g2 = await client.waitUntilUp(20_000);
    const tUp = Date.now();
    expect(g2.generation).toBe(2);
    expect(client.reconnects).toBe(1);
    expect(g2.info.serverId).toBe('rb-b');
    const list = await live(client).listServices();
    expect(list.some((s) => s.clientId === g2.clientId)).toBe(true);
    console.log(`restart with new server id: disconnect noticed ${noticedMs} ms after SIGTERM; server startup ${tReady - tStart} ms; client up ${tUp - tReady} ms after readiness`);

    const reg = await startRegistrant({ serverUrl: srv.url, token: srv.rootToken, prefix: 'wk-rb', app: 'rb-app' });
    open.push(reg);
    const id = await reg.register();
    await waitFor('event on the rebuilt connection', async () => events.some((e) => e.type === 'service_added' && e.service.id === id && e.generation === 2), 5000, 10);
  } finally {
    await client.stop();
    await srv.stop();
  }
});

test('half-open connection (server frozen with SIGSTOP): the heartbeat drops it and the client recovers after SIGCONT', async () => {
  const srv = await startHypha({ serverId: 'ho-a' });
  const client = new HyphaClient({
    serverUrl: srv.url, token: new Secret(srv.rootToken), heartbeatIntervalMs: 500, callTimeoutMs: 1000,
    connectTimeoutMs: 2000, reconnectMinMs: 250, reconnectMaxMs: 1000,
  });
  client.start();
  const pid = serverPid(srv);
  try {
    await client.waitUntilUp(10_000);
    const t0 = Date.now();
    process.kill(pid, 'SIGSTOP');
    await waitFor('client down while server frozen', async () => client.state === 'down', 10_000, 20);
    const detectMs = Date.now() - t0;
    process.kill(pid, 'SIGCONT');
    const t1 = Date.now();
    const g = await client.waitUntilUp(20_000);
    console.log(`half-open: detected in ${detectMs} ms (heartbeat 500 ms); up again ${Date.now() - t1} ms after SIGCONT, generation ${g.generation}`);
    expect(g.generation).toBeGreaterThanOrEqual(2);
    expect((await live(client).listServices()).length).toBeGreaterThan(0);
  } finally {
    try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ }
    await client.stop();
    await srv.stop();
  }
});

const debugLogger = {
  debug: (o: object, m?: string) => console.log('DEBUG', m, JSON.stringify(o)),
  info: (o: object, m?: string) => console.log('INFO', m, JSON.stringify(o)),
  warn: (o: object, m?: string) => console.log('WARN', m, JSON.stringify(o)),
  error: (o: object, m?: string) => console.log('ERROR', m, JSON.stringify(o)),
};

function serverPid(h: HyphaHandle): number {
  const pid = h.pid();
  if (pid === undefined) throw new Error('hypha not running');
  return pid;
}

test('with --enable-s3 against moto: public/artifact-manager resolves; create/read(silent)/list work and survive a restart', async () => {
  const srv = await startHypha({ serverId: 's3-a', enableS3: true });
  try {
    console.log(`hypha with S3 (moto) startup: ${srv.startupMs[0]} ms; s3 endpoint ${srv.s3Url}`);
    const c = await connect({ serverUrl: srv.url, token: new Secret(srv.rootToken), callTimeoutMs: 10_000 });
    open.push(c);
    const providers = await c.listServices({ workspace: 'public', serviceId: 'artifact-manager' });
    expect(providers.map((s) => s.id)).toEqual(['public/s3-a:artifact-manager']);
    const am = await c.getServiceInfo('public/artifact-manager');
    expect(am.id).toBe('public/s3-a:artifact-manager');
    await c.callDirect(am.id, 'create', [], { kwargs: { alias: 'probe-coll', type: 'collection', manifest: { name: 'probe' }, config: { permissions: { '*': 'r' } } } });
    await c.callDirect(am.id, 'create', [], { kwargs: { parent_id: 'ws-user-root/probe-coll', alias: 'probe-child', manifest: { name: 'child' } } });
    const read = (await c.callDirect(am.id, 'read', [], { kwargs: { artifact_id: 'ws-user-root/probe-coll', silent: true } })) as { id: string; view_count: number };
    expect(read.id).toBe('ws-user-root/probe-coll');
    expect(read.view_count).toBe(0);
    const list = (await c.callDirect(am.id, 'list', [], { kwargs: { parent_id: 'ws-user-root/probe-coll', limit: 5, silent: true } })) as { id: string }[];
    expect(list.map((a) => a.id)).toEqual(['ws-user-root/probe-child']);
    await expect(c.callDirect(am.id, 'read', [], { kwargs: { artifact_id: 'ws-user-root/nope', silent: true } })).rejects.toMatchObject({ errorClass: 'remote' });

    await c.disconnect();
    await srv.restart();
    const c2 = await connect({ serverUrl: srv.url, token: new Secret(srv.rootToken), callTimeoutMs: 10_000 });
    open.push(c2);
    const am2 = await c2.getServiceInfo('public/artifact-manager');
    const again = (await c2.callDirect(am2.id, 'read', [], { kwargs: { artifact_id: 'ws-user-root/probe-coll', silent: true } })) as { id: string };
    expect(again.id).toBe('ws-user-root/probe-coll');
    console.log(`hypha with S3 restart: ${srv.startupMs[1]} ms`);
  } finally {
    await srv.stop();
  }
});
