// Composition root: the only folder that wires modules together. It opens the databases
// (open-database.ts, request-databases.ts) and from the config and those databases builds the
// sources, the dispatcher and its method table (create-app.ts, method-table.ts, a wire-*.ts per
// feature; the 2025-11-25 era in wire-legacy.ts), authentication (authenticate.ts), the change
// feeds and the transports (serving.ts); server.ts runs them in order, and the CLI's commands open
// databases and ask for the token settings here.
export {
  createApp,
  type App,
  type AppExtension,
  type AppOptions,
} from './create-app.js';
export {
  createAuthenticate,
  httpSecurity,
  requireAuthentication,
  serverAudience,
  signingSecretSettings,
  tokenlessPrincipal,
  type AuthenticateOptions,
} from './authenticate.js';
export {
  appOptions,
  createRoleDecisions,
  createSources,
  readiness,
  startChangeFeeds,
  startTransports,
  type ServedDatabases,
  type ServingHealth,
  type Transports,
} from './serving.js';
export {
  configuredDatabase,
  migrateDatabase,
  namedDatabase,
  openDatabase,
  prepareDatabase,
  type OpenDatabase,
} from './open-database.js';
export {
  openMoreDatabases,
  refuseUnsafeLogin,
  requestDatabase,
} from './request-databases.js';
export { createProgress } from './progress.js';
export { startChangeSources, type CaptureTargets } from './change-sources.js';
