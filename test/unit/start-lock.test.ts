// The harness's machine-wide start lock (test/harness/start-lock.ts): the lanes' Ray starts run one at a time,
// and a lock left by a killed run does not block the next.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { acquireStartLock, startLockDir as lockDir } from '../harness/start-lock';

describe('acquireStartLock', () => {
  const name = `unit-${process.pid}`;
  afterEach(() => fs.rmSync(lockDir(name), { recursive: true, force: true }));

  test('a second start waits until the first releases, then takes the lock', async () => {
    const release = await acquireStartLock(name);
    let second = false;
    const waiting = acquireStartLock(name).then((r) => {
      second = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 1_200));
    expect(second).toBe(false);
    release();
    const release2 = await waiting;
    expect(second).toBe(true);
    expect(fs.readFileSync(path.join(lockDir(name), 'pid'), 'utf8')).toBe(String(process.pid));
    release2();
    expect(fs.existsSync(lockDir(name))).toBe(false);
  });

  test('a lock whose owner has exited is broken, not waited out', async () => {
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    fs.mkdirSync(lockDir(name));
    fs.writeFileSync(path.join(lockDir(name), 'pid'), gone.stdout);
    const release = await acquireStartLock(name, 60_000);
    // Taken, not waited out: the lock now names this process.
    expect(fs.readFileSync(path.join(lockDir(name), 'pid'), 'utf8')).toBe(String(process.pid));
    release();
  });

  test('past its longest wait it goes on without the lock, and leaves the holder\'s lock alone', async () => {
    const release = await acquireStartLock(name);
    const other = await acquireStartLock(name, 700);
    other();
    expect(fs.existsSync(lockDir(name))).toBe(true);
    release();
    expect(fs.existsSync(lockDir(name))).toBe(false);
  });
});
