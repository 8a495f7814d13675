import { HyphaClient } from '../../src/sources/hypha/client';
import type { HyphaConnection } from '../../src/sources/hypha/connection';

// The reconnect loop against fake connections: what a real server cannot be
// made to do on cue (malformed listings, a close at an exact moment).

class FakeConnection {
  open = true;
  malformedTotal = 0;
  readonly workspace = 'ws';
  readonly clientId: string;
  readonly info: { workspace: string; clientId: string; managerId: string };
  readonly #close = new Set<(reason: string) => void>();

  constructor(readonly generation: number) {
    this.clientId = `c${generation}`;
    this.info = { workspace: 'ws', clientId: this.clientId, managerId: 'manager-x' };
  }

  onClose(l: (reason: string) => void): () => void {
    this.#close.add(l);
    return () => this.#close.delete(l);
  }

  onTrouble(): () => void {
    return () => {};
  }

  async subscribe(): Promise<void> {}

  async disconnect(reason = 'disconnect requested'): Promise<void> {
    if (!this.open) return;
    this.open = false;
    for (const l of [...this.#close]) l(reason);
  }
}

const made: FakeConnection[] = [];

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
}

jest.mock('../../src/sources/hypha/connection', () => ({
  ...jest.requireActual<object>('../../src/sources/hypha/connection'),
  connect: async (opts: { generation?: number }) => {
    const c = new FakeConnection(opts.generation ?? 1);
    made.push(c);
    return c as unknown as HyphaConnection;
  },
}));

beforeEach(() => {
  made.length = 0;
});

test('malformedTotal adds up over every connection, also while down and after stop', async () => {
  const client = new HyphaClient({ serverUrl: 'http://hypha.invalid', reconnectMinMs: 1, reconnectMaxMs: 1 });
  client.start();
  await client.waitUntilUp(1000);
  made[0].malformedTotal = 2;
  expect(client.malformedTotal).toBe(2);

  void made[0].disconnect('socket gone');
  expect(client.connection).toBeUndefined();
  expect(client.malformedTotal).toBe(2);
  const g2 = await client.waitUntilUp(1000);
  expect(g2.generation).toBe(2);
  expect(client.malformedTotal).toBe(2);
  made[1].malformedTotal = 3;
  expect(client.malformedTotal).toBe(5);

  await client.stop();
  expect(client.malformedTotal).toBe(5);
});

test('a lost connection is reported as disconnected; stopping is not', async () => {
  const client = new HyphaClient({ serverUrl: 'http://hypha.invalid', reconnectMinMs: 1, reconnectMaxMs: 1 });
  const disconnects: [string, number][] = [];
  client.on({ disconnected: (reason, generation) => disconnects.push([reason, generation]) });
  client.start();
  await client.waitUntilUp(1000);
  // The fake's close listeners run synchronously; the reconnect needs a tick.
  void made[0].disconnect('socket gone');
  expect(client.connection).toBeUndefined();
  await until(() => client.connection?.generation === 2);
  expect(client.reconnects).toBe(1);
  await client.stop();
  expect(disconnects).toEqual([['socket gone', 1]]);
  expect(client.state).toBe('stopped');
});
