// The error key table and ProtocolError, the only error family that crosses the wire.
// A leaf module: it imports nothing from src/.

/** JSON-RPC codes named by MCP 2026-07-28 (shared/spec/schema-2026-07-28.json). */
export const JSONRPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  HEADER_MISMATCH: -32020,
  MISSING_CLIENT_CAPABILITY: -32021,
  UNSUPPORTED_PROTOCOL_VERSION: -32022,
  /** 2025-11-25 only (legacy digest §6.5): resource not found, sent to legacy sessions. */
  LEGACY_RESOURCE_NOT_FOUND: -32002,
} as const;

interface ErrorKeySpec {
  /** JSON-RPC error code sent to the client. */
  readonly code: number;
  /** HTTP status on Streamable HTTP (the spec pins some; the rest answer 200 with a JSON-RPC body). */
  readonly httpStatus: number;
}

/**
 * Every error a client can see, by stable UPPER_SNAKE key (grep-able; sent as `error.data.code`).
 * Published in README ("Errors").
 */
export const ERROR_KEYS = {
  PARSE_ERROR: { code: JSONRPC.PARSE_ERROR, httpStatus: 400 },
  INVALID_REQUEST: { code: JSONRPC.INVALID_REQUEST, httpStatus: 400 },
  BATCH_NOT_SUPPORTED: { code: JSONRPC.INVALID_REQUEST, httpStatus: 400 },
  METHOD_NOT_FOUND: { code: JSONRPC.METHOD_NOT_FOUND, httpStatus: 404 },
  FORBIDDEN_ORIGIN: { code: JSONRPC.INVALID_REQUEST, httpStatus: 403 },
  AUTHENTICATION_REQUIRED: { code: JSONRPC.INVALID_REQUEST, httpStatus: 401 },
  ROLE_FORBIDDEN: { code: JSONRPC.INVALID_REQUEST, httpStatus: 403 },
  /** The token lacks a scope the config file's scope map asks for (spec §15); data.scope names them. */
  INSUFFICIENT_SCOPE: { code: JSONRPC.INVALID_REQUEST, httpStatus: 403 },
  HTTP_METHOD_NOT_ALLOWED: { code: JSONRPC.INVALID_REQUEST, httpStatus: 405 },
  NOT_ACCEPTABLE: { code: JSONRPC.INVALID_REQUEST, httpStatus: 406 },
  PAYLOAD_TOO_LARGE: { code: JSONRPC.INVALID_REQUEST, httpStatus: 413 },
  UNSUPPORTED_MEDIA_TYPE: { code: JSONRPC.INVALID_REQUEST, httpStatus: 415 },
  MISSING_META: { code: JSONRPC.INVALID_PARAMS, httpStatus: 400 },
  INVALID_PARAMS: { code: JSONRPC.INVALID_PARAMS, httpStatus: 200 },
  INVALID_CURSOR: { code: JSONRPC.INVALID_PARAMS, httpStatus: 200 },
  INVALID_URI: { code: JSONRPC.INVALID_PARAMS, httpStatus: 200 },
  RESOURCE_NOT_FOUND: { code: JSONRPC.INVALID_PARAMS, httpStatus: 200 },
  HEADER_MISMATCH: { code: JSONRPC.HEADER_MISMATCH, httpStatus: 400 },
  MISSING_CLIENT_CAPABILITY: {
    code: JSONRPC.MISSING_CLIENT_CAPABILITY,
    httpStatus: 400,
  },
  CONSENT_DECLINED: { code: JSONRPC.INVALID_REQUEST, httpStatus: 200 },
  /** A retry's requestState or inputResponses failed their checks (spec §4.5): never a tool result. */
  INVALID_INPUT_RESPONSE: { code: JSONRPC.INVALID_PARAMS, httpStatus: 200 },
  UNSUPPORTED_PROTOCOL_VERSION: {
    code: JSONRPC.UNSUPPORTED_PROTOCOL_VERSION,
    httpStatus: 400,
  },
  FORBIDDEN: { code: JSONRPC.INTERNAL_ERROR, httpStatus: 200 },
  UNAUTHENTICATED: { code: JSONRPC.INTERNAL_ERROR, httpStatus: 200 },
  TIMEOUT: { code: JSONRPC.INTERNAL_ERROR, httpStatus: 200 },
  UNAVAILABLE: { code: JSONRPC.INTERNAL_ERROR, httpStatus: 503 },
  POOL_EXHAUSTED: { code: JSONRPC.INTERNAL_ERROR, httpStatus: 503 },
  TOO_MANY_STREAMS: { code: JSONRPC.INTERNAL_ERROR, httpStatus: 429 },
  // Legacy (2025-11-25) sessions, legacy digest §5.6–§5.8 and §3.6.
  SESSION_REQUIRED: { code: JSONRPC.INVALID_REQUEST, httpStatus: 400 },
  SESSION_NOT_FOUND: { code: JSONRPC.INVALID_REQUEST, httpStatus: 404 },
  ALREADY_INITIALIZED: { code: JSONRPC.INVALID_REQUEST, httpStatus: 400 },
  UNSUPPORTED_LEGACY_VERSION: {
    code: JSONRPC.INVALID_REQUEST,
    httpStatus: 400,
  },
  TOO_MANY_SESSIONS: { code: JSONRPC.INTERNAL_ERROR, httpStatus: 429 },
  INTERNAL: { code: JSONRPC.INTERNAL_ERROR, httpStatus: 500 },
} as const satisfies Record<string, ErrorKeySpec>;

export type ErrorKey = keyof typeof ERROR_KEYS;

/**
 * An error meant for the client: a stable key, a safe one-sentence message and optional data.
 * Handlers throw it; exactly one function (protocol's `toWireError`) turns it into a response.
 * Never put SQL text, stacks or role names in `message` or `data`.
 */
export class ProtocolError extends Error {
  readonly key: ErrorKey;
  readonly data: Record<string, unknown> | undefined;

  constructor(
    key: ErrorKey,
    message: string,
    options?: { data?: Record<string, unknown>; cause?: unknown },
  ) {
    super(
      message,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'ProtocolError';
    this.key = key;
    this.data = options?.data;
  }

  get code(): number {
    return ERROR_KEYS[this.key].code;
  }

  get httpStatus(): number {
    return ERROR_KEYS[this.key].httpStatus;
  }
}

/** A configuration problem found at start-up; its message says how to fix it. */
export class ConfigError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigError';
  }
}
