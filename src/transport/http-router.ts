// One HTTP request through the transport's stages, in order: the documents beside the endpoint,
// the path, the guards, authentication, the body, then dispatch and its answer (JSON or SSE).
import type http from 'node:http';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import {
  isJsonRpcResponse,
  readableId,
  serializeMessage,
  type InboundMessage,
} from '../protocol/index.js';
import { readBody } from './http-body.js';
import {
  checkHostAndOrigin,
  declaresTooLarge,
  firstRefusal,
} from './http-guards.js';
import type { HttpEraRoute, ServingOptions } from './http-options.js';
import { METRICS, traceAuthentication } from '../observability/index.js';
import { HttpRequestContext } from './http-request-context.js';
import {
  errorBody,
  refuse,
  refuseTooLarge,
  send,
  sendFailure,
  useMetadataUrl,
} from './http-responses.js';
import { openSseStream, type SseStreams } from './sse-stream.js';
import { serveWellKnown } from './well-known.js';

/** One request as the router serves it: the endpoint's options, its two ends, the open streams. */
export interface RoutedRequest {
  readonly options: ServingOptions;
  readonly request: http.IncomingMessage;
  readonly response: http.ServerResponse;
  readonly streams: SseStreams;
}

/** Serve one request; a handler failure is logged and answered 500 (or the socket cut). */
export function routeHttpRequest(routed: RoutedRequest): void {
  const { options, response } = routed;
  handle(routed).catch((error: unknown) => {
    options.log(
      `http handler failed: ${error instanceof Error ? error.message : String(error)}`,
    );
    if (!response.headersSent)
      send(response, 500, errorBody(options.dispatcher.fail(error)));
    else response.destroy();
  });
}

async function handle(routed: RoutedRequest): Promise<void> {
  const { options, request, response } = routed;
  const path = (request.url ?? '/').split('?', 1)[0] ?? '/';
  if (serveWellKnown(options, path, response)) return;
  if (path !== options.path) {
    send(response, 404, { error: 'not found', endpoint: options.path });
    return;
  }
  // Issue 14: GET and DELETE belong to another era's sessions (the modern era answers 405 to both).
  if (
    options.otherEra !== undefined &&
    (request.method === 'GET' || request.method === 'DELETE')
  ) {
    await serveOtherEraStream(routed, options.otherEra);
    return;
  }
  const refusal = firstRefusal(request, options);
  if (refusal !== undefined) {
    for (const [name, value] of Object.entries(refusal.headers ?? {}))
      response.setHeader(name, value);
    refuse(options.dispatcher, response, refusal);
    return;
  }
  if (declaresTooLarge(request, options.maxBodyBytes)) {
    METRICS.limitsHit.inc({ limit: 'PAYLOAD_TOO_LARGE' });
    refuseTooLarge(options, request, response);
    return;
  }
  // Authenticate before reading the body: an unauthenticated client costs no parsing.
  const principal = await authenticate(options, request, response);
  if (principal === undefined) return;
  if (options.protectedResource !== undefined)
    useMetadataUrl(response, options.protectedResource.metadataUrl);
  const message = await readMessage(routed, principal);
  if (message === undefined) return;
  // Issue 14: a POST the other era claims (2025-11-25: no 2026-07-28 claim, a session) is its own.
  if (options.otherEra?.claims(message, request) === true) {
    await options.otherEra.post(message, { principal, request, response });
    return;
  }
  const context = new HttpRequestContext(principal, request, response);
  await dispatchAndAnswer(routed, context, message);
}

/** The other era's GET (a session's notification stream) or DELETE (its end): Host/Origin, then auth. */
async function serveOtherEraStream(
  routed: RoutedRequest,
  era: HttpEraRoute,
): Promise<void> {
  const { options, request, response } = routed;
  const refusal = checkHostAndOrigin(request, options);
  if (refusal !== undefined) {
    refuse(options.dispatcher, response, refusal);
    return;
  }
  const principal = await authenticate(options, request, response);
  if (principal !== undefined)
    await era.other({ principal, request, response });
}

/** The request's principal, or undefined once a 401/403 (with its challenge) has been sent. */
async function authenticate(
  options: ServingOptions,
  request: http.IncomingMessage,
  response: http.ServerResponse,
): Promise<Principal | undefined> {
  try {
    return await traceAuthentication(() => options.authenticate(request));
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
    request.resume();
    sendFailure(response, {
      dispatcher: options.dispatcher,
      error,
      fallback: 401,
    });
    return undefined;
  }
}

/** The body parsed as one JSON-RPC message, or undefined once the refusal has been sent. */
async function readMessage(
  routed: RoutedRequest,
  principal: Principal,
): Promise<InboundMessage | undefined> {
  const { options, request, response } = routed;
  const body = await readBody(request, options.maxBodyBytes);
  if (body === 'too-large') {
    METRICS.limitsHit.inc({ limit: 'PAYLOAD_TOO_LARGE' });
    refuseTooLarge(options, request, response);
    return undefined;
  }
  if (body === 'aborted') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    refuse(options.dispatcher, response, {
      key: 'PARSE_ERROR',
      message: 'Parse error: the body is not valid JSON.',
    });
    return undefined;
  }
  // Issue 14: a 2025-11-25 client may POST a JSON-RPC response in its session (its digest §5.2);
  // without a session it is refused below like any other message without a method (400, -32600).
  if (
    options.otherEra !== undefined &&
    request.headers['mcp-session-id'] !== undefined &&
    isJsonRpcResponse(value)
  ) {
    await options.otherEra.postResponse(value, {
      principal,
      request,
      response,
    });
    return undefined;
  }
  try {
    return options.dispatcher.parse(value);
  } catch (error) {
    sendFailure(response, {
      dispatcher: options.dispatcher,
      error,
      fallback: 400,
      id: readableId(value),
    });
    return undefined;
  }
}

/** Dispatch, then answer: a JSON response, 202 for a notification, or an SSE stream. */
async function dispatchAndAnswer(
  routed: RoutedRequest,
  context: HttpRequestContext,
  message: InboundMessage,
): Promise<void> {
  const { options, response, streams } = routed;
  // The client closing the connection before the answer is the cancel (spec §13).
  response.on('close', () => {
    if (!response.writableFinished) context.cancel();
  });
  const outcome = await options.dispatcher.dispatch(message, context);
  if (outcome.kind === 'stream') {
    if (context.aborted) outcome.stream.cancel();
    else openSseStream(response, outcome.stream, streams);
    return;
  }
  if (context.aborted) return; // send nothing more for a cancelled request
  if (context.streaming) {
    // Notices went out first: the response is the stream's last event (spec §14.2).
    response.end(
      outcome.kind === 'response'
        ? `data: ${serializeMessage(outcome.response)}\n\n`
        : undefined,
    );
    return;
  }
  if (outcome.kind === 'accepted') {
    response.writeHead(202).end();
    return;
  }
  send(response, outcome.httpStatus, outcome.response);
}
