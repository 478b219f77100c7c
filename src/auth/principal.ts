// Who a request runs as. Pure types: authentication fills it, db/ enforces it.

/** The identity a request runs under (STYLE §2: credentials → Principal). */
export interface Principal {
  /** Postgres role the request runs as (SET LOCAL ROLE); null means the login role itself. */
  readonly role: string | null;
  /** Verified claims, visible to SQL as current_setting('request.jwt.claims', true). */
  readonly claims: Readonly<Record<string, unknown>>;
  /**
   * The OAuth scopes the token grants (its `scope` and `scp` claims), which the config file's scope
   * map checks; undefined: no token limits this principal (stdio, PGMCP_AUTH=none, unless
   * PGMCP_SCOPES names the scopes they hold).
   */
  readonly scopes?: readonly string[] | undefined;
  /** SHA-256 (base64url) of the bearer token the claims came from; absent without a token. */
  readonly tokenDigest?: string;
}

/** The principal of a server that runs without authorization: the login role, no claims. */
export const LOGIN_PRINCIPAL: Principal = Object.freeze({
  role: null,
  claims: Object.freeze({}),
});

/**
 * Who the caller is, for everything bound to a caller (2025-11-25 sessions, requestStates,
 * consents), as a JSON text: the role and the token's issuer with its subject (`sub`, a non-empty
 * string: a fresh token of the same person is the same caller); without one, the token's `jti`,
 * else the token itself (its digest), so two holders of tokens without `sub` never share anything
 * (issue 32 point 9). Without a token (stdio, PGMCP_AUTH=none, the anonymous role) every caller of
 * the role is the same one.
 */
export function principalIdentity(principal: Principal): string {
  const { role, claims } = principal;
  const issuer = claims['iss'] ?? null;
  const subject = claims['sub'];
  if (typeof subject === 'string' && subject !== '')
    return JSON.stringify([role, issuer, subject]);
  const jti = claims['jti'];
  if (typeof jti === 'string' && jti !== '')
    return JSON.stringify([role, issuer, null, { jti }]);
  if (principal.tokenDigest !== undefined)
    return JSON.stringify([
      role,
      issuer,
      null,
      { token: principal.tokenDigest },
    ]);
  return JSON.stringify([role, issuer, null]);
}
