// Composition root: the only folder that wires modules together. From the config and the open
// databases it builds the sources, the dispatcher (create-app.ts), authentication
// (authenticate.ts), the change feeds and the transports (serving.ts); server.ts runs them in
// order, and the CLI asks it for the token settings.
export { createApp, type App, type AppOptions } from './create-app.js';
export {
  createAuthenticate,
  serverAudience,
  signingSecretSettings,
  type AuthenticateOptions,
} from './authenticate.js';
export {
  appOptions,
  createRoleDecisions,
  createSources,
  startChangeFeeds,
  startTransports,
  type ServedDatabases,
  type Transports,
} from './serving.js';
