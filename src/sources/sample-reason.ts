import type { SampleErrorReason } from '../snapshot/health';
import { SourceError, SourceErrorClass } from '../util/errors';

// A table over every class, so that the compiler rejects a class without a reason. Hypha's call
// failures that are neither a deadline, a refusal nor a bad answer are counted together as `rpc`.
const SAMPLE_REASONS: Readonly<Record<SourceErrorClass, SampleErrorReason>> = {
  timeout: 'timeout',
  connect: 'connect',
  http_status: 'http_status',
  too_large: 'too_large',
  bad_json: 'bad_json',
  schema: 'schema',
  auth: 'auth',
  auth_signature: 'auth',
  auth_secret_changed: 'auth_secret_changed',
  not_found: 'rpc',
  manager_not_found: 'rpc',
  never_sent: 'rpc',
  connection_lost: 'rpc',
  remote: 'rpc',
  other: 'other',
};

/** Label value for hypha_serve_source_errors_total. */
export function sampleReason(errorClass: SourceErrorClass): SampleErrorReason {
  return SAMPLE_REASONS[errorClass];
}

/** The reason a failed sample is counted under: a SourceError's class's, `other` for anything else. */
export function sampleReasonOf(e: unknown): SampleErrorReason {
  return sampleReason(e instanceof SourceError ? e.errorClass : 'other');
}
