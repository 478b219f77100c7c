// SQLSTATE → error key: the one published table (README "Errors") for Postgres failures.
import { ProtocolError, type ErrorKey } from '../../errors.js';

interface SqlStateRule {
  /** A full SQLSTATE ("42501") or a class prefix ("08"). */
  readonly match: string;
  readonly key: ErrorKey;
  readonly message: string;
}

/** First match wins; anything unmatched is INTERNAL (-32603, generic message). */
const SQLSTATE_RULES: readonly SqlStateRule[] = [
  { match: '42501', key: 'FORBIDDEN', message: 'Permission denied.' },
  {
    // A row key that does not convert to its column's type (row collections).
    match: '22',
    key: 'INVALID_PARAMS',
    message: 'Invalid params: a value does not fit its column type.',
  },
  {
    match: '28',
    key: 'UNAUTHENTICATED',
    message: 'The database refused the credentials.',
  },
  {
    match: '57014',
    key: 'TIMEOUT',
    message: 'The database query timed out or was cancelled.',
  },
  { match: '08', key: 'UNAVAILABLE', message: 'The database is unavailable.' },
  {
    // lock_timeout (PGMCP_LOCK_TIMEOUT_MS): another session holds a lock this work needs (issue 32
    // point 8); the request is refused after a bounded wait, to be retried.
    match: '55P03',
    key: 'UNAVAILABLE',
    message:
      'The database is busy: a lock this request needs is held; try again.',
  },
  {
    match: '57P01',
    key: 'UNAVAILABLE',
    message: 'The database is unavailable.',
  },
  {
    match: '57P02',
    key: 'UNAVAILABLE',
    message: 'The database is unavailable.',
  },
  {
    match: '57P03',
    key: 'UNAVAILABLE',
    message: 'The database is unavailable.',
  },
  {
    match: '53300',
    key: 'UNAVAILABLE',
    message: 'The database is unavailable.',
  },
];

/** Node socket errors that mean the database cannot be reached. */
const UNAVAILABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
]);

/** Map a driver error to a safe ProtocolError, keeping the original as `cause` (logged, never sent). */
export function toDatabaseError(error: unknown): ProtocolError {
  if (error instanceof ProtocolError) return error;
  const code =
    typeof error === 'object' && error !== null
      ? (error as { code?: unknown }).code
      : undefined;
  if (typeof code === 'string') {
    const rule = SQLSTATE_RULES.find((candidate) =>
      code.startsWith(candidate.match),
    );
    if (rule !== undefined)
      return new ProtocolError(rule.key, rule.message, { cause: error });
    if (UNAVAILABLE_ERRNOS.has(code)) {
      return new ProtocolError('UNAVAILABLE', 'The database is unavailable.', {
        cause: error,
      });
    }
  }
  // pg-pool's own error when connectionTimeoutMillis (PGMCP_POOL_WAIT_MS) passes in its queue.
  if (
    error instanceof Error &&
    error.message === 'timeout exceeded when trying to connect'
  ) {
    return new ProtocolError(
      'POOL_EXHAUSTED',
      'The server is busy: no database connection came free in time; retry shortly.',
      { cause: error },
    );
  }
  if (
    error instanceof Error &&
    /Connection terminated|connection timeout|Client has encountered a connection error/i.test(
      error.message,
    )
  ) {
    return new ProtocolError('UNAVAILABLE', 'The database is unavailable.', {
      cause: error,
    });
  }
  return new ProtocolError('INTERNAL', 'Internal error.', { cause: error });
}
