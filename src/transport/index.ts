// Public surface of transport/: Streamable HTTP and stdio. They frame bytes and know no methods.
export type {
  HttpSecurity,
  HttpTransport,
  HttpTransportOptions,
} from './http-options.js';
export { startHttpTransport } from './http-transport.js';
export {
  startStdioTransport,
  type StdioTransport,
  type StdioTransportOptions,
} from './stdio-transport.js';
export type { HttpEraRoute, HttpExchange } from './http-options.js';
export { AnsweredRequest } from './http-request-context.js';
export { send } from './http-responses.js';
export { SSE_HEADERS } from './sse-stream.js';
