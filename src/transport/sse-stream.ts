// Server-Sent Events for the HTTP transport: one long-lived answer as one SSE response
// (spec §7.5), and the keep-alive comments every open stream gets.
import type http from 'node:http';
import type { ResponseStream, StreamSink } from '../protocol/index.js';

/** The headers of every SSE response, listen streams and sessions' GET streams alike. */
export const SSE_HEADERS: readonly string[] = [
  'Content-Type',
  'text/event-stream',
  'Cache-Control',
  'no-store',
  'X-Accel-Buffering',
  'no',
  // The connection ends with the stream, so shutdown never waits out a keep-alive timeout.
  'Connection',
  'close',
];

/** The open SSE responses, for the keep-alive timer. */
export type SseStreams = Set<http.ServerResponse>;

/**
 * Carry a long-lived answer as one SSE response: each message is a `data:` event, the stream ends
 * with the final response when the server ends it, and closing it is the client's cancel.
 */
export function openSseStream(
  response: http.ServerResponse,
  stream: ResponseStream,
  streams: SseStreams,
): void {
  response.writeHead(200, [...SSE_HEADERS]);
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
      if (finalMessage === undefined) response.destroy();
      else endWith(response, `data: ${finalMessage}\n\n`);
    },
  };
  stream.attach(sink);
}

/** Write the last event and end; a client that stopped reading would hold the socket forever. */
function endWith(response: http.ServerResponse, event: string): void {
  response.end(event);
  const timer = setTimeout(() => response.destroy(), 5000);
  timer.unref();
  response.once('close', () => clearTimeout(timer));
}

/**
 * One timer for every open stream: a comment line keeps proxies and clients from timing out.
 * Written in slices, like a broadcast, so 10,000 streams never hold up a request. Returns the
 * timer (unref'd) for the caller to clear.
 */
export function startKeepAlive(
  streams: SseStreams,
  intervalMs: number,
): NodeJS.Timeout {
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
  }, intervalMs);
  keepAlive.unref();
  return keepAlive;
}
