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
export { createLineChannel } from './line-channel.js';
export {
  createLegacyHttp,
  type LegacyHttp,
  type LegacyHttpOptions,
  type LegacySessionRecord,
  type LegacySessionRecords,
} from './legacy-http.js';
