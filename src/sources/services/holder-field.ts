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

/** "ws/client:svc" → "client"; "ws/client" → "client"; "client" → "client". */
export function clientIdOf(id: string): string | undefined {
  let s = id.trim();
  const at = s.indexOf('@');
  if (at >= 0) s = s.slice(0, at);
  const slash = s.indexOf('/');
  if (slash >= 0) s = s.slice(slash + 1);
  const colon = s.indexOf(':');
  if (colon >= 0) s = s.slice(0, colon);
  return s.length > 0 && s.length <= 256 ? s : undefined;
}
