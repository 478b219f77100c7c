// The one function that turns anything thrown into a JSON-RPC error (STYLE §4).
import { ERROR_KEYS, ProtocolError } from '../errors.js';

export interface WireError {
  error: { code: number; message: string; data?: Record<string, unknown> };
  httpStatus: number;
}

/**
 * ProtocolError → its code, safe message and data (with the key in `data.code`).
 * Anything else → -32603 with a generic message; the original goes to `logError` only.
 */
export function toWireError(
  error: unknown,
  logError: (message: string, error: unknown) => void,
): WireError {
  if (error instanceof ProtocolError) {
    if (
      error.key === 'INTERNAL' ||
      error.key === 'UNAVAILABLE' ||
      error.key === 'TIMEOUT' ||
      error.key === 'POOL_EXHAUSTED'
    ) {
      logError(error.message, error.cause ?? error);
    }
    return {
      error: {
        code: error.code,
        message: error.message,
        data: { ...error.data, code: error.key },
      },
      httpStatus: error.httpStatus,
    };
  }
  logError('internal error', error);
  return {
    error: {
      code: ERROR_KEYS.INTERNAL.code,
      message: 'Internal error.',
      data: { code: 'INTERNAL' },
    },
    httpStatus: ERROR_KEYS.INTERNAL.httpStatus,
  };
}
