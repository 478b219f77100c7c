// The log levels both eras share: logging/setLevel and notifications/message (2025-11-25), and
// the request `_meta` log level (2026-07-28).
/** RFC 5424 severities in ascending order (logging/setLevel, notifications/message). */
export const LOG_LEVELS = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
