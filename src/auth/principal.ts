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
}

/** The principal of a server that runs without authorization: the login role, no claims. */
export const LOGIN_PRINCIPAL: Principal = Object.freeze({
  role: null,
  claims: Object.freeze({}),
});
