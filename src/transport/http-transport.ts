// Streamable HTTP (MCP 2026-07-28 §14.2): one POST endpoint, JSON responses. Listens, resolves
// security once bound, and closes; each request goes through http-router.ts. Knows no MCP methods.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  HttpTransport,
  HttpTransportOptions,
  ServingOptions,
} from './http-options.js';
import { traceHttpRequest } from '../observability/index.js';
import { routeHttpRequest } from './http-router.js';
import { startKeepAlive, type SseStreams } from './sse-stream.js';

/** Listen and serve until closed. Resolves once the port is bound. */
export async function startHttpTransport(
  options: HttpTransportOptions,
): Promise<HttpTransport> {
  const streams: SseStreams = new Set();
  const server = http.createServer();
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
  const serving = await listen(server, options);
  // Issue 35: POSTs being answered (not the streams they became), which a drain waits for.
  const inFlight = new Set<http.ServerResponse>();
  // Attached in the same turn as the listen callback, before the event loop accepts a connection.
  server.on('request', (request, response) => {
    if (request.method === 'POST') {
      inFlight.add(response);
      response.once('close', () => inFlight.delete(response));
    }
    traceHttpRequest(request.headers, () =>
      routeHttpRequest({ options: serving, request, response, streams }),
    );
  });
  const keepAlive = startKeepAlive(streams, options.keepAliveMs ?? 15_000);
  let closed = false;
  server.once('close', () => {
    closed = true;
    clearInterval(keepAlive);
    options.otherEra?.close();
  });
  return {
    url: endpointUrl(server, options.path),
    server,
    close: () => (closed ? Promise.resolve() : close(server)),
    stopAccepting: () => {
      if (server.listening) server.close();
      server.closeIdleConnections();
    },
    settle: (graceMs) => settle(server, { inFlight, streams }, graceMs),
  };
}

/**
 * Wait until every POST being answered has its answer, or `graceMs` has passed (false then). A
 * POST that became a stream (subscriptions/listen) is not waited for: it ends when streams close.
 * Connections that go idle meanwhile are closed, so keep-alive clients reconnect elsewhere.
 */
function settle(
  server: http.Server,
  open: { inFlight: Set<http.ServerResponse>; streams: SseStreams },
  graceMs: number,
): Promise<boolean> {
  const pending = (): number =>
    [...open.inFlight].filter((response) => !open.streams.has(response)).length;
  return new Promise<boolean>((resolve) => {
    const check = (): void => {
      server.closeIdleConnections();
      if (pending() > 0) return;
      clearInterval(poll);
      clearTimeout(timer);
      resolve(true);
    };
    const poll = setInterval(check, 50);
    const timer = setTimeout(() => {
      clearInterval(poll);
      resolve(false);
    }, graceMs);
    check();
  });
}

/** Bind, then resolve the security (it may name the bound URL) before any request is accepted. */
function listen(
  server: http.Server,
  options: HttpTransportOptions,
): Promise<ServingOptions> {
  return new Promise<ServingOptions>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      try {
        resolve(
          'securityFor' in options
            ? {
                ...options,
                ...options.securityFor(endpointUrl(server, options.path)),
              }
            : options,
        );
      } catch (error) {
        // A configuration error: the caller reports it, as if thrown before listening.
        server.close();
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passed on as thrown
        reject(error);
      }
    });
  });
}

/**
 * Stop listening. Requests in flight get a moment to finish; then whatever is left (a keep-alive
 * socket that went idle after the first sweep, a client that never closed its side) is cut.
 */
function close(server: http.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    // After stopAccepting the server is no longer listening: wait for its 'close' instead.
    if (server.listening) server.close();
    server.once('close', () => resolve());
    server.closeIdleConnections();
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    const cut = setTimeout(() => server.closeAllConnections(), 2000);
    server.once('close', () => {
      clearInterval(sweep);
      clearTimeout(cut);
    });
  });
}

/** http://host:port/path of a listening server: the port it bound, not the one asked for. */
function endpointUrl(server: http.Server, path: string): string {
  const address = server.address() as AddressInfo;
  const host =
    address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}${path}`;
}
