import { errorMessage, SourceError, SourceErrorKind } from '../../util/errors';
import { scrub, Secret } from '../../util/secret';

// Hypha failures are SourceErrors. Their kinds follow what a caller can do about them: `never_sent`
// is provably harmless to retry, `timeout` may have executed, `not_found` means the addressed
// service or client is gone (src/util/errors.ts lists every kind).

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

/**
 * hypha-rpc 0.21.40's untyped errors by their text: its own (src/rpc.js, src/websocket-client.js) and the Hypha
 * server's exceptions it passes on (RemoteError: ..., hypha/core/auth.py, hypha/core/workspace.py). The first match wins.
 */
const UNTYPED: readonly (readonly [RegExp, SourceErrorKind])[] = [
  [/Authentication error|Failed to authenticate|does not match the specified workspace|does not exist or is not accessible/i, 'auth'],
  [/PermissionError|Permission denied|Access denied|Invalid token|token has expired|ExpiredSignature/i, 'auth'],
  [/Method call timed out|Timeout Error|TimeoutError/i, 'timeout'],
  [/Service not found|is not connected|Client disconnected|peer_not_found|Method not found|Session not found|Method expired/i, 'not_found'],
  [/RPC connection closed|Connection lost:/i, 'connection_lost'],
  [/Failed to send the request|Connection is closed|WebSocket connection error/i, 'never_sent'],
  [/ConnectionAbortedError: WebSocket closed/i, 'never_sent'],
];

/** The kind of a failed Hypha call: a SourceError's own kind, else what hypha-rpc's text says (`remote` when it says nothing known). */
export function classify(e: unknown): SourceErrorKind {
  if (e instanceof SourceError) return e.kind;
  const msg = errorMessage(e);
  return UNTYPED.find(([re]) => re.test(msg))?.[1] ?? 'remote';
}

/**
 * The failure of Hypha operation `op`, as a SourceError whose message starts with the op and holds no secret.
 * One already attributed to an op is passed on as it is.
 */
export function fromHypha(e: unknown, op: string, secrets: readonly (Secret | undefined)[] = []): SourceError {
  if (e instanceof SourceError && e.op !== undefined) return e;
  return new SourceError(classify(e), `${op}: ${conciseMessage(e, secrets)}`, op);
}

/**
 * A refusal that says the token's signature does not verify (python-jose's JWTError text, which
 * hypha/core/auth.py `valid_token` passes on), as opposed to an expired token or a denied workspace.
 */
export function isSignatureFailure(message: string): boolean {
  return /Signature verification failed/i.test(message);
}
