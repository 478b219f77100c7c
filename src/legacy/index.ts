// The 2025-11-25 era at the edge (issue 14, issue 33): an adapter over the 2026-07-28 dispatcher
// and handlers (era/), a session's state and its requests to the client (session/), HTTP sessions
// (http/), the stdio line channel and subscriptions on the shared fan-out. Only the composition
// root imports it (app/wire-legacy.ts); without this folder and that file the server is modern-only.
// Its sessions' rows stay in db/ (client-sessions.ts: SQL and the pool are db/'s alone, by lint),
// behind an era-free API that app/ hands in as LegacySessionRecords; this folder never imports db/.
export {
  createLegacyAdapter,
  type LegacyAdapter,
  type LegacyAdapterOptions,
} from './era/legacy-adapter.js';
export { createEraDispatcher } from './era/era-dispatcher.js';
export { LEGACY_METHODS, type LegacyRoute } from './era/legacy-methods.js';
export {
  createLegacyHttp,
  type LegacyHttp,
  type LegacyHttpOptions,
} from './http/legacy-http.js';
export type {
  LegacySessionRecord,
  LegacySessionRecords,
} from './http/session-records.js';
export { createLineChannel } from './line-channel.js';
export { LegacySubscriptions } from './legacy-subscriptions.js';
export {
  LEGACY_VERSIONS,
  LegacyNotificationMessages,
  LegacySession,
  type LegacyHandshake,
} from './session/legacy-session.js';
