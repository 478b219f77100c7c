// Public surface of transport/: Streamable HTTP and stdio. They frame bytes and know no methods.
export {
  startHttpTransport,
  type HttpSecurity,
  type HttpTransport,
  type HttpTransportOptions,
} from './http.js';
export {
  startStdioTransport,
  type StdioTransport,
  type StdioTransportOptions,
} from './stdio.js';
export { createLineChannel } from './line-channel.js';
export {
  createLegacyHttp,
  type LegacyHttp,
  type LegacyHttpOptions,
  type LegacySessionRecord,
  type LegacySessionRecords,
} from './legacy-http.js';
