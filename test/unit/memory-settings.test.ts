// The bin's memory settings (src/cli/memory-settings.ts): the interpreter line that applies them
// and the check behind the start-up hint when they are absent.
import fs from 'node:fs';
import path from 'node:path';
import { INTERPRETER_LINE, missingMemorySettings } from '../../src/cli/memory-settings';

const ALL = ['--max-semi-space-size=1', '--optimize-for-size', 'MALLOC_MMAP_THRESHOLD_=131072'];

describe('memory settings', () => {
  it('src/main.ts starts with the interpreter line built from the settings', () => {
    const first = fs.readFileSync(path.join(__dirname, '..', '..', 'src', 'main.ts'), 'utf8').split('\n')[0];
    expect(first).toBe(INTERPRETER_LINE);
    expect(INTERPRETER_LINE).toBe('#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=1 --optimize-for-size');
    // Linux passes at most 255 bytes of an interpreter line (BINPRM_BUF_SIZE 256) on; older kernels 127.
    expect(Buffer.byteLength(INTERPRETER_LINE)).toBeLessThan(128);
  });

  it('plain node, no environment: all three are missing', () => {
    expect(missingMemorySettings({ PATH: '/bin' }, [])).toEqual(ALL);
  });

  it('as the interpreter line starts it: nothing missing', () => {
    expect(missingMemorySettings({ MALLOC_MMAP_THRESHOLD_: '131072' }, ['--max-semi-space-size=1', '--optimize-for-size'])).toEqual([]);
  });

  it("the operator's own values count as set (any size, either spelling, NODE_OPTIONS for the semi-space)", () => {
    expect(missingMemorySettings({ MALLOC_MMAP_THRESHOLD_: '65536', NODE_OPTIONS: '--max-semi-space-size=4' }, ['--no-optimize-for-size'])).toEqual([]);
    expect(missingMemorySettings({ MALLOC_MMAP_THRESHOLD_: '65536' }, ['--max_semi_space_size=2', '--optimize_for_size'])).toEqual([]);
    // --optimize-for-size only on the command line: Node refuses it in NODE_OPTIONS.
    expect(missingMemorySettings({ NODE_OPTIONS: '--max-semi-space-size=1', MALLOC_MMAP_THRESHOLD_: '1' }, [])).toEqual(['--optimize-for-size']);
    expect(missingMemorySettings({}, ['--inspect', '--max-semi-space-size=1'])).toEqual(['--optimize-for-size', 'MALLOC_MMAP_THRESHOLD_=131072']);
  });
});
