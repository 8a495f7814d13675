// A lost registration waits for a Serve sample that can explain it (the BioEngine
// proxy deregisters as soon as its sibling reaches zero, before our next Ray
// reading), and the Ray poller can be asked for a cycle that starts later.
import { CauseConfirmation } from '../../src/registration/confirm';
import { Poller } from '../../src/sources/poller';

describe('CauseConfirmation', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function setup(maxHoldMs = 3000) {
    const requested: string[] = [];
    let deadlines = 0;
    const c = new CauseConfirmation(maxHoldMs, (cl) => requested.push(cl), () => deadlines++);
    return { c, requested, deadlines: () => deadlines };
  }

  it('holds a loss seen on an older Serve sample, asks that cluster for a fresh one, and releases with the time the loss was seen', () => {
    const { c, requested } = setup();
    expect(c.check('a', 99.5, () => true, 100)).toEqual({ hold: true });
    expect(requested).toEqual(['a']);
    // The cycle that was already running (requested before the loss) does not release it.
    expect(c.check('a', 99.9, () => true, 100.2)).toEqual({ hold: true });
    expect(requested).toEqual(['a']);
    expect(c.check('a', 100.1, () => true, 100.3)).toEqual({ hold: false, seenSeconds: 100 });
    // Already reported: the next evaluation is not held again.
    expect(c.check('a', 100.1, () => false, 100.4)).toEqual({ hold: false });
  });

  it('does not hold when nothing was lost, when the sample is already newer than the loss, or when its age is unknown', () => {
    const { c, requested } = setup();
    expect(c.check('a', 99, () => false, 100)).toEqual({ hold: false });
    expect(c.check('a', 100, () => true, 100)).toEqual({ hold: false });
    expect(c.check('a', undefined, () => true, 100)).toEqual({ hold: false });
    expect(requested).toEqual([]);
  });

  it('a Ray API that does not answer cannot hide the loss: the hold ends at the deadline and re-evaluates', () => {
    const { c, deadlines } = setup(3000);
    expect(c.check('a', 90, () => true, 100)).toEqual({ hold: true });
    jest.advanceTimersByTime(2999);
    expect(deadlines()).toBe(0);
    jest.advanceTimersByTime(1);
    expect(deadlines()).toBe(1);
    expect(c.check('a', 90, () => true, 103)).toEqual({ hold: false, seenSeconds: 100 });
  });

  it('holds per cluster, and clear() drops pending holds and their timers', () => {
    const { c, requested, deadlines } = setup();
    expect(c.check('a', 90, () => true, 100)).toEqual({ hold: true });
    expect(c.check('b', 90, () => false, 100)).toEqual({ hold: false });
    expect(c.check('b', 90, () => true, 101)).toEqual({ hold: true });
    expect(requested).toEqual(['a', 'b']);
    c.clear();
    jest.advanceTimersByTime(10_000);
    expect(deadlines()).toBe(0);
    expect(c.check('a', 90, () => false, 102)).toEqual({ hold: false });
  });
});

describe('Poller.runFresh', () => {
  it('waits for a cycle that starts after the call; concurrent askers share one follow-up', async () => {
    const starts: number[] = [];
    let release: (() => void) | undefined;
    let n = 0;
    const p = new Poller(60_000, () => {
      starts.push(++n);
      return new Promise<void>((r) => (release = r));
    }, () => undefined);
    const first = p.runOnce();
    const fresh1 = p.runFresh();
    const fresh2 = p.runFresh();
    expect(starts).toEqual([1]);
    release?.();
    await first;
    await Promise.resolve();
    await Promise.resolve();
    expect(starts).toEqual([1, 2]);
    release?.();
    await Promise.all([fresh1, fresh2]);
    expect(starts).toEqual([1, 2]);
    // Idle: runs at once.
    const fresh3 = p.runFresh();
    expect(starts).toEqual([1, 2, 3]);
    release?.();
    await fresh3;
    await p.stop();
    await p.runFresh();
    expect(starts).toEqual([1, 2, 3]);
  });
});
