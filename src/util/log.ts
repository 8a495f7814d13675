import pino, { Logger } from 'pino';

export type { Logger };
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Structured JSON logs to stderr. Fields that could hold credentials are
 * redacted by name as a second line of defence; the first is that secrets are
 * Secret objects which serialise as "<secret>".
 */
export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { name: 'hypha-serve-exporter' },
      formatters: { level: (label) => ({ level: label }) },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization', 'password', '*.password'],
        censor: '<secret>',
      },
    },
    destination ?? pino.destination({ fd: 2, sync: true }),
  );
}
