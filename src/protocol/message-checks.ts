// What an inbound message must be before a handler sees it: the JSON-RPC envelope, the request
// `_meta` keys and a protocol version this server speaks (spec §2.2, §3.2, §3.4).
import type { z } from 'zod';
import { ProtocolError } from '../errors.js';
import {
  META_CLIENT_CAPABILITIES,
  META_PROTOCOL_VERSION,
  SUPPORTED_VERSIONS,
  type InboundMessage,
  type RequestId,
  type RequestMeta,
} from './wire.js';

/**
 * Validate one parsed JSON value as a JSON-RPC message. Hand-written rather than zod: this runs on
 * every message, and a plain check costs a fraction of a schema parse on the hot path. Params and
 * results keep their zod schemas.
 */
export function parseMessage(value: unknown): InboundMessage {
  if (Array.isArray(value)) {
    throw new ProtocolError(
      'BATCH_NOT_SUPPORTED',
      'JSON-RPC batches are not supported; send one message per request.',
    );
  }
  const invalid = (problem: string): never => {
    throw new ProtocolError(
      'INVALID_REQUEST',
      `Invalid JSON-RPC request: ${problem}.`,
    );
  };
  if (typeof value !== 'object' || value === null)
    return invalid('expected a JSON object');
  const record = value as Record<string, unknown>;
  const { id, method, params } = record;
  if (record['jsonrpc'] !== '2.0') invalid('jsonrpc must be "2.0"');
  if (id !== undefined && typeof id !== 'string' && !Number.isSafeInteger(id))
    invalid('id must be a string or an integer');
  if (typeof method !== 'string' || method === '')
    return invalid('method must be a non-empty string');
  if (
    params !== undefined &&
    (typeof params !== 'object' || params === null || Array.isArray(params))
  ) {
    invalid('params must be an object');
  }
  return {
    jsonrpc: '2.0',
    id: id as RequestId | undefined,
    method,
    params: params as Record<string, unknown> | undefined,
  };
}

/** Check the required request `_meta` keys are present and well-typed (spec §3.2). */
export function validateMetaShape(value: unknown): RequestMeta {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const meta = value as Record<string, unknown>;
    const capabilities = meta[META_CLIENT_CAPABILITIES];
    if (
      typeof meta[META_PROTOCOL_VERSION] === 'string' &&
      typeof capabilities === 'object' &&
      capabilities !== null &&
      !Array.isArray(capabilities)
    ) {
      return meta as RequestMeta;
    }
  }
  throw new ProtocolError(
    'MISSING_META',
    // Also the answer to a 2025-11-25 request sent before initialize (its digest's §10.1 step 5).
    'Missing or invalid params._meta: 2026-07-28 requests must carry io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities; a 2025-11-25 client sends initialize first.',
  );
}

/** Refuse versions we do not serve with -32022 and the list we do (spec §3.4). */
export function validateVersion(meta: RequestMeta): void {
  const requested = meta[META_PROTOCOL_VERSION];
  if (!SUPPORTED_VERSIONS.includes(requested)) {
    throw new ProtocolError(
      'UNSUPPORTED_PROTOCOL_VERSION',
      'Unsupported protocol version.',
      {
        data: { supported: [...SUPPORTED_VERSIONS], requested },
      },
    );
  }
}

export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      const path = issue.path.map(String).join('.');
      return path === '' ? issue.message : `${path}: ${issue.message}`;
    })
    .join('; ');
}

export function truncate(text: string): string {
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}

/**
 * A parsed JSON-RPC response (no method, a result or an error): what a client sends when it answers
 * a request of the server. A transport that carries such answers routes them before parseMessage.
 */
export function isJsonRpcResponse(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return false;
  const record = value as Record<string, unknown>;
  return (
    record['jsonrpc'] === '2.0' &&
    !('method' in record) &&
    ('result' in record || 'error' in record)
  );
}
