import type { CallOutcome } from '../../snapshot/services';
import type { HyphaErrorKind } from '../hypha/errors';

/**
 * Outcome class of a failed probe, split by what it says about the handle:
 * `never_sent` provably never left the process (no evidence either way);
 * `timeout` and `not_found` may have reached a provider or addressed one that
 * is gone, which is what a stale handle looks like; anything else the far end
 * said is an application `error`, which is not evidence that the handle is stale.
 */
export function outcomeOf(kind: HyphaErrorKind): CallOutcome {
  switch (kind) {
    case 'timeout': return 'timeout';
    case 'not_found': return 'not_found';
    case 'never_sent':
    case 'connect':
      return 'never_sent';
    default:
      // connection_lost (the call may have run), auth, schema, remote.
      return 'error';
  }
}
