// Error text is read in one place, classify (src/sources/hypha/errors.ts); every decision after it reads the
// class. One case per distinction that used to be made on the message elsewhere: the connection's "the server id
// changed under us" (a not-found aimed at the manager) and the client's "the JWT secret changed" (a signature
// refusal of a token accepted before).
import { makesConnectionSuspect } from '../../src/sources/hypha/connection';
import { classify, explainRefusal, fromHypha } from '../../src/sources/hypha/errors';
import { sampleReason } from '../../src/sources/sample-reason';
import { outcomeOf } from '../../src/sources/services/outcome';
import { SOURCE_ERROR_CLASSES, SourceError, type SourceErrorClass } from '../../src/util/errors';

// Texts as hypha-rpc 0.21.40 and the Hypha server produce them (src/rpc.js; hypha/core/auth.py via RemoteError).
const MANAGER_GONE = 'Method not found: */manager-0f3a:services.default.list_services, context: {ws: ws-user-root}';
const PROVIDER_GONE = "RemoteError: Traceback …\nKeyError: 'Service not found: ws/*:artifact-manager@*'";
const MANAGER_TIMEOUT = 'Method call timed out: */manager-0f3a:services.default.list_services, context: …';
const SIGNATURE = 'ConnectionAbortedError: Authentication error: Signature verification failed.';
const EXPIRED = 'ConnectionAbortedError: Authentication error: Signature has expired. token has expired';

describe('classify: distinctions that need the text are classes', () => {
  it('a not-found aimed at the workspace manager is manager_not_found', () => {
    expect(classify(new Error(MANAGER_GONE))).toBe('manager_not_found');
    expect(fromHypha(new Error(MANAGER_GONE), 'listServices')).toMatchObject({ errorClass: 'manager_not_found', op: 'listServices' });
  });

  it('a not-found aimed at a provider stays not_found', () => {
    expect(classify(new Error(PROVIDER_GONE))).toBe('not_found');
    expect(classify(new Error('Client disconnected: ws-user-root/wk-1'))).toBe('not_found');
  });

  it('a timeout of a manager call stays a timeout (the manager text refines only a not-found)', () => {
    expect(classify(new Error(MANAGER_TIMEOUT))).toBe('timeout');
  });

  it('a refusal whose token signature does not verify is auth_signature; other refusals stay auth', () => {
    expect(classify(new Error(SIGNATURE))).toBe('auth_signature');
    expect(classify(new Error(EXPIRED))).toBe('auth');
    expect(classify(new Error("ConnectionAbortedError: Failed to establish connection: 'Workspace x does not exist or is not accessible'"))).toBe('auth');
  });

  it('the signature text alone, without a refusal, is not a refusal', () => {
    expect(classify(new Error('RemoteError: ValueError: Signature verification failed in my own code'))).toBe('remote');
  });

  it('a typed error keeps its class whatever its text says', () => {
    expect(classify(new SourceError('not_found', MANAGER_GONE))).toBe('not_found');
    expect(classify(new SourceError('auth', SIGNATURE))).toBe('auth');
  });

  it('the refined classes are counted as the classes they refine', () => {
    expect(sampleReason('manager_not_found')).toBe(sampleReason('not_found'));
    expect(outcomeOf('manager_not_found')).toBe(outcomeOf('not_found'));
    expect(sampleReason('auth_signature')).toBe(sampleReason('auth'));
    expect(outcomeOf('auth_signature')).toBe(outcomeOf('auth'));
  });
});

describe('the connection decides by the class whether it is suspect', () => {
  const suspect = (errorClass: SourceErrorClass, managerCall: boolean) => makesConnectionSuspect(errorClass, managerCall);

  it('a not-found aimed at the manager makes it suspect, on any call; a provider gone does not', () => {
    expect(suspect(classify(new Error(MANAGER_GONE)), true)).toBe(true);
    expect(suspect(classify(new Error(MANAGER_GONE)), false)).toBe(true);
    expect(suspect(classify(new Error(PROVIDER_GONE)), true)).toBe(false);
  });

  it('a timeout makes it suspect on a manager call only', () => {
    expect(suspect('timeout', true)).toBe(true);
    expect(suspect('timeout', false)).toBe(false);
  });

  it('never_sent and connection_lost always do; no other class does', () => {
    const always = SOURCE_ERROR_CLASSES.filter((k) => suspect(k, false));
    expect(always.sort()).toEqual(['connection_lost', 'manager_not_found', 'never_sent']);
    expect(SOURCE_ERROR_CLASSES.filter((k) => suspect(k, true)).sort()).toEqual(['connection_lost', 'manager_not_found', 'never_sent', 'timeout']);
  });
});

describe('explainRefusal: the JWT secret changed', () => {
  const refusal = fromHypha(new Error(SIGNATURE), 'connect');

  it('a signature refusal of a token this server accepted before is auth_secret_changed, with the explanation', () => {
    const err = explainRefusal(refusal, true);
    expect(err).toMatchObject({ errorClass: 'auth_secret_changed', op: 'connect' });
    expect(err.message).toContain('Signature verification failed');
    expect(err.message).toContain('new JWT secret');
  });

  it('the same refusal of a token never accepted stays auth_signature', () => {
    expect(explainRefusal(refusal, false)).toBe(refusal);
  });

  it('another refusal of an accepted token is not explained as a new secret', () => {
    const expired = fromHypha(new Error(EXPIRED), 'connect');
    expect(explainRefusal(expired, true)).toBe(expired);
    const text = new SourceError('auth', `connect: ${SIGNATURE}`, 'connect');
    // Decided by the class, not by the text: a typed auth error is never re-read.
    expect(explainRefusal(text, true)).toBe(text);
  });
});
