// The 2025-11-25 wire beside the 2026-07-28 one (legacy digest §6.4, §10): which era a message is,
// a legacy request as the shared handlers expect it, and a modern answer in 2025-11-25 form (no
// resultType, ttlMs, cacheScope; the legacy error codes and HTTP statuses).
import { JSONRPC, ProtocolError } from '../../errors.js';
import {
  META_CLIENT_CAPABILITIES,
  META_LOG_LEVEL,
  META_PROTOCOL_VERSION,
  PROTOCOL_VERSION,
  RawJson,
  SUPPORTED_VERSIONS,
  type DispatchOutcome,
  type InboundMessage,
  type JsonRpcResponse,
  type TransportContext,
} from '../../protocol/index.js';
import type { LegacySession } from '../session/legacy-session.js';

/** Result fields 2025-11-25 does not have (legacy digest §6.4). */
const MODERN_ONLY_FIELDS = ['resultType', 'ttlMs', 'cacheScope', '_meta'];

/** Whether a message carries the 2026-07-28 envelope claim (legacy digest §10: the discriminator). */
export function hasModernClaim(message: InboundMessage): boolean {
  const meta = message.params?.['_meta'];
  return (
    typeof meta === 'object' &&
    meta !== null &&
    META_PROTOCOL_VERSION in (meta as Record<string, unknown>)
  );
}

/** A version string that belongs to the modern era (sent in a header without the claim). */
export function isModernVersion(version: string): boolean {
  return SUPPORTED_VERSIONS.includes(version) || version >= PROTOCOL_VERSION;
}

/** A successful answer to a session's own method. */
export function ok(
  id: NonNullable<InboundMessage['id']>,
  result: Record<string, unknown>,
): DispatchOutcome {
  return {
    kind: 'response',
    response: { jsonrpc: '2.0', id, result },
    httpStatus: 200,
  };
}

/**
 * The request with the envelope the shared handlers expect; the client's own `_meta` (its
 * progressToken) rides along, and the session's logging/setLevel becomes the request's log level.
 */
export function asModern(
  message: InboundMessage,
  params: Record<string, unknown> | undefined,
  session: LegacySession,
): InboundMessage {
  // Built by assignment, not spreads: a spread of objects of many shapes takes V8's slow path, and
  // this runs for every request of every session.
  const given = params?.['_meta'];
  const meta: Record<string, unknown> = {};
  if (typeof given === 'object' && given !== null) Object.assign(meta, given);
  meta[META_PROTOCOL_VERSION] = PROTOCOL_VERSION;
  meta[META_CLIENT_CAPABILITIES] = session.handshake?.capabilities ?? {};
  if (session.logLevel !== undefined) meta[META_LOG_LEVEL] = session.logLevel;
  const modern: Record<string, unknown> = {};
  if (params !== undefined) Object.assign(modern, params);
  modern['_meta'] = meta;
  return {
    jsonrpc: message.jsonrpc,
    id: message.id,
    method: message.method,
    params: modern,
  };
}

/**
 * What the shared handlers get of a legacy transport: its caller, notices and leading statement,
 * and its cancel read on use, so a request whose handler never asks for an AbortSignal makes none.
 */
export class SharedTransport implements TransportContext {
  readonly principal: TransportContext['principal'];
  readonly notify: TransportContext['notify'];
  readonly leadingStatement: TransportContext['leadingStatement'];
  readonly #transport: TransportContext;

  constructor(transport: TransportContext) {
    this.principal = transport.principal;
    this.notify = transport.notify;
    this.leadingStatement = transport.leadingStatement;
    this.#transport = transport;
  }

  get signal(): AbortSignal {
    return this.#transport.signal;
  }

  get aborted(): boolean {
    return this.#transport.aborted ?? this.#transport.signal.aborted;
  }
}

/** A modern outcome in 2025-11-25 form: result fields stripped, legacy error codes and statuses. */
export function toLegacyOutcome(outcome: DispatchOutcome): DispatchOutcome {
  if (outcome.kind === 'stream') {
    // No shared method streams; never let one reach a legacy client.
    outcome.stream.cancel();
    throw new ProtocolError('INTERNAL', 'A legacy request produced a stream.');
  }
  if (outcome.kind !== 'response') return outcome;
  const response = outcome.response;
  if ('result' in response) {
    const modern =
      response.result instanceof RawJson
        ? (JSON.parse(response.result.json) as Record<string, unknown>)
        : response.result;
    // A new object without the 2026-only members (deleting them would leave V8 a slower object
    // for the serializer to walk).
    const result: Record<string, unknown> = {};
    for (const key of Object.keys(modern))
      if (!MODERN_ONLY_FIELDS.includes(key)) result[key] = modern[key];
    return { ...outcome, response: { ...response, result } };
  }
  return { ...outcome, ...legacyError(response, outcome.httpStatus) };
}

export function legacyError(
  response: Extract<JsonRpcResponse, { error: unknown }>,
  httpStatus: number,
): { response: JsonRpcResponse; httpStatus: number } {
  const key = response.error.data?.['code'];
  // 2025-11-25 has no -32021 (legacy digest §0.11): a missing client capability is an invalid
  // request there, still naming what is missing in data.requiredCapabilities.
  const code =
    key === 'RESOURCE_NOT_FOUND'
      ? JSONRPC.LEGACY_RESOURCE_NOT_FOUND
      : key === 'MISSING_CLIENT_CAPABILITY'
        ? JSONRPC.INVALID_REQUEST
        : response.error.code;
  // Legacy HTTP answers JSON-RPC errors with 200 (digest §5.9); transport-level statuses stay, and
  // so does a missing scope's 403, the step-up challenge (digest §9).
  const status =
    httpStatus >= 429 || key === 'INSUFFICIENT_SCOPE' ? httpStatus : 200;
  return {
    response: { ...response, error: { ...response.error, code } },
    httpStatus: status,
  };
}
