// Health of one upstream source: the part of the snapshot every source writes.

/** Why a sample failed. Closed set: it is a label value. */
export type SampleErrorReason =
  | 'timeout'
  | 'connect'
  | 'http_status'
  | 'too_large'
  | 'bad_json'
  | 'schema'
  | 'auth'
  | 'rpc'
  | 'other';

export const SAMPLE_ERROR_REASONS: readonly SampleErrorReason[] = [
  'timeout', 'connect', 'http_status', 'too_large', 'bad_json', 'schema', 'auth', 'rpc', 'other',
];

// 'hypha' is a registry connection (target = configured server name); 'hypha_service' is a
// watched service's own connection (target = the service id, e.g. public/artifact-manager), kept
// apart so that a failing watched service silences only the alerts derived from it.
export type SourceKind = 'ray' | 'hypha' | 'hypha_service';

/** Health of one upstream, in the style of consul_exporter's `consul_up`. */
export interface SourceHealth {
  source: SourceKind;
  /** The configured name of the upstream (cluster or Hypha server name), never its URL. */
  target: string;
  up: boolean;
  /** Wall-clock seconds of the last successful sample, if any. */
  lastSuccessSeconds?: number;
  /** Duration of the last sample attempt, seconds. */
  lastDurationSeconds?: number;
  /** Cumulative errors by reason since the exporter started. */
  errors: Record<SampleErrorReason, number>;
  /** Last error message (already free of secrets), for logs and the status page. */
  lastError?: string;
  lastErrorSeconds?: number;
  /** Configured sampling interval (seconds): a sample age well past it while `up` stays 1 is a stuck sampler. */
  intervalSeconds?: number;
}

/**
 * A source's health at start. A source restarted by a reload continues from its predecessor's
 * health (up, last success, error counts): a reload is not an outage, and counters must not reset.
 */
export function newSourceHealth(source: SourceKind, target: string, intervalSeconds?: number, previous?: SourceHealth): SourceHealth {
  if (previous && previous.source === source && previous.target === target) return { ...previous, intervalSeconds };
  const errors = Object.fromEntries(SAMPLE_ERROR_REASONS.map((r) => [r, 0])) as Record<SampleErrorReason, number>;
  return { source, target, up: false, errors, intervalSeconds };
}

/** The health after a failed sample: down, counted by reason, with the (already scrubbed) message. */
export function failedHealth(h: SourceHealth, reason: SampleErrorReason, message: string, durationSeconds?: number): SourceHealth {
  return {
    ...h,
    up: false,
    lastDurationSeconds: durationSeconds ?? h.lastDurationSeconds,
    errors: { ...h.errors, [reason]: h.errors[reason] + 1 },
    lastError: message,
    lastErrorSeconds: Date.now() / 1000,
  };
}
