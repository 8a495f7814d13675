import { errorMessage, SourceError, SourceErrorClass } from '../../util/errors';
import { scrub, Secret } from '../../util/secret';

// Hypha failures are SourceErrors. Their classes follow what a caller can do about them: `never_sent`
// is provably harmless to retry, `timeout` may have executed, `not_found` means the addressed
// service or client is gone (src/util/errors.ts lists every class).

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
const UNTYPED: readonly (readonly [RegExp, SourceErrorClass])[] = [
  [/Authentication error|Failed to authenticate|does not match the specified workspace|does not exist or is not accessible/i, 'auth'],
  [/PermissionError|Permission denied|Access denied|Invalid token|token has expired|ExpiredSignature/i, 'auth'],
  [/Method call timed out|Timeout Error|TimeoutError/i, 'timeout'],
  [/Service not found|is not connected|Client disconnected|peer_not_found|Method not found|Session not found|Method expired/i, 'not_found'],
  [/RPC connection closed|Connection lost:/i, 'connection_lost'],
  [/Failed to send the request|Connection is closed|WebSocket connection error/i, 'never_sent'],
  [/ConnectionAbortedError: WebSocket closed/i, 'never_sent'],
];

/**
 * Refinements of a class by more of the same text. A refusal whose token signature does not verify (python-jose's
 * JWTError text, which hypha/core/auth.py `valid_token` passes on), as opposed to an expired token or a denied
 * workspace; a not-found addressed to the workspace manager (`manager-<server id>` in any workspace), which means the server id
 * changed under the connection, as opposed to a provider gone.
 */
const REFINED: Partial<Record<SourceErrorClass, readonly (readonly [RegExp, SourceErrorClass])[]>> = {
  auth: [[/Signature verification failed/i, 'auth_signature']],
  not_found: [[/\*\/manager-/, 'manager_not_found']],
};

/**
 * The class of a failed Hypha call: a SourceError's own class, else what hypha-rpc's text says (`remote` when it says
 * nothing known). The one place where error text is read: everything else decides by the class.
 */
export function classify(e: unknown): SourceErrorClass {
  if (e instanceof SourceError) return e.errorClass;
  const msg = errorMessage(e);
  const errorClass = UNTYPED.find(([re]) => re.test(msg))?.[1] ?? 'remote';
  return REFINED[errorClass]?.find(([re]) => re.test(msg))?.[1] ?? errorClass;
}

/**
 * The failure of Hypha operation `op`, as a SourceError whose message starts with the op and holds no secret.
 * One already attributed to an op is passed on as it is.
 */
export function fromHypha(e: unknown, op: string, secrets: readonly (Secret | undefined)[] = []): SourceError {
  if (e instanceof SourceError && e.op !== undefined) return e;
  return new SourceError(classify(e), `${op}: ${conciseMessage(e, secrets)}`, op);
}

/** Appended to the refusal in logs and last_error; the status page adds the full hint (REASON_HINTS). */
const AUTH_SECRET_CHANGED_TEXT = 'a token this server accepted before: Hypha likely restarted with a new JWT secret; BioEngine proxy tokens are invalid too';

/**
 * A token this server accepted before and whose signature it now refuses: the JWT secret changed,
 * which Hypha does at every start unless HYPHA_JWT_SECRET or JWT_SECRET is set (hypha/core/auth.py).
 * Every token the old process issued is then invalid, not only this one. Anything else is passed on.
 */
export function explainRefusal(err: SourceError, acceptedBefore: boolean): SourceError {
  if (err.errorClass !== 'auth_signature' || !acceptedBefore) return err;
  return new SourceError('auth_secret_changed', `${err.message} (${AUTH_SECRET_CHANGED_TEXT})`, err.op);
}
