// Streamable HTTP (MCP 2026-07-28 §14.2): one POST endpoint, JSON responses. Frames bytes and
// checks HTTP-level rules (Host/Origin, size, content type, MCP headers); knows no MCP methods.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Principal } from '../auth/index.js';
import { ProtocolError, type ErrorKey } from '../errors.js';
import {
  expectedHttpHeaders,
  readableId,
  serializeMessageBytes,
  type DispatchOutcome,
  type Dispatcher,
  type InboundMessage,
  type ResponseStream,
  type StreamSink,
  type TransportContext,
} from '../protocol/index.js';
import type { LegacyHttp } from './legacy-http.js';

interface HttpTransportBase {
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly dispatcher: Dispatcher;
  readonly maxBodyBytes: number;
  /**
   * After a 413, how long and how many more bytes of the refused body are read and discarded
   * before the connection is closed (defaults: 5 s, 64 MiB).
   */
  readonly drain?: { readonly ms: number; readonly bytes: number };
  /** Host header names (without port) accepted; `*` accepts any. */
  readonly allowedHosts: readonly string[];
  /** Origins (scheme://host[:port]) accepted when a request carries Origin; loopback origins always are. */
  readonly allowedOrigins: readonly string[];
  /** Readiness for /readyz: ok, plus details (the live-update listener's health). */
  readonly ready?: () => { ok: boolean; detail: Record<string, unknown> };
  /** How often an open SSE stream gets a keep-alive comment. */
  readonly keepAliveMs?: number;
  readonly log: (line: string) => void;
  /** Issue 14: 2025-11-25 sessions beside 2026-07-28 on the same endpoint (legacy-http.ts). */
  readonly legacy?: LegacyHttp;
}

/** How requests are authenticated, and the metadata a 401 points at. */
export interface HttpSecurity {
  /**
   * Who the request runs as, from its headers (Authorization). Throws ProtocolError
   * AUTHENTICATION_REQUIRED (answered 401 with a WWW-Authenticate challenge) or ROLE_FORBIDDEN (403).
   */
  readonly authenticate: (
    request: http.IncomingMessage,
  ) => Principal | Promise<Principal>;
  /** RFC 9728 protected-resource metadata, served at /.well-known/oauth-protected-resource[/mcp]. */
  readonly protectedResource?:
    | {
        readonly metadataUrl: string;
        readonly document: Record<string, unknown>;
      }
    | undefined;
}

/**
 * Security is given as is, or (when it names the server's own URL, as a token audience does) as a
 * function of the bound endpoint URL: with port 0 the port is known only once bound. It is called
 * once, when listening starts, before any request is served.
 */
export type HttpTransportOptions = HttpTransportBase &
  (HttpSecurity | { readonly securityFor: (url: string) => HttpSecurity });

/** The options requests are served with, security resolved. */
type ServingOptions = HttpTransportBase & HttpSecurity;

export interface HttpTransport {
  readonly url: string;
  readonly server: http.Server;
  close(): Promise<void>;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);
const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/** Listen and serve until closed. Resolves once the port is bound. */
export async function startHttpTransport(
  options: HttpTransportOptions,
): Promise<HttpTransport> {
  const streams = new Set<http.ServerResponse>();
  let serving: ServingOptions | undefined;
  const server = http.createServer((request, response) => {
    // Set in the listen callback, which runs before any connection is accepted.
    const options = serving as ServingOptions;
    handle(options, request, response, streams).catch((error: unknown) => {
      options.log(
        `http handler failed: ${error instanceof Error ? error.message : String(error)}`,
      );
      if (!response.headersSent)
        send(response, 500, errorBody(options.dispatcher.fail(error)));
      else response.destroy();
    });
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 120_000;
  server.on('clientError', (_error, socket) => {
    if (socket.writable)
      socket.end(
        'HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
      );
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      try {
        serving =
          'securityFor' in options
            ? {
                ...options,
                ...options.securityFor(endpointUrl(server, options.path)),
              }
            : options;
        resolve();
      } catch (error) {
        // A configuration error: the caller reports it, as if thrown before listening.
        server.close();
        reject(error);
      }
    });
  });
  // One timer for every open stream: a comment line keeps proxies and clients from timing out.
  // Written in slices, like a broadcast, so 10,000 streams never hold up a request.
  const keepAlive = setInterval(() => {
    void (async () => {
      let written = 0;
      for (const response of [...streams]) {
        if (response.writableLength === 0 && !response.writableEnded)
          response.write(':\n\n');
        written += 1;
        if (written % 256 === 0)
          await new Promise<void>((resolve) => setImmediate(resolve));
      }
    })();
  }, options.keepAliveMs ?? 15_000);
  keepAlive.unref();
  server.once('close', () => {
    clearInterval(keepAlive);
    options.legacy?.close();
  });
  return {
    url: endpointUrl(server, options.path),
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        // Requests in flight get a moment to finish; then whatever is left (a keep-alive socket
        // that went idle after the first sweep, a client that never closed its side) is cut.
        const sweep = setInterval(() => server.closeIdleConnections(), 100);
        const cut = setTimeout(() => server.closeAllConnections(), 2000);
        server.once('close', () => {
          clearInterval(sweep);
          clearTimeout(cut);
        });
      }),
  };
}

