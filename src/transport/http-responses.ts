// The HTTP transport's JSON answers: a body, a refusal built by the dispatcher (one error path),
// and the 413 that drains the refused body before closing.
import type http from 'node:http';
import { ProtocolError, type ErrorKey } from '../errors.js';
import {
  serializeMessageBytes,
  type DispatchOutcome,
  type Dispatcher,
} from '../protocol/index.js';
import type { ServingOptions } from './http-options.js';

/** A refusal before dispatch: the error key and its message. */
export interface Refusal {
  readonly key: ErrorKey;
  readonly message: string;
}

/** The RFC 9728 metadata URL a response's insufficient_scope challenge names, once authenticated. */
const metadataUrls = new WeakMap<http.ServerResponse, string>();

/** Name `metadataUrl` in the challenge of `response`, should it refuse a missing scope. */
export function useMetadataUrl(
  response: http.ServerResponse,
  metadataUrl: string,
): void {
  metadataUrls.set(response, metadataUrl);
}

/**
 * The step-up challenge of a 403 refusing a missing scope (spec §15, RFC 6750 §3): the scopes the
 * request needs come from the error's data, which only the server's own scope map fills.
 */
function scopeChallenge(
  response: http.ServerResponse,
  body: object,
): string | undefined {
  const data = (body as { error?: { data?: Record<string, unknown> } }).error
    ?.data;
  const scope = data?.['scope'];
  if (data?.['code'] !== 'INSUFFICIENT_SCOPE' || typeof scope !== 'string')
    return undefined;
  const metadataUrl = metadataUrls.get(response);
  return `Bearer error="insufficient_scope", scope="${scope}"${metadataUrl === undefined ? '' : `, resource_metadata="${metadataUrl}"`}`;
}

export function send(
  response: http.ServerResponse,
  status: number,
  body: object,
): void {
  // Encode once: the length and the bytes written come from the same buffer.
  const bytes = serializeMessageBytes(body);
  // A flat [name, value, …] list skips the header object's key walk.
  const headers = [
    'Content-Type',
    'application/json',
    'Content-Length',
    String(bytes.length),
    'Cache-Control',
    'no-store',
  ];
  // 503 is a busy pool or an unreachable database: both pass, so say when to try again.
  if (status === 503) headers.push('Retry-After', '1');
  const challenge = status === 403 ? scopeChallenge(response, body) : undefined;
  if (challenge !== undefined) headers.push('WWW-Authenticate', challenge);
  response.writeHead(status, headers);
  response.end(bytes);
}

export function errorBody(outcome: DispatchOutcome): object {
  return outcome.kind === 'response' ? outcome.response : {};
}

/** Answer an error the dispatcher maps (its HTTP status, else `fallback`). */
export function sendFailure(
  response: http.ServerResponse,
  {
    dispatcher,
    error,
    fallback,
    id,
  }: {
    readonly dispatcher: Dispatcher;
    readonly error: unknown;
    readonly fallback: number;
    readonly id?: Parameters<Dispatcher['fail']>[1];
  },
): void {
  const outcome = dispatcher.fail(error, id);
  send(
    response,
    outcome.kind === 'response' ? outcome.httpStatus : fallback,
    errorBody(outcome),
  );
}

/** Refuse before dispatch; the dispatcher still builds the error body (one error path). */
export function refuse(
  dispatcher: Dispatcher,
  response: http.ServerResponse,
  refusal: Refusal,
): void {
  sendFailure(response, {
    dispatcher,
    error: new ProtocolError(refusal.key, refusal.message),
    fallback: 400,
  });
}

const DEFAULT_DRAIN = { ms: 5_000, bytes: 64 * 1024 * 1024 };

/**
 * 413 and close, in the order RFC 9112 §9.6 asks: the answer is written at once, the rest of the
 * body is read and discarded, and only then is the connection closed. Closing with the body
 * unread would reset the connection, and a client still sending would lose the 413 (EPIPE). The
 * drain is bounded in time and bytes, so a client that never stops sending cannot hold the socket.
 */
export function refuseTooLarge(
  options: Pick<ServingOptions, 'dispatcher' | 'maxBodyBytes' | 'drain'>,
  request: http.IncomingMessage,
  response: http.ServerResponse,
): void {
  const outcome = options.dispatcher.fail(
    new ProtocolError(
      'PAYLOAD_TOO_LARGE',
      `Request body too large: the limit is ${options.maxBodyBytes} bytes.`,
    ),
  );
  const bytes = serializeMessageBytes(errorBody(outcome));
  response.writeHead(outcome.kind === 'response' ? outcome.httpStatus : 413, [
    'Content-Type',
    'application/json',
    'Content-Length',
    String(bytes.length),
    'Cache-Control',
    'no-store',
    'Connection',
    'close',
  ]);
  // write, not end: ending the response is what closes the connection.
  response.write(bytes);
  drainThenClose(request, response, options.drain ?? DEFAULT_DRAIN);
}

/** Read and discard the rest of a refused body, within limits, then end the response. */
function drainThenClose(
  request: http.IncomingMessage,
  response: http.ServerResponse,
  limit: { readonly ms: number; readonly bytes: number },
): void {
  let drained = 0;
  const close = (): void => {
    clearTimeout(timer);
    request.off('data', count);
    if (!response.writableEnded) response.end();
  };
  const cut = (): void => {
    close();
    response.destroy();
  };
  const count = (chunk: Buffer): void => {
    drained += chunk.length;
    if (drained > limit.bytes) cut();
  };
  const timer = setTimeout(cut, limit.ms);
  request.on('data', count);
  request.once('end', close);
  request.once('close', close);
  // The body may have ended while the caller awaited (readBody resolves mid-stream).
  if (request.readableEnded || request.destroyed) close();
  else request.resume();
}
