// How HTTP requests are authenticated: the token verifier, the role check and the
// protected-resource metadata, per config.
import {
  AuthenticationError,
  LOGIN_PRINCIPAL,
  createScopePolicy,
  createTokenVerifier,
  jwtSecret,
  protectedResourceMetadata,
  tokenAudience,
  type Principal,
  type SigningSecretSettings,
} from '../auth/index.js';
import type { Config } from '../config/index.js';
import { type RoleChecker } from '../db/index.js';
import { ConfigError, ProtocolError } from '../errors.js';
import type { Logger } from '../log.js';
import { type HttpSecurity } from '../transport/index.js';

export interface AuthenticateOptions {
  readonly config: Config;
  /** HS256 secret (configured, or the embedded default's); undefined with a JWKS only. */
  readonly secret: string | undefined;
  readonly audience: string;
  /** Whether a request may run as a role (db/ checkRequestRole says allowed); cached by db/. */
  readonly canAssume: (role: string) => Promise<boolean>;
  readonly logger: Logger;
}

/**
 * HTTP request → Principal. PGMCP_AUTH=none: everyone is PGMCP_ROLE (or the login). jwt: the bearer
 * token must verify, and the role it names must be one the login may assume. Failures are logged by
 * reason only, never with the token or the role it named.
 */
export function createAuthenticate(
  options: AuthenticateOptions,
): (request: {
  headers: { authorization?: string | undefined };
}) => Promise<Principal> {
  const { config } = options;
  if (config.auth.mode === 'none') {
    const principal = tokenlessPrincipal(config);
    return () => Promise.resolve(principal);
  }
  const verifier = createTokenVerifier({
    secret: options.secret,
    jwksUrl: config.auth.jwksUrl,
    issuer: config.auth.issuer,
    audience: options.audience,
    roleClaim: config.auth.roleClaim,
    anonymousRole: config.auth.anonymousRole,
    cacheMaxEntries: config.auth.cacheMaxEntries,
    cacheMaxLifetimeSeconds: config.auth.cacheMaxLifetimeSeconds,
  });
  return async function authenticate(request) {
    let principal: Principal;
    try {
      principal = await verifier.verify(request.headers.authorization);
    } catch (error) {
      if (!(error instanceof AuthenticationError)) throw error;
      options.logger.warn(`refused a request: ${error.reason}`);
      if (error.reason === 'ROLE_FORBIDDEN')
        throw new ProtocolError(
          'ROLE_FORBIDDEN',
          'The token does not name a role this server may assume.',
        );
      if (error.reason === 'KEYS_UNAVAILABLE')
        throw new ProtocolError(
          'UNAVAILABLE',
          'The identity provider is unavailable.',
          { cause: error },
        );
      throw new ProtocolError('AUTHENTICATION_REQUIRED', error.message);
    }
    if (principal.role !== null && !(await options.canAssume(principal.role))) {
      options.logger.warn('refused a request: ROLE_NOT_GRANTED');
      throw new ProtocolError(
        'ROLE_FORBIDDEN',
        'The token does not name a role this server may assume.',
      );
    }
    return principal;
  };
}

/**
 * Who a caller without a token is (stdio, PGMCP_AUTH=none, selftest): PGMCP_ROLE or the login,
 * holding the scopes PGMCP_SCOPES names (unset: not limited by scopes).
 */
export function tokenlessPrincipal(config: Config): Principal {
  if (config.role === undefined && config.tokenlessScopes === undefined)
    return LOGIN_PRINCIPAL;
  return Object.freeze({
    role: config.role ?? null,
    claims: Object.freeze({}),
    ...(config.tokenlessScopes === undefined
      ? {}
      : { scopes: Object.freeze([...config.tokenlessScopes]) }),
  });
}

/** Where the HS256 secret comes from, per config (the state folder only for the embedded default). */
export function signingSecretSettings(config: Config): SigningSecretSettings {
  return {
    secret: config.auth.secret,
    jwksUrl: config.auth.jwksUrl,
    stateDirectory:
      config.database.mode === 'embedded' ? config.stateDirectory : undefined,
  };
}

/** HTTP needs a way to authenticate before anything starts (the embedded default makes a secret). */
export function requireAuthentication(config: Config): void {
  if (
    !config.stdio &&
    config.auth.mode === 'jwt' &&
    jwtSecret(signingSecretSettings(config)) === undefined &&
    config.auth.jwksUrl === undefined
  )
    throw new ConfigError(
      'HTTP requests need authentication: set PGMCP_JWT_SECRET (HS256, 32+ characters) or PGMCP_JWKS_URL (your identity provider), ' +
        'or PGMCP_AUTH=none to serve every caller as one role (PGMCP_ROLE). See README "Authorization".',
    );
}

/** The audience tokens must carry, for the server listening on `port` (default: the configured one). */
export function serverAudience(config: Config, port = config.port): string {
  return tokenAudience(
    { audience: config.auth.audience, host: config.host },
    port,
  );
}

/** Token checks and the protected-resource metadata for the server's own URL, `audience`. */
export function httpSecurity(
  config: Config,
  audience: string,
  deps: { canAssume: RoleChecker; logger: Logger },
): HttpSecurity {
  return {
    authenticate: createAuthenticate({
      config,
      secret: jwtSecret(signingSecretSettings(config)),
      audience,
      canAssume: deps.canAssume,
      logger: deps.logger,
    }),
    protectedResource:
      config.auth.mode === 'jwt'
        ? protectedResourceMetadata(
            audience,
            config.auth.issuer,
            createScopePolicy(config.scopes).supported,
          )
        : undefined,
  };
}
