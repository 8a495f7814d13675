import type { CallOutcome } from '../../snapshot/services';
import type { SourceErrorClass } from '../../util/errors';

/**
 * Outcome class of a failed probe, split by what it says about the handle:
 * `never_sent` provably never left the process (no evidence either way);
 * `timeout` and `not_found` may have reached a provider or addressed one that
 * is gone, which is what a stale handle looks like; anything else the far end
 * said is an application `error`, which is not evidence that the handle is stale.
 * A table over every class, so that the compiler rejects a class without an outcome.
 */
const OUTCOMES: Readonly<Record<SourceErrorClass, Exclude<CallOutcome, 'ok'>>> = {
  timeout: 'timeout',
  not_found: 'not_found',
  manager_not_found: 'not_found',
  never_sent: 'never_sent',
  connect: 'never_sent',
  // The call may have run.
  connection_lost: 'error',
  auth: 'error',
  auth_signature: 'error',
  auth_secret_changed: 'error',
  schema: 'error',
  remote: 'error',
  // Not raised by a Hypha call (HTTP sources); an error all the same.
  http_status: 'error',
  too_large: 'error',
  bad_json: 'error',
  other: 'error',
};

export function outcomeOf(errorClass: SourceErrorClass): CallOutcome {
  return OUTCOMES[errorClass];
}
