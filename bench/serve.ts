// The bench's HTTP endpoint: pgmcp's own transport on a free loopback port, every request as one
// identity (the bench measures serving, not token verification).
import type { Principal } from '../src/auth/index.js';
import type { Dispatcher } from '../src/protocol/index.js';
import {
  startHttpTransport,
  type HttpTransport,
} from '../src/transport/index.js';

export function serveAs(
  dispatcher: Dispatcher,
  principal: Principal,
): Promise<HttpTransport> {
  return startHttpTransport({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    dispatcher,
    maxBodyBytes: 1024 * 1024,
    allowedHosts: ['127.0.0.1', 'localhost'],
    allowedOrigins: [],
    authenticate: () => principal,
    log: () => undefined,
  });
}
