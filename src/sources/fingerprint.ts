import crypto from 'node:crypto';
import { Secret } from '../util/secret';
import { FileSecret } from '../config/credential-file';

// Fingerprints are only ever compared within this process (running plan against the reloaded
// one), so a key that never leaves it keeps a fingerprint that leaks from being a way to test
// guesses of a token offline.
const SECRET_KEY = crypto.randomBytes(32);

/**
 * Stable text of a config fragment: equal for equal configs, different whenever anything that
 * should restart a source differs. JSON.stringify alone would see every Secret as "<secret>" (its
 * toJSON hides the value, so a changed token would not restart anything), every RegExp as {} and
 * every Map or Set as {}. A token file is fingerprinted by its path: its content is re-read in place.
 * Object keys are sorted, so the order a loader happens to build them in does not matter; array
 * order does (it is config order).
 */
export function fingerprint(v: unknown): string {
  return JSON.stringify(canonical(v)) ?? 'undefined';
}

function canonical(v: unknown): unknown {
  // A token file's content changes are taken in place (the source re-reads it); only another file restarts a source.
  if (v instanceof FileSecret) return { $secretFile: v.file };
  if (v instanceof Secret) return { $secret: crypto.createHmac('sha256', SECRET_KEY).update(v.reveal()).digest('hex') };
  if (v instanceof RegExp) return { $regexp: v.source, flags: v.flags };
  if (v instanceof Map) return { $map: sortedBy([...v].map(([k, x]) => [canonical(k), canonical(x)]), (e) => JSON.stringify(e[0])) };
  if (v instanceof Set) return { $set: sortedBy([...v].map(canonical), (e) => JSON.stringify(e)) };
  if (Array.isArray(v)) return v.map(canonical);
  if (v === null || typeof v !== 'object') return v;
  const toJSON = (v as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return canonical(toJSON.call(v));
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) out[k] = canonical((v as Record<string, unknown>)[k]);
  return out;
}

function sortedBy<T>(xs: T[], key: (x: T) => string): T[] {
  return xs.map((x) => [key(x), x] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, x]) => x);
}
