import pino from 'pino';
import { HealthBook, HealthBookOptions } from '../../src/sources/health-book';
import type { SourceHealth } from '../../src/snapshot/health';

interface Line {
  level: number;
  msg: string;
  [k: string]: unknown;
}

const WARN = 40;
const INFO = 30;
const DEBUG = 20;

function book(extra: Partial<HealthBookOptions> = {}) {
  const lines: Line[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Line) });
  const b = new HealthBook({ kind: 'ray', target: 'c1', intervalSeconds: 10, log, label: 'ray', fields: { cluster: 'c1' }, ...extra });
  return { b, lines, msgs: () => lines.map((l) => `${l.level} ${l.msg}`) };
}

describe('HealthBook', () => {
  it('starts down with zero errors and the configured interval', () => {
    const { b, lines } = book();
    expect(b.up).toBe(false);
    expect(b.health).toMatchObject({ source: 'ray', target: 'c1', up: false, intervalSeconds: 10 });
    expect(Object.values(b.health.errors).every((n) => n === 0)).toBe(true);
    expect(lines).toEqual([]);
  });

  it('logs "source down" once before the first success, repeats at debug, then "source up" once', () => {
    const { b, lines, msgs } = book();
    b.failed('connect', 'refused', 0.1);
    b.failed('timeout', 'slow', 0.2);
    b.failed('timeout', 'slow', 0.3);
    expect(msgs()).toEqual([`${WARN} ray source down`, `${DEBUG} ray sample failed`, `${DEBUG} ray sample failed`]);
    expect(lines[0]).toMatchObject({ cluster: 'c1', reason: 'connect', error: 'refused' });
    expect(lines[1]).toMatchObject({ cluster: 'c1', reason: 'timeout', error: 'slow' });
    expect(b.health).toMatchObject({ up: false, lastError: 'slow', lastDurationSeconds: 0.3 });
    expect(b.health.errors).toMatchObject({ connect: 1, timeout: 2, other: 0 });
    expect(b.health.lastErrorSeconds).toBeGreaterThan(0);

    expect(b.succeeded(0.05, { apps: 3 })).toBe(true);
    expect(b.succeeded(0.06, { apps: 3 })).toBe(false);
    expect(msgs().slice(3)).toEqual([`${INFO} ray source up`]);
    expect(lines[3]).toMatchObject({ cluster: 'c1', apps: 3 });
    expect(b.health).toMatchObject({ up: true, lastDurationSeconds: 0.06 });
    expect(b.health.lastSuccessSeconds).toBeGreaterThan(0);
  });

  it('each down spell after an up one is reported once', () => {
    const { b, msgs } = book();
    b.succeeded(0.1);
    b.failed('http_status', 'HTTP 500', 0.1);
    b.failed('http_status', 'HTTP 500', 0.1);
    b.succeeded(0.1);
    b.failed('bad_json', 'nope');
    expect(msgs()).toEqual([
      `${INFO} ray source up`, `${WARN} ray source down`, `${DEBUG} ray sample failed`, `${INFO} ray source up`, `${WARN} ray source down`,
    ]);
  });

  it('a failure without a duration keeps the last one; a success without one too', () => {
    const { b } = book();
    b.succeeded(0.4);
    b.failed('connect', 'connection lost');
    expect(b.health.lastDurationSeconds).toBe(0.4);
    b.succeeded(undefined);
    expect(b.health.lastDurationSeconds).toBe(0.4);
    b.recordDuration(0.7);
    expect(b.health).toMatchObject({ up: true, lastDurationSeconds: 0.7 });
  });

  it('partial failures are counted while the source stays up', () => {
    const { b, lines } = book();
    b.succeeded(0.1);
    b.countError('rpc', 2);
    b.countError('schema');
    b.countError('rpc', 0);
    expect(b.health.up).toBe(true);
    expect(b.health.errors).toMatchObject({ rpc: 2, schema: 1 });
    expect(lines).toHaveLength(1);
  });

  it('never mutates a health it handed out (it may be part of a published snapshot)', () => {
    const { b } = book();
    const first = b.health;
    const frozen = JSON.stringify(first);
    b.failed('connect', 'refused', 1);
    b.countError('schema');
    b.succeeded(1);
    b.recordDuration(2);
    expect(JSON.stringify(first)).toBe(frozen);
    expect(b.health).not.toBe(first);
  });

  describe('a successor after a reload', () => {
    const down = (): SourceHealth => {
      const { b } = book();
      b.succeeded(0.1);
      b.failed('timeout', 'slow', 0.2);
      return b.health;
    };

    it('takes the handed-over health and counters and does not report a spell its predecessor reported', () => {
      const handover = down();
      const { b, msgs } = book({ handover, intervalSeconds: 30 });
      expect(b.health).toMatchObject({ up: false, lastError: 'slow', intervalSeconds: 30 });
      expect(b.health.errors.timeout).toBe(1);
      b.failed('timeout', 'slow');
      expect(msgs()).toEqual([`${DEBUG} ray sample failed`]);
      expect(b.health.errors.timeout).toBe(2);
    });

    it('reports the first failure after an up predecessor', () => {
      const { b: up } = book();
      up.succeeded(0.1);
      const { b, msgs } = book({ handover: up.health });
      expect(b.up).toBe(true);
      b.failed('connect', 'refused');
      expect(msgs()).toEqual([`${WARN} ray source down`]);
    });

    it('starts afresh when the predecessor was another upstream', () => {
      const { b, msgs } = book({ handover: down(), target: 'c2' });
      expect(b.health).toMatchObject({ target: 'c2', up: false });
      expect(b.health.lastError).toBeUndefined();
      expect(b.health.errors.timeout).toBe(0);
      b.failed('connect', 'refused');
      expect(msgs()).toEqual([`${WARN} ray source down`]);
    });
  });

  it('names the source in its messages and puts its identity fields on every line', () => {
    const { b, lines } = book({ kind: 'hypha_service', target: 'public/x', label: 'watched-service', fields: { service: 'public/x', hypha: 'main' } });
    b.failed('auth', 'forbidden');
    b.failed('auth', 'forbidden');
    b.succeeded(undefined, { providers: ['a'] });
    expect(lines.map((l) => l.msg)).toEqual(['watched-service source down', 'watched-service sample failed', 'watched-service source up']);
    for (const l of lines) expect(l).toMatchObject({ service: 'public/x', hypha: 'main' });
    expect(lines[2]).toMatchObject({ providers: ['a'] });
  });
});
