// The bin's memory relaunch (src/cli/relaunch.ts): when it starts itself again and with what.
import { memoryRelaunch, RELAUNCHED_ENV } from '../../src/cli/relaunch';

describe('memoryRelaunch', () => {
  it('plain node, no environment: adds the settings and the marker', () => {
    const plan = memoryRelaunch({ PATH: '/bin' }, []);
    expect(plan?.execArgv).toEqual(['--max-semi-space-size=1', '--optimize-for-size']);
    expect(plan?.env).toEqual({ PATH: '/bin', MALLOC_MMAP_THRESHOLD_: '131072', [RELAUNCHED_ENV]: '1' });
  });

  it('the image and the unit (both set): no relaunch', () => {
    expect(memoryRelaunch({ NODE_OPTIONS: '--max-semi-space-size=1', MALLOC_MMAP_THRESHOLD_: '131072' }, [])).toBeUndefined();
    expect(memoryRelaunch({ MALLOC_MMAP_THRESHOLD_: '65536' }, ['--max_semi_space_size=2'])).toBeUndefined();
  });

  it("the operator's own values win: only what is missing is added", () => {
    const plan = memoryRelaunch({ MALLOC_MMAP_THRESHOLD_: '65536' }, ['--inspect']);
    expect(plan?.execArgv).toEqual(['--inspect', '--max-semi-space-size=1', '--optimize-for-size']);
    expect(plan?.env.MALLOC_MMAP_THRESHOLD_).toBe('65536');
    expect(memoryRelaunch({ NODE_OPTIONS: '--max-semi-space-size=4' }, [])?.execArgv).toEqual(['--optimize-for-size']);
    expect(memoryRelaunch({}, ['--no-optimize-for-size'])?.execArgv).toEqual(['--no-optimize-for-size', '--max-semi-space-size=1']);
  });

  it('never twice, and the marker set by hand opts out', () => {
    expect(memoryRelaunch({ [RELAUNCHED_ENV]: '1' }, [])).toBeUndefined();
  });
});
