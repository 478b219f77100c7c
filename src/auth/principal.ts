// Who a request runs as. Pure types: authentication fills it, db/ enforces it.

/** The identity a request runs under (STYLE §2: credentials → Principal). */
export interface Principal {
  /** Postgres role the request runs as (SET LOCAL ROLE); null means the login role itself. */
  readonly role: string | null;
  /** Verified claims, visible to SQL as current_setting('request.jwt.claims', true). */
  readonly claims: Readonly<Record<string, unknown>>;
}

/** The principal of a server that runs without authorization: the login role, no claims. */
export const LOGIN_PRINCIPAL: Principal = Object.freeze({
  role: null,
  claims: Object.freeze({}),
});
