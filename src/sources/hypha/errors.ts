import type { SampleErrorReason } from '../../snapshot/types';
import { errorMessage } from '../../util/errors';
import { scrub, Secret } from '../../util/secret';

/**
 * What went wrong talking to Hypha. The classes follow what a caller can do
 * about it: `never_sent` is provably harmless to retry, `timeout` may have
 * executed, `not_found` means the addressed service or client is gone.
 */
export type HyphaErrorKind =
  | 'timeout' // our own deadline, or hypha-rpc's "Method call timed out"
  | 'connect' // no websocket / handshake to the server
  | 'auth' // token rejected, workspace mismatch or not accessible, permission denied
  | 'auth_secret_changed' // a token this server accepted before now fails its signature check (set by HyphaClient, never by classify)
  | 'not_found' // "Service not found", target peer/client not connected
  | 'never_sent' // failed to send: the connection is closed or reconnecting
  | 'connection_lost' // the connection went away while the call was in flight (it may have run)
  | 'schema' // the answer did not have the shape we need
  | 'remote'; // any other error raised by the remote side

export class HyphaError extends Error {
  constructor(
    readonly kind: HyphaErrorKind,
    /** What we were doing ("listServices", "connect", ...). */
    readonly op: string,
    message: string,
  ) {
    super(message);
    this.name = 'HyphaError';
  }
}

/** Label value for hypha_serve_source_errors_total. */
export function sampleReason(kind: HyphaErrorKind): SampleErrorReason {
  switch (kind) {
    case 'timeout': return 'timeout';
    case 'connect': return 'connect';
    case 'auth': return 'auth';
    case 'auth_secret_changed': return 'auth_secret_changed';
    case 'schema': return 'schema';
    default: return 'rpc';
  }
}

const JWT = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+/g;

/**
 * One line that says what happened, free of secrets. Remote errors arrive as
 * "RemoteError: <python traceback>"; the last line of the traceback is the
 * actual exception, the rest is noise in a log line.
 */
export function conciseMessage(e: unknown, secrets: readonly (Secret | undefined)[] = []): string {
  let text = errorMessage(e);
  if (text.startsWith('RemoteError:')) {
    const lines = text.split('\n').map((l) => l.trim()).filter((l) => l.length > 0 && !/^\^+$/.test(l));
    const last = lines[lines.length - 1] ?? text;
    text = `RemoteError: ${last}`;
  } else {
    text = text.split('\n')[0];
  }
  // hypha-rpc 0.21.40 interpolates the ws ErrorEvent object itself into this message.
  text = text.replace('WebSocket connection error: [object Object]', 'WebSocket connection error (server unreachable or connection refused)');
  // Nested remote errors arrive as "RemoteError: RemoteError: ..."
  text = text.replace(/^(RemoteError: )+/, 'RemoteError: ');
  text = scrub(text, secrets).replace(JWT, '<jwt>');
  return text.length > 500 ? `${text.slice(0, 497)}...` : text;
}

/** Classifies an error thrown by hypha-rpc (or by our own deadline). */
export function classify(e: unknown): HyphaErrorKind {
  if (e instanceof HyphaError) return e.kind;
  const msg = errorMessage(e);
  if (/Authentication error|Failed to authenticate|does not match the specified workspace|does not exist or is not accessible|PermissionError|Permission denied|Access denied|Invalid token|token has expired|ExpiredSignature/i.test(msg)) {
    return 'auth';
  }
  if (/Method call timed out|Timeout Error|timed out after|TimeoutError/i.test(msg)) return 'timeout';
  if (/Service not found|is not connected|Client disconnected|peer_not_found|Method not found|Session not found|Method expired/i.test(msg)) return 'not_found';
  if (/RPC connection closed|Connection lost:/i.test(msg)) return 'connection_lost';
  if (/Failed to send the request|Connection is closed|WebSocket connection error|reconnection timed out|ConnectionAbortedError: WebSocket closed/i.test(msg)) {
    return 'never_sent';
  }
  return 'remote';
}

export function toHyphaError(e: unknown, op: string, secrets: readonly (Secret | undefined)[] = []): HyphaError {
  if (e instanceof HyphaError) return e;
  return new HyphaError(classify(e), op, `${op}: ${conciseMessage(e, secrets)}`);
}

/**
 * A refusal that says the token's signature does not verify (python-jose's JWTError text, which
 * hypha/core/auth.py `valid_token` passes on), as opposed to an expired token or a denied workspace.
 */
export function isSignatureFailure(message: string): boolean {
  return /Signature verification failed/i.test(message);
}
