// What one HTTP request hands the dispatcher: its principal, its cancellation (the client closing
// the connection, spec §13) and the check of the MCP headers against the body (spec §14.2).
import type http from 'node:http';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import {
  expectedHttpHeaders,
  type InboundMessage,
  type NoticeSink,
  type TransportContext,
} from '../protocol/index.js';
import { SSE_HEADERS } from './sse-stream.js';

/**
 * One HTTP request being answered, in either era: who sent it, its cancellation, and its notices
 * written as an SSE answer. A class, not an object literal with getters: V8 allocates a literal's
 * accessor pair in the old generation on every evaluation, and its getters then keep the request's
 * closures and objects alive through young-generation collections (each request's garbage was
 * promoted and left for a full collection).
 */
export class AnsweredRequest {
  #cancelled = false;
  // Made only if a handler asks for the signal: most never wait long enough to need one.
  #controller: AbortController | undefined;
  /** Whether the answer became an SSE response (a notice went out before it). */
  #streaming = false;

  constructor(readonly principal: Principal) {}

  /** Write a notice on `response`, the first one turning it into an SSE response. */
  protected writeNotice(response: http.ServerResponse, message: string): void {
    if (this.#cancelled || response.writableEnded) return;
    if (!this.#streaming) {
      this.#streaming = true;
      response.writeHead(200, [...SSE_HEADERS]);
    }
    response.write(`data: ${message}\n\n`);
  }

  get streaming(): boolean {
    return this.#streaming;
  }

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    if (this.#cancelled) this.#controller.abort();
    return this.#controller.signal;
  }

  get aborted(): boolean {
    return this.#cancelled;
  }

  /** The client went away or cancelled before the answer. */
  cancel(): void {
    this.#cancelled = true;
    this.#controller?.abort();
  }
}

/** A 2026-07-28 request: its notices only for a client that accepts SSE, and its headers' check. */
export class HttpRequestContext
  extends AnsweredRequest
  implements TransportContext
{
  #notify: NoticeSink | undefined;

  constructor(
    principal: Principal,
    readonly request: http.IncomingMessage,
    readonly response?: http.ServerResponse,
  ) {
    super(principal);
  }

  /**
   * The request's notices turn its answer into an SSE response (spec §14.2: zero or more
   * notifications, then the response), for a client that accepts one.
   */
  get notify(): NoticeSink | undefined {
    const response = this.response;
    if (response === undefined || !acceptsEventStream(this.request))
      return undefined;
    this.#notify ??= (message) => this.writeNotice(response, message);
    return this.#notify;
  }

  verifyRequest(message: InboundMessage): void {
    verifyHeaders(this.request, message);
  }
}

/** MCP-Protocol-Version, Mcp-Method and Mcp-Name must be present and equal the body (-32020, 400). */
function verifyHeaders(
  request: http.IncomingMessage,
  message: InboundMessage,
): void {
  const expected = expectedHttpHeaders(message);
  const version = single(request.headers['mcp-protocol-version']);
  if (version === undefined) mismatch('MCP-Protocol-Version', 'is missing');
  if (version !== expected.protocolVersion)
    mismatch('MCP-Protocol-Version', 'does not match params._meta');
  const method = single(request.headers['mcp-method']);
  if (method === undefined) mismatch('Mcp-Method', 'is missing');
  if (method !== expected.method)
    mismatch('Mcp-Method', 'does not match the body method');
  if (expected.name !== undefined) {
    const raw = single(request.headers['mcp-name']);
    if (raw === undefined) mismatch('Mcp-Name', 'is missing');
    const name = decodeHeaderValue(raw);
    if (name === undefined) mismatch('Mcp-Name', 'is not a valid value');
    if (name !== expected.name.value)
      mismatch('Mcp-Name', `does not match params.${expected.name.field}`);
  }
}

function mismatch(header: string, problem: string): never {
  throw new ProtocolError(
    'HEADER_MISMATCH',
    `Header mismatch: ${header} ${problem}.`,
    { data: { header } },
  );
}

/** Header values that are not plain ASCII arrive as =?base64?…?= (spec §14.2 value encoding). */
function decodeHeaderValue(raw: string): string | undefined {
  const encoded = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/.exec(raw);
  if (encoded === null) return /^[\x20-\x7e]*$/.test(raw) ? raw : undefined;
  const decoded = Buffer.from(encoded[1] ?? '', 'base64').toString('utf8');
  return decoded.includes('\uFFFD') ? undefined : decoded;
}

function acceptsEventStream(request: http.IncomingMessage): boolean {
  return /text\/event-stream|\*\/\*/i.test(request.headers.accept ?? '');
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
