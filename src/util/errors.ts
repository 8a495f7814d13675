/** A message for any thrown value, without stack. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}

/**
 * Every failure a source tells apart, in one closed set. The labels a failure is counted under
 * (`SampleErrorReason`, `CallOutcome`) are derived from it by total tables in src/sources/.
 */
export const SOURCE_ERROR_CLASSES = [
  'timeout', // our own deadline, or hypha-rpc's "Method call timed out"
  'connect', // no TCP connection, websocket or handshake; or the connection broke while reading an answer
  'http_status', // an HTTP answer other than 200 (and not a refusal)
  'too_large', // the answer exceeds the configured size limit
  'bad_json', // the answer is not JSON
  'schema', // the answer did not have the shape we need
  'auth', // token rejected (HTTP 401/403), workspace mismatch or not accessible, permission denied
  'auth_signature', // token refused because its signature does not verify (counted as auth)
  // An auth_signature refusal of a token this server accepted before (set by HyphaClient, never by classify).
  'auth_secret_changed',
  'not_found', // "Service not found", target peer/client or method gone
  'manager_not_found', // a not_found addressed to the workspace manager (*/manager-<server id>): the server id changed
  'never_sent', // failed to send: the connection is closed or reconnecting
  'connection_lost', // the connection went away while the call was in flight (it may have run)
  'remote', // any other error raised by the remote side (a Hypha call)
  'other', // anything else: an error no source raised on purpose
] as const;

export type SourceErrorClass = (typeof SOURCE_ERROR_CLASSES)[number];

/** The one error type of the sources: a closed error class to count it by, and a message for logs and the status page. */
export class SourceError extends Error {
  constructor(
    readonly errorClass: SourceErrorClass,
    message: string,
    /**
     * The Hypha operation that failed ("listServices", "connect", ...), once the error is attributed to one
     * (src/sources/hypha/errors.ts `fromHypha`); absent on errors raised below that level, such as withTimeout's.
     */
    readonly op?: string,
  ) {
    super(message);
    this.name = 'SourceError';
  }
}

/** Rejects after ms with a SourceError of class timeout; the timer never keeps the process alive. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SourceError('timeout', `${what} timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
