import { z } from 'zod';
import { parseDuration } from '../util/duration';

// Field validators shared by every config fragment (schema.ts imports the
// fragments, so the shared pieces live here rather than there).

export const duration = z
  .string()
  .regex(/^(\d+(\.\d+)?(ms|s|m|h|d))+$/, 'must be a duration such as 500ms, 15s, 1m')
  .refine((s) => {
    const ms = parseDuration(s);
    return ms !== undefined && ms > 0;
  }, 'must be a duration such as 500ms, 15s, 1m');

/** A duration that may be 0 (a wait that can be none). */
export const durationOrZero = z
  .string()
  .regex(/^(\d+(\.\d+)?(ms|s|m|h|d))+$/, 'must be a duration such as 0s, 30s, 5m')
  .refine((s) => parseDuration(s) !== undefined, 'must be a duration such as 0s, 30s, 5m');

/** Milliseconds of a duration the schema has already accepted (throws only on a text it would refuse). */
export function durationMs(d: string): number {
  const v = parseDuration(d);
  if (v === undefined) throw new Error(`invalid duration ${d}`);
  return v;
}

export const httpUrl = z.string().refine((s) => {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}, 'must be an http(s) URL without credentials in it');

export const wsOrHttpUrl = z.string().refine((s) => {
  try {
    const u = new URL(s);
    return ['http:', 'https:', 'ws:', 'wss:'].includes(u.protocol) && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}, 'must be an http(s) or ws(s) URL without credentials in it');

/** A credential comes from a file or an environment variable, never inline. */
export const credentialRef = {
  bearer_token_file: z.string().min(1).optional(),
  bearer_token_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name').optional(),
};

/** Names that become label values (cluster, Hypha server). */
export const labelName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$/, 'must be 1-63 characters of letters, digits, _ . : -');
