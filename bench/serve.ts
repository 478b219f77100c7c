// The bench's HTTP endpoint: pgmcp's own transport on a free loopback port, each request
// authenticated as in production (bearer token verified, role checked against the database).
import { createAuthenticate, createRoleDecisions } from '../src/app/index.js';
import { loadConfig } from '../src/config/index.js';
import type { DatabaseHandle } from '../src/db/index.js';
import type { Logger } from '../src/log.js';
import type { Dispatcher } from '../src/protocol/index.js';
import {
  startHttpTransport,
  type HttpTransport,
  type HttpEraRoute,
} from '../src/transport/index.js';
import type { TokenIssuer } from './token-issuer.js';

export interface ServeOptions {
  readonly dispatcher: Dispatcher;
  /** Whose tokens the server accepts (its HS256 secret or JWKS URL, its audience). */
  readonly issuer: TokenIssuer;
  /** The database whose roles the tokens name (the role checker asks it). */
  readonly db: DatabaseHandle;
  readonly logger: Logger;
  /** 2025-11-25 sessions beside 2026-07-28 (the app's `otherEraHttp`); absent: modern only. */
  readonly legacy?: HttpEraRoute | undefined;
}

/** Serve `dispatcher` with the server's default token and role-decision caches. */
export function serve(options: ServeOptions): Promise<HttpTransport> {
  const { issuer } = options;
  const config = loadConfig(
    {},
    {
      PGMCP_AUTH: 'jwt',
      PGMCP_JWT_SECRET: issuer.secret,
      PGMCP_JWKS_URL: issuer.jwksUrl,
      PGMCP_JWT_AUDIENCE: issuer.audience,
      DATABASE_URL: 'postgres://bench@127.0.0.1/unused',
    },
  );
  const authenticate = createAuthenticate({
    config,
    secret: issuer.secret,
    audience: issuer.audience,
    canAssume: createRoleDecisions(config, options.db),
    logger: options.logger,
  });
  return startHttpTransport({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    dispatcher: options.dispatcher,
    maxBodyBytes: 1024 * 1024,
    allowedHosts: ['127.0.0.1', 'localhost'],
    allowedOrigins: [],
    authenticate,
    log: () => undefined,
    otherEra: options.legacy,
  });
}
