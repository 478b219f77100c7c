// How a 2025-11-25 HTTP session's answers are written (legacy digest §5.2–§5.5): JSON by default,
// one SSE event when the client accepts nothing else or asked for progress; the headers read.
import type http from 'node:http';
import {
  serializeMessage,
  type DispatchOutcome,
  type InboundMessage,
} from '../../protocol/index.js';
import { send, SSE_HEADERS } from '../../transport/index.js';

export function header(
  request: http.IncomingMessage,
  name: string,
): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Whether to answer a request as SSE rather than JSON; the digest lets the server choose (§5.2).
 * JSON is one write and what every client reads, so it is the default; SSE when the client accepts
 * nothing else, or when it asked for progress, whose notifications can only precede the response on
 * the request's own stream (§5.3, §8.3).
 */
export function answersWithSse(
  request: http.IncomingMessage,
  message: InboundMessage,
): boolean {
  const accept = header(request, 'accept') ?? '';
  if (!/text\/event-stream/i.test(accept)) return false;
  if (!/application\/json|\*\/\*|application\/\*/i.test(accept)) return true;
  const meta = message.params?.['_meta'];
  return (
    typeof meta === 'object' &&
    meta !== null &&
    'progressToken' in (meta as Record<string, unknown>)
  );
}

/** A request's answer as one SSE event, then the end of the stream (no event ids: §5.5). */
export function sendOutcomeAsSse(
  response: http.ServerResponse,
  outcome: DispatchOutcome,
): void {
  // Transport-level refusals (429, 503) keep their status and JSON body.
  if (outcome.kind !== 'response' || outcome.httpStatus !== 200) {
    sendOutcome(response, outcome);
    return;
  }
  response.writeHead(200, [...SSE_HEADERS]);
  response.end(
    `event: message\ndata: ${serializeMessage(outcome.response)}\n\n`,
  );
}

export function sendOutcome(
  response: http.ServerResponse,
  outcome: DispatchOutcome,
): void {
  if (outcome.kind === 'accepted') {
    response.writeHead(202).end();
    return;
  }
  if (outcome.kind === 'stream') {
    outcome.stream.cancel();
    response.writeHead(500).end();
    return;
  }
  send(response, outcome.httpStatus, outcome.response);
}
