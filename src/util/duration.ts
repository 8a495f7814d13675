// Durations in config files and flags, in Prometheus's grammar (model.ParseDuration of
// prometheus/common): whole numbers, each with a unit, units largest first and each at most once —
// y (365d), w (7d), d, h, m, s, ms — so "500ms", "15s", "1m30s", "1w", "1y"; "0" alone is zero.
// "1.5s", "30s1m", "1m1m", "-1s", "5 minutes" and "" are not durations.

/** Milliseconds per unit, largest first: the order the grammar requires. */
const UNITS: readonly (readonly [string, bigint])[] = [
  ['y', 365n * 86_400_000n],
  ['w', 7n * 86_400_000n],
  ['d', 86_400_000n],
  ['h', 3_600_000n],
  ['m', 60_000n],
  ['s', 1000n],
  ['ms', 1n],
];

/**
 * The grammar as one regular expression (also published as the config's JSON Schema `pattern`).
 * The lookahead refuses the empty string, which every optional part would otherwise match.
 */
export const DURATION_PATTERN = /^(?:0|(?=\d)(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?)$/;

/** The longest duration Prometheus accepts: a Go time.Duration (int64 nanoseconds), in whole ms. */
export const MAX_DURATION_MS = Number((2n ** 63n - 1n) / 1_000_000n);

/** What the grammar is, for error messages. */
export const DURATION_SYNTAX = 'whole numbers with units largest first, each at most once: y w d h m s ms (e.g. 500ms, 30s, 1h30m)';

/** Milliseconds as a BigInt, undefined when the text does not match the grammar. */
function exactMs(text: string): bigint | undefined {
  const m = DURATION_PATTERN.exec(text);
  if (!m) return undefined;
  let total = 0n;
  UNITS.forEach(([, mult], i) => {
    if (m[i + 1] !== undefined) total += BigInt(m[i + 1]) * mult;
  });
  return total;
}

/** Milliseconds, or undefined when the text is not a Prometheus duration (or is beyond MAX_DURATION_MS). */
export function parseDuration(text: string): number | undefined {
  const ms = exactMs(text);
  return ms === undefined || ms > BigInt(MAX_DURATION_MS) ? undefined : Number(ms);
}

/** Units the grammar does not have, with the one to write instead (undefined: none fits). */
const FOREIGN_UNITS: Record<string, string | undefined> = {
  ns: undefined, us: undefined, 'µs': undefined, 'μs': undefined, M: undefined,
  msec: 'ms', msecs: 'ms', millisecond: 'ms', milliseconds: 'ms', MS: 'ms',
  sec: 's', secs: 's', second: 's', seconds: 's', S: 's',
  min: 'm', mins: 'm', minute: 'm', minutes: 'm',
  hr: 'h', hrs: 'h', hour: 'h', hours: 'h', H: 'h',
  day: 'd', days: 'd', D: 'd', week: 'w', weeks: 'w', W: 'w', year: 'y', years: 'y', Y: 'y',
};
const UNIT_MS = new Map(UNITS.map(([u, mult]) => [u, Number(mult)]));

/**
 * Why the text is not a Prometheus duration (one line, quoting it), or undefined when it is one.
 * Where the meaning is plain ("1.5s", "30s1m", "5 minutes") it names the duration to write instead.
 */
export function durationProblem(text: string): string | undefined {
  if (text === '') return `empty: give a duration, ${DURATION_SYNTAX}`;
  const ms = exactMs(text);
  if (ms !== undefined) {
    return ms > BigInt(MAX_DURATION_MS) ? `"${text}" is out of range: the longest duration is ${formatDuration(MAX_DURATION_MS)}` : undefined;
  }
  const why = reasonOf(text);
  return `"${text}" is not a duration: ${why.reason}${why.instead !== undefined ? ` (write ${why.instead})` : ''}; ${DURATION_SYNTAX}`;
}

function reasonOf(text: string): { reason: string; instead?: string } {
  if (/^[+-]/.test(text)) return { reason: text.startsWith('-') ? 'a duration cannot be negative' : 'a duration has no sign' };
  // Read it leniently (spaces, fractions, other units, any order) to say what is wrong with it.
  const parts: { n: string; unit: string }[] = [];
  const part = /\s*(\d+(?:\.\d*)?|\.\d+)\s*([^\d\s.+-]*)\s*/y;
  while (part.lastIndex < text.length) {
    const m = part.exec(text);
    if (!m) return { reason: 'it is not a number followed by a unit' };
    parts.push({ n: m[1], unit: m[2] });
  }
  const bare = parts.find((p) => p.unit === '');
  if (bare) return { reason: `the number ${bare.n} has no unit` };
  const foreign = parts.find((p) => !UNIT_MS.has(p.unit));
  if (foreign && !Object.hasOwn(FOREIGN_UNITS, foreign.unit)) return { reason: `unknown unit "${foreign.unit}"` };
  if (foreign && FOREIGN_UNITS[foreign.unit] === undefined) {
    return { reason: `unknown unit "${foreign.unit}": ${foreign.unit === 'M' ? 'there are no months, use w or d' : 'the smallest unit is ms'}` };
  }
  // Every unit is known or has a plain equivalent: name the duration to write.
  const unitOf = (u: string): string => (UNIT_MS.has(u) ? u : (FOREIGN_UNITS[u] as string));
  const total = parts.reduce((sum, p) => sum + Number(p.n) * (UNIT_MS.get(unitOf(p.unit)) as number), 0);
  const instead = Number.isInteger(total) && total <= MAX_DURATION_MS ? formatDuration(total) : undefined;
  if (foreign) return { reason: `unknown unit "${foreign.unit}": use ${unitOf(foreign.unit)}`, instead };
  if (/\s/.test(text)) return { reason: 'it has spaces in it', instead };
  if (parts.some((p) => !/^\d+$/.test(p.n))) return { reason: 'fractions are not allowed, use a smaller unit', instead };
  const order = parts.map((p) => UNITS.findIndex(([u]) => u === p.unit));
  if (new Set(order).size < order.length) return { reason: 'a unit appears twice', instead };
  return { reason: 'units must go from largest to smallest', instead };
}

/**
 * A whole, non-negative number of milliseconds as Prometheus writes it (model.Duration.String):
 * "0s", "500ms", "1m30s", "2d", "1w". parseDuration reads it back to the same number.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`cannot format ${ms} ms as a duration`);
  let rest = BigInt(Math.round(ms));
  if (rest === 0n) return '0s';
  let out = '';
  for (const [unit, mult] of UNITS) {
    const n = rest / mult;
    if (n > 0n) {
      out += `${n}${unit}`;
      rest -= n * mult;
    }
  }
  return out;
}
