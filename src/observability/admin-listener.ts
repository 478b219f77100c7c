// The admin listener (issue 35): Prometheus metrics and the probes on a port of their own, off the
// MCP endpoint, with no authentication: bind it to loopback or the pod network only.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { metricsExposition } from './metrics.js';

/** Readiness as /readyz reports it: ok, plus why not (draining, the listener's health). */
export type Readiness = () => {
  ok: boolean;
  detail: Record<string, unknown>;
};

export interface AdminListener {
  /** http://host:port of the listener (the port it bound). */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Serve GET /metrics (Prometheus text), /livez and /healthz (the process answers), /readyz (this
 * replica can serve: `ready`) on `host`:`port`. Resolves once bound.
 */
export async function startAdminListener(options: {
  readonly host: string;
  readonly port: number;
  readonly ready: Readiness;
  readonly log: (line: string) => void;
}): Promise<AdminListener> {
  const server = http.createServer((request, response) => {
    answer(options, request, response).catch((error: unknown) => {
      options.log(
        `admin listener: ${error instanceof Error ? error.message : String(error)}`,
      );
      if (!response.headersSent) sendJson(response, 500, { status: 'error' });
      else response.destroy();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host =
    address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(
  options: { readonly ready: Readiness },
  request: http.IncomingMessage,
  response: http.ServerResponse,
): Promise<void> {
  const path = (request.url ?? '/').split('?', 1)[0] ?? '/';
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('Allow', 'GET, HEAD');
    sendJson(response, 405, { error: 'method not allowed' });
    return;
  }
  switch (path) {
    case '/metrics': {
      const { contentType, body } = await metricsExposition();
      response.writeHead(200, { 'Content-Type': contentType });
      response.end(body);
      return;
    }
    case '/livez':
    case '/healthz':
      sendJson(response, 200, { status: 'ok' });
      return;
    case '/readyz': {
      const readiness = options.ready();
      sendJson(response, readiness.ok ? 200 : 503, {
        status: readiness.ok ? 'ready' : 'not ready',
        ...readiness.detail,
      });
      return;
    }
    default:
      sendJson(response, 404, {
        error: 'not found',
        paths: ['/metrics', '/livez', '/healthz', '/readyz'],
      });
  }
}

function sendJson(
  response: http.ServerResponse,
  status: number,
  body: unknown,
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-store',
  });
  response.end(text);
}
