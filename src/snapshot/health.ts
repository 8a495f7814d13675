// Health of one upstream source: the part of the snapshot every source writes.

// Why a sample failed. Closed set: it is a label value. Sources derive it from their SourceError's class (src/sources/sample-reason.ts).
// 'auth_secret_changed': Hypha refused a token it had accepted before, with a signature error: the server restarted
// with another JWT secret.
export const SAMPLE_ERROR_REASONS = [
  'timeout', 'connect', 'http_status', 'too_large', 'bad_json', 'schema', 'auth', 'auth_secret_changed', 'rpc', 'other',
] as const;

export type SampleErrorReason = typeof SAMPLE_ERROR_REASONS[number];

/**
 * What a failure reason means for the operator when the error text alone does not say it
 * (status page, /api/v1/status). True to upstream: hypha/core/auth.py picks a random JWT secret at
 * every start unless HYPHA_JWT_SECRET or JWT_SECRET is set; bioengine/apps/builder.py mints each
 * app's proxy_service_token (30 days) at deploy time, so only a redeploy replaces it.
 */
export const REASON_HINTS: Partial<Record<SampleErrorReason, string>> = {
  auth_secret_changed:
    'Hypha likely restarted with a new JWT secret (neither HYPHA_JWT_SECRET nor JWT_SECRET set, so it picked a random one): '
    + 'every token it issued before is invalid, including the proxy_service_token of every BioEngine app proxy. '
    + 'Give the exporter a new token (its token file is re-read), restart the BioEngine worker with a new token '
    + 'and redeploy its apps through the worker (deploy_app with the same application_id), '
    + 'and set HYPHA_JWT_SECRET on the Hypha server so that the next restart keeps tokens valid.',
};

// 'hypha' is a registry connection (target = configured server name); 'hypha_service' is a
// watched service's own connection (target = the service id, e.g. public/artifact-manager, on
// Hypha server `hypha`), kept apart so that a failing watched service silences only the alerts
// derived from it. In the metrics `target` becomes the label that names the upstream elsewhere in the
// contract: `ray_cluster`, `hypha` or `service` (families.ts, sourceLabels).
export type SourceKind = 'ray' | 'hypha' | 'hypha_service';

/** What the exporter may tell about a token file it reads (never its content). */
export interface CredentialStatus {
  file: string;
  /** Unix seconds of the last successful read (the first one at config load). */
  lastReadSeconds: number;
  /** Spells in which the file could not be read (missing, unreadable, empty); the last good token was kept. */
  readErrorsTotal: number;
  /** Why reading fails while the problem lasts ("ENOENT", "file is empty"); absent once a read succeeds. */
  problem?: string;
  /** Reads that found a token different from the one held. */
  changesTotal: number;
}

/** Health of one upstream, in the style of consul_exporter's `consul_up`. */
export interface SourceHealth {
  source: SourceKind;
  /** The configured name of the upstream (cluster or Hypha server name, or watched service id), never its URL. */
  target: string;
  /** hypha_service only: the configured name of the Hypha server the service is watched on (the `hypha` label). */
  hypha?: string;
  /**
   * The source's first attempt has not ended yet: its state is unknown, so its per-source series
   * are absent and the exporter is not ready (a start must not report a false 0).
   */
  pending?: true;
  up: boolean;
  /** Wall-clock seconds of the last successful sample, if any. */
  lastSuccessSeconds?: number;
  /** Duration of the last sample attempt, seconds. */
  lastDurationSeconds?: number;
  /** Cumulative errors by reason since the exporter started. */
  errors: Record<SampleErrorReason, number>;
  /** Last error message (already free of secrets), for logs and the status page. */
  lastError?: string;
  /** Reason of the last failure (kept after a recovery, like lastError). */
  lastErrorReason?: SampleErrorReason;
  lastErrorSeconds?: number;
  /** Configured sampling interval (seconds): a sample age well past it while `up` stays 1 is a stuck sampler. */
  intervalSeconds?: number;
  /** The token file the source authenticates with (bearer_token_file), if any. */
  credential?: CredentialStatus;
}

/** False while the source's first attempt is under way (see SourceHealth.pending). */
export function isKnown(h: SourceHealth): boolean {
  return h.pending !== true;
}

/**
 * A source's health at start. A source restarted by a reload takes the health its predecessor handed
 * over (up, last success, error counts): a reload is not an outage, and counters must not reset.
 */
export function newSourceHealth(source: SourceKind, target: string, intervalSeconds?: number, handover?: SourceHealth, hypha?: string): SourceHealth {
  const server = hypha === undefined ? {} : { hypha };
  if (handover && handover.source === source && handover.target === target) {
    const { hypha: _was, ...rest } = handover;
    return { ...rest, ...server, intervalSeconds };
  }
  const errors = Object.fromEntries(SAMPLE_ERROR_REASONS.map((r) => [r, 0])) as Record<SampleErrorReason, number>;
  return { source, target, ...server, up: false, errors, intervalSeconds };
}

/** The health after a failed sample: down, counted by reason, with the (already scrubbed) message. */
export function failedHealth(h: SourceHealth, reason: SampleErrorReason, message: string, durationSeconds?: number): SourceHealth {
  const { pending: _ended, ...rest } = h;
  return {
    ...rest,
    up: false,
    lastDurationSeconds: durationSeconds ?? h.lastDurationSeconds,
    errors: { ...h.errors, [reason]: h.errors[reason] + 1 },
    lastError: message,
    lastErrorReason: reason,
    lastErrorSeconds: Date.now() / 1000,
  };
}
