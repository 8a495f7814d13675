/** Unix seconds as an ISO 8601 UTC time to the second ("2026-12-07T03:14:00Z"), as `check` and the status page print times. */
export function isoSeconds(t: number): string {
  return new Date(t * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
