import { SAMPLE_ERROR_REASONS } from '../../src/snapshot/health';
import { CALL_OUTCOMES } from '../../src/snapshot/services';
import { classify, fromHypha } from '../../src/sources/hypha/errors';
import { sampleReason, sampleReasonOf } from '../../src/sources/sample-reason';
import { outcomeOf } from '../../src/sources/services/outcome';
import { SOURCE_ERROR_CLASSES, SourceError, withTimeout } from '../../src/util/errors';
import { Secret } from '../../src/util/secret';

// The one error type of the sources: its classes map onto the published label vocabularies, and a
// typed error is classified by its class, never by its text.

/** The thrown value of a rejected promise (fails the test when it resolves). */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('resolved, expected a rejection');
    },
    (e: unknown) => e,
  );
}

describe('class -> label mappers', () => {
  it('map every class to a published reason and a failure outcome', () => {
    expect(SOURCE_ERROR_CLASSES.length).toBeGreaterThan(0);
    expect(new Set(SOURCE_ERROR_CLASSES).size).toBe(SOURCE_ERROR_CLASSES.length);
    for (const errorClass of SOURCE_ERROR_CLASSES) {
      expect(SAMPLE_ERROR_REASONS).toContain(sampleReason(errorClass));
      const outcome = outcomeOf(errorClass);
      expect(CALL_OUTCOMES).toContain(outcome);
      expect(outcome).not.toBe('ok');
    }
  });

  it('reach every published reason and every failure outcome from some class', () => {
    expect(new Set(SOURCE_ERROR_CLASSES.map(sampleReason))).toEqual(new Set(SAMPLE_ERROR_REASONS));
    expect(new Set(SOURCE_ERROR_CLASSES.map(outcomeOf))).toEqual(new Set(CALL_OUTCOMES.filter((o) => o !== 'ok')));
  });

  it('keep the labels the sources counted before the error types were merged', () => {
    const reasons = Object.fromEntries(SOURCE_ERROR_CLASSES.map((k) => [k, sampleReason(k)]));
    expect(reasons).toEqual({
      timeout: 'timeout', connect: 'connect', http_status: 'http_status', too_large: 'too_large', bad_json: 'bad_json',
      schema: 'schema', auth: 'auth', auth_signature: 'auth', auth_secret_changed: 'auth_secret_changed',
      not_found: 'rpc', manager_not_found: 'rpc', never_sent: 'rpc', connection_lost: 'rpc', remote: 'rpc', other: 'other',
    });
    const outcomes = Object.fromEntries(SOURCE_ERROR_CLASSES.map((k) => [k, outcomeOf(k)]));
    expect(outcomes).toEqual({
      timeout: 'timeout', not_found: 'not_found', manager_not_found: 'not_found', never_sent: 'never_sent', connect: 'never_sent',
      http_status: 'error', too_large: 'error', bad_json: 'error', schema: 'error', auth: 'error', auth_signature: 'error', auth_secret_changed: 'error',
      connection_lost: 'error', remote: 'error', other: 'error',
    });
  });

  it('count a thrown value by its class, anything untyped as other', () => {
    expect(sampleReasonOf(new SourceError('too_large', 'x'))).toBe('too_large');
    expect(sampleReasonOf(new SourceError('never_sent', 'x', 'listServices'))).toBe('rpc');
    // An untyped error is not read by its text outside a Hypha call.
    expect(sampleReasonOf(new Error('Method call timed out'))).toBe('other');
    expect(sampleReasonOf('a string')).toBe('other');
  });
});

describe('withTimeout', () => {
  it('resolves with the value when the promise is in time', async () => {
    await expect(withTimeout(Promise.resolve(7), 1000, 'fast')).resolves.toBe(7);
  });

  it('rejects with a SourceError of class timeout, classified by its class and not its text', async () => {
    const e = await rejection(withTimeout(new Promise(() => undefined), 5, 'listServices'));
    expect(e).toBeInstanceOf(SourceError);
    expect(e).toMatchObject({ errorClass: 'timeout', message: 'listServices timed out after 5 ms', op: undefined });
    expect(classify(e)).toBe('timeout');
    (e as SourceError).message = 'a text no pattern knows';
    expect(classify(e)).toBe('timeout');
    expect(sampleReasonOf(e)).toBe('timeout');
  });

  it('is attributed to the Hypha op with the message the logs showed before', async () => {
    const e = await rejection(withTimeout(new Promise(() => undefined), 5, 'listServices'));
    const err = fromHypha(e, 'listServices');
    expect(err).toMatchObject({ errorClass: 'timeout', op: 'listServices', message: 'listServices: listServices timed out after 5 ms' });
    expect(outcomeOf(err.errorClass)).toBe('timeout');
  });
});

describe('classify', () => {
  it('reads a typed error by its class even when its text says something else', () => {
    expect(classify(new SourceError('schema', 'Method call timed out: looks like hypha-rpc'))).toBe('schema');
    expect(classify(new SourceError('auth_secret_changed', 'RPC connection closed'))).toBe('auth_secret_changed');
  });

  it("reads hypha-rpc's untyped timeouts by their text", () => {
    expect(classify(new Error('Method call timed out: */manager-a:services.default.list_services, context: …'))).toBe('timeout');
    expect(classify(new Error('TimeoutError: Operation timed out'))).toBe('timeout');
    expect(classify('Timeout Error')).toBe('timeout');
  });

  it('no longer knows our own deadline text on an untyped error', () => {
    expect(classify(new Error('listServices timed out after 5000 ms'))).toBe('remote');
  });
});

describe('fromHypha', () => {
  it('passes an error already attributed to an op on unchanged', () => {
    const err = new SourceError('not_found', 'getServiceInfo: Service not found', 'getServiceInfo');
    expect(fromHypha(err, 'sample')).toBe(err);
  });

  it("attributes hypha-rpc's untyped errors: class from the text, message prefixed by the op and free of the token", () => {
    const token = new Secret('super-secret-token-value-1234567890');
    const err = fromHypha(new Error(`Failed to send the request when calling method (x): ${token.reveal()}`), 'callDirect', [token]);
    expect(err).toBeInstanceOf(SourceError);
    expect(err.errorClass).toBe('never_sent');
    expect(err.op).toBe('callDirect');
    expect(err.message.startsWith('callDirect: Failed to send the request')).toBe(true);
    expect(err.message).not.toContain(token.reveal());
  });
});
