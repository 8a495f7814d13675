import { clientIdOf } from '../../util/hypha-id';

/**
 * Reads the cached id a holder reports. The value may be a bare client id, a
 * "ws/client" target or a full "ws/client:svc" id; all reduce to the client id.
 * Returns undefined when the path does not lead to a non-empty string.
 */
export function readHeldClientId(result: unknown, path: readonly string[] | undefined): string | undefined {
  let v: unknown = result;
  for (const part of path ?? []) {
    if (Array.isArray(v) && /^\d+$/.test(part)) v = v[Number(part)];
    else if (v !== null && typeof v === 'object' && !Array.isArray(v)) v = (v as Record<string, unknown>)[part];
    else return undefined;
  }
  if (typeof v !== 'string') return undefined;
  return clientIdOf(v);
}
