import { z } from 'zod';
import { DURATION_PATTERN, DURATION_SYNTAX, durationProblem, parseDuration } from '../util/duration';

// Field validators shared by every config fragment (schema.ts imports the
// fragments, so the shared pieces live here rather than there).

/**
 * A text in Prometheus's duration grammar (src/util/duration.ts). The pattern also goes into the
 * published JSON Schema; every message quotes the value and says what to write instead.
 */
function durationText(positive: boolean) {
  return z
    .string({
      error: (iss) => {
        if (iss.input === undefined) return undefined; // missing: zod's own message
        const v = iss.input;
        const what = typeof v === 'number' ? `the number ${v} has no unit`
          : `it is ${v === null ? 'empty (null)' : Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'a mapping' : String(v)}`;
        return `must be a duration: ${what}; ${DURATION_SYNTAX}`;
      },
    })
    .regex(DURATION_PATTERN, { error: (iss) => durationProblem(String(iss.input)), abort: true })
    .superRefine((s, ctx) => {
      const problem = durationProblem(s);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      else if (positive && parseDuration(s) === 0) ctx.addIssue({ code: 'custom', message: `must be longer than 0, e.g. 500ms, 15s, 1m` });
    });
}

/** A duration longer than 0. */
export const duration = durationText(true);

/** A duration that may be 0 (a wait that can be none). */
export const durationOrZero = durationText(false);

/** Milliseconds of a duration the schema has already accepted (throws only on a text it would refuse). */
export function durationMs(d: string): number {
  const v = parseDuration(d);
  if (v === undefined) throw new Error(`invalid duration: ${durationProblem(d) ?? d}`);
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

/** Prometheus's TLS version names (tls_config, tls_server_config) and Node's. */
export const TLS_VERSIONS = { TLS10: 'TLSv1', TLS11: 'TLSv1.1', TLS12: 'TLSv1.2', TLS13: 'TLSv1.3' } as const;
export type TlsVersionName = keyof typeof TLS_VERSIONS;
export const TLS_VERSION_NAMES = Object.keys(TLS_VERSIONS) as TlsVersionName[];

/** A credential comes from a file or an environment variable, never inline. */
export const credentialRef = {
  bearer_token_file: z.string().min(1).optional(),
  bearer_token_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name').optional(),
};

/** Names that become label values (cluster, Hypha server). */
export const labelName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$/, 'must be 1-63 characters of letters, digits, _ . : -');
