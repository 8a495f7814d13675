// The exporter's memory settings, applied by the bin's interpreter line (src/main.ts, line 1):
//   #!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=1 --optimize-for-size
// At 1,000 apps the exporter holds ~140 MB resident under Node's defaults and ~90 MB with these
// (BENCHMARKS.md). None can be set from inside a running process: V8 sizes the semi-spaces at start
// (v8.setFlagsFromString was measured not to shrink them), glibc reads MALLOC_MMAP_THRESHOLD_ once
// before main, and Node refuses --optimize-for-size in NODE_OPTIONS. env(1) sets the variable and
// then execs node in its own place (`-S` splits the line; GNU coreutils 8.30+, Debian 11+), so the
// installed bin, the image, the systemd unit and the chart all run one process with the settings.
// `node dist/src/main.js` (and `npm start`) skips the interpreter line: Node's defaults, and a hint
// in the log (missingMemorySettings).

/** The young generation, in MB: a small one keeps RSS near the live heap. */
export const SEMI_SPACE_FLAG = '--max-semi-space-size=1';
/** A slower-growing old generation: a few MB less, scrape times unchanged (bench/bin-memory.ts). */
export const OPTIMIZE_FOR_SIZE_FLAG = '--optimize-for-size';
/** glibc returns blocks of 128 KB and more to the system as soon as they are freed. */
export const MMAP_THRESHOLD_ENV = 'MALLOC_MMAP_THRESHOLD_';
export const MMAP_THRESHOLD = '131072';

/** The interpreter line of src/main.ts (and of dist/src/main.js: tsc keeps it), from the settings above. */
export const INTERPRETER_LINE = `#!/usr/bin/env -S ${MMAP_THRESHOLD_ENV}=${MMAP_THRESHOLD} node ${SEMI_SPACE_FLAG} ${OPTIMIZE_FOR_SIZE_FLAG}`;

/**
 * The settings this process runs without: none when it was started through the interpreter line,
 * or when the operator set their own values (any semi-space size, any mmap threshold, either
 * spelling of optimize-for-size, on or off).
 */
export function missingMemorySettings(env: NodeJS.ProcessEnv, execArgv: readonly string[]): string[] {
  const nodeOptions = (env.NODE_OPTIONS ?? '').split(/\s+/);
  const missing: string[] = [];
  if (![...execArgv, ...nodeOptions].some((a) => /^--max[-_]semi[-_]space[-_]size(=|$)/.test(a))) missing.push(SEMI_SPACE_FLAG);
  if (!execArgv.some((a) => /^--(no-?)?optimize[-_]for[-_]size$/.test(a))) missing.push(OPTIMIZE_FOR_SIZE_FLAG);
  if (env[MMAP_THRESHOLD_ENV] === undefined) missing.push(`${MMAP_THRESHOLD_ENV}=${MMAP_THRESHOLD}`);
  return missing;
}