/** http://host:port/path of a listening server: the port it bound, not the one asked for. */
function endpointUrl(server: http.Server, path: string): string {
  const address = server.address() as AddressInfo;
  const host =
    address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}${path}`;
}

async function handle(
  options: ServingOptions,
  request: http.IncomingMessage,
  response: http.ServerResponse,
  streams: Set<http.ServerResponse>,
): Promise<void> {
  const path = (request.url ?? '/').split('?', 1)[0];
  if (path === '/healthz') {
    send(response, 200, { status: 'ok' });
    return;
  }
  if (path === '/readyz') {
    const readiness = options.ready?.() ?? { ok: true, detail: {} };
    send(response, readiness.ok ? 200 : 503, {
      status: readiness.ok ? 'ready' : 'not ready',
      ...readiness.detail,
    });
    return;
  }
  if (
    options.protectedResource !== undefined &&
    (path === WELL_KNOWN || path === `${WELL_KNOWN}${options.path}`)
  ) {
    send(response, 200, options.protectedResource.document);
    return;
  }
  if (path !== options.path) {
    send(response, 404, { error: 'not found', endpoint: options.path });
    return;
  }
  // DNS rebinding (spec §14.2 Security): both Host and Origin, before anything else is looked at.
  if (
    !hostAllowed(request.headers.host, options.allowedHosts) ||
    !originAllowed(request.headers.origin, options.allowedOrigins)
  ) {
    refuse(
      options,
      response,
      'FORBIDDEN_ORIGIN',
      'Forbidden: Host or Origin not allowed.',
    );
    return;
  }
  // Issue 14: GET and DELETE belong to legacy sessions (the modern era answers 405 to both).
  if (
    options.legacy !== undefined &&
    (request.method === 'GET' || request.method === 'DELETE')
  ) {
    const principal = await authenticateOrRefuse(options, request, response);
    if (principal !== undefined)
      await options.legacy.other(principal, request, response);
    return;
  }
  if (request.method !== 'POST') {
    response.setHeader(
      'Allow',
      options.legacy === undefined ? 'POST' : 'GET, POST, DELETE',
    );
    refuse(
      options,
      response,
      'HTTP_METHOD_NOT_ALLOWED',
      'Method not allowed: the MCP endpoint accepts POST only.',
    );
    return;
  }
  const contentType = request.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(contentType)) {
    refuse(
      options,
      response,
      'UNSUPPORTED_MEDIA_TYPE',
      'Unsupported Content-Type: send application/json.',
    );
    return;
  }
  const accept = request.headers.accept;
  if (
    accept !== undefined &&
    accept !== '' &&
    !/application\/json|text\/event-stream|\*\/\*|application\/\*/i.test(accept)
  ) {
    refuse(
      options,
      response,
      'NOT_ACCEPTABLE',
      'Not acceptable: accept application/json or text/event-stream.',
    );
    return;
  }
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > options.maxBodyBytes) {
    refuseTooLarge(options, request, response);
    return;
  }
  // Authenticate before reading the body: an unauthenticated client costs no parsing.
  const principal = await authenticateOrRefuse(options, request, response);
  if (principal === undefined) return;
  const body = await readBody(request, options.maxBodyBytes);
  if (body === 'too-large') {
    refuseTooLarge(options, request, response);
    return;
  }
  if (body === 'aborted') return;

  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    refuse(
      options,
      response,
      'PARSE_ERROR',
      'Parse error: the body is not valid JSON.',
    );
    return;
  }
  let message: InboundMessage;
  try {
    message = options.dispatcher.parse(value);
  } catch (error) {
    const outcome = options.dispatcher.fail(error, readableId(value));
    send(
      response,
      outcome.kind === 'response' ? outcome.httpStatus : 400,
      errorBody(outcome),
    );
    return;
  }

  // Issue 14: a POST without the 2026-07-28 claim that initializes or names a session is legacy.
  if (options.legacy?.claims(message, request) === true) {
    await options.legacy.post(message, principal, request, response);
    return;
  }
  // The client closing the connection before the answer is the cancel (spec §13).
  const context = new HttpRequestContext(principal, request);
  response.on('close', () => {
    if (!response.writableFinished) context.cancel();
  });
  const outcome = await options.dispatcher.dispatch(message, context);
  if (outcome.kind === 'stream') {
    if (context.aborted) outcome.stream.cancel();
    else openStream(response, outcome.stream, streams);
    return;
  }
  if (context.aborted) return; // send nothing more for a cancelled request
  if (outcome.kind === 'accepted') {
    response.writeHead(202).end();
    return;
  }
  send(response, outcome.httpStatus, outcome.response);
}

/** The caller, or undefined once refused (401 with its challenge, 403). */
async function authenticateOrRefuse(
  options: ServingOptions,
  request: http.IncomingMessage,
  response: http.ServerResponse,
): Promise<Principal | undefined> {
  try {
    return await options.authenticate(request);
  } catch (error) {
    if (
      error instanceof ProtocolError &&
      error.key === 'AUTHENTICATION_REQUIRED' &&
      options.protectedResource !== undefined
    ) {
      const invalid =
        request.headers.authorization === undefined
          ? ''
          : 'error="invalid_token", ';
      response.setHeader(
        'WWW-Authenticate',
        `Bearer ${invalid}resource_metadata="${options.protectedResource.metadataUrl}"`,
      );
    }
    const outcome = options.dispatcher.fail(error);
    request.resume();
    send(
      response,
      outcome.kind === 'response' ? outcome.httpStatus : 401,
      errorBody(outcome),
    );
    return undefined;
  }
}

/**
 * What one HTTP request hands the dispatcher. A class, not an object literal with getters: V8
 * allocates a literal's accessor pair in the old generation on every evaluation, and its getters
 * then keep the request's closures and objects alive through young-generation collections (each
 * request's garbage was promoted and left for a full collection).
 */
class HttpRequestContext implements TransportContext {
  #cancelled = false;
  // Made only if a handler asks for the signal: most never wait long enough to need one.
  #controller: AbortController | undefined;

  constructor(
    readonly principal: Principal,
    readonly request: http.IncomingMessage,
  ) {}

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    if (this.#cancelled) this.#controller.abort();
    return this.#controller.signal;
  }

  get aborted(): boolean {
    return this.#cancelled;
  }

  /** The client went away before the answer. */
  cancel(): void {
    this.#cancelled = true;
    this.#controller?.abort();
  }

  verifyRequest(message: InboundMessage): void {
    verifyHeaders(this.request, message);
  }
}

/**
 * Carry a long-lived answer as one SSE response (spec §7.5): each message is a `data:` event, the
 * stream ends with the final response when the server ends it, and closing it is the client's cancel.
 */
function openStream(
  response: http.ServerResponse,
  stream: ResponseStream,
  streams: Set<http.ServerResponse>,
): void {
  response.writeHead(200, [
    'Content-Type',
    'text/event-stream',
    'Cache-Control',
    'no-store',
    'X-Accel-Buffering',
    'no',
    // The connection ends with the stream, so shutdown never waits out a keep-alive timeout.
    'Connection',
    'close',
  ]);
  let ended = false;
  streams.add(response);
  response.on('close', () => {
    streams.delete(response);
    if (!ended) stream.cancel();
  });
  const sink: StreamSink = {
    write: (message) => response.write(`data: ${message}\n\n`),
    get pendingBytes() {
      return response.writableLength;
    },
    onDrain: (listener) => response.once('drain', listener),
    end: (finalMessage) => {
      if (ended) return;
      ended = true;
      streams.delete(response);
      if (finalMessage === undefined) {
        response.destroy();
        return;
      }
      response.end(`data: ${finalMessage}\n\n`);
      // A client that stopped reading would hold the socket open forever.
      const timer = setTimeout(() => response.destroy(), 5000);
      timer.unref();
      response.once('close', () => clearTimeout(timer));
    },
  };
  stream.attach(sink);
}

/** MCP-Protocol-Version, Mcp-Method and Mcp-Name must be present and equal the body (-32020, 400). */
function verifyHeaders(
  request: http.IncomingMessage,
  message: InboundMessage,
): void {
  const expected = expectedHttpHeaders(message);
  const mismatch = (header: string, problem: string): never => {
    throw new ProtocolError(
      'HEADER_MISMATCH',
      `Header mismatch: ${header} ${problem}.`,
      { data: { header } },
    );
  };
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
    const name = decodeHeaderValue(raw as string);
    if (name === undefined) mismatch('Mcp-Name', 'is not a valid value');
    if (name !== expected.name.value)
      mismatch('Mcp-Name', `does not match params.${expected.name.field}`);
  }
}

/** Header values that are not plain ASCII arrive as =?base64?…?= (spec §14.2 value encoding). */
function decodeHeaderValue(raw: string): string | undefined {
  const encoded = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/.exec(raw);
  if (encoded === null) return /^[\x20-\x7e]*$/.test(raw) ? raw : undefined;
  const decoded = Buffer.from(encoded[1] ?? '', 'base64').toString('utf8');
  return decoded.includes('\uFFFD') ? undefined : decoded;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function hostAllowed(
  host: string | undefined,
  allowed: readonly string[],
): boolean {
  if (host === undefined) return false;
  if (allowed.includes('*')) return true;
  const name = host.startsWith('[')
    ? host.slice(0, host.indexOf(']') + 1)
    : (host.split(':', 1)[0] ?? '');
  return allowed.includes(name.toLowerCase());
}

function originAllowed(
  origin: string | undefined,
  allowed: readonly string[],
): boolean {
  if (origin === undefined) return true; // non-browser clients send none
  if (allowed.includes('*') || allowed.includes(origin)) return true;
  try {
    const url = new URL(origin);
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      LOOPBACK_HOSTS.has(url.hostname)
    );
  } catch {
    return false;
  }
}

function readBody(
  request: http.IncomingMessage,
  limit: number,
): Promise<string | 'too-large' | 'aborted'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    request.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        // The rest is drained, not kept (refuseTooLarge).
        done = true;
        chunks.length = 0;
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => {
      if (!done) {
        done = true;
        resolve(Buffer.concat(chunks).toString('utf8'));
      }
    });
    // 'error' must have a listener (an unhandled one would crash the process); 'close' before
    // 'end' means the client went away mid-body.
    const abandon = (): void => {
      if (!done) {
        done = true;
        resolve('aborted');
      }
    };
    request.on('error', abandon);
    request.on('close', abandon);
  });
}

const DEFAULT_DRAIN = { ms: 5_000, bytes: 64 * 1024 * 1024 };

/**
 * 413 and close, in the order RFC 9112 §9.6 asks: the answer is written at once, the rest of the
 * body is read and discarded, and only then is the connection closed. Closing with the body
 * unread would reset the connection, and a client still sending would lose the 413 (EPIPE). The
 * drain is bounded in time and bytes, so a client that never stops sending cannot hold the socket.
 */
function refuseTooLarge(
  options: HttpTransportOptions,
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
  const limit = options.drain ?? DEFAULT_DRAIN;
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

/** Refuse before dispatch; the dispatcher still builds the error body (one error path). */
function refuse(
  options: HttpTransportOptions,
  response: http.ServerResponse,
  key: ErrorKey,
  message: string,
): void {
  const outcome = options.dispatcher.fail(new ProtocolError(key, message));
  send(
    response,
    outcome.kind === 'response' ? outcome.httpStatus : 400,
    errorBody(outcome),
  );
}

function errorBody(outcome: DispatchOutcome): object {
  return outcome.kind === 'response' ? outcome.response : {};
}

function send(
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
  response.writeHead(status, headers);
  response.end(bytes);
}
