// Who pgmcp logs in as, and which request roles that login may assume.
import type pg from 'pg';
import type { DatabaseHandle } from './pool.js';
import { toDatabaseError } from './sqlstate.js';

export const AUTHENTICATOR_ROLE = 'pgmcp_authenticator';

export interface LoginFacts {
  readonly name: string;
  readonly superuser: boolean;
  /** A member of the role that owns pgmcp.resources (owners bypass row-level security). */
  readonly ownsResources: boolean;
}

/** Facts about the login role of `client`'s session. */
export async function inspectLogin(
  client: pg.Client | pg.PoolClient,
): Promise<LoginFacts> {
  const { rows } = await client.query<{
    name: string;
    superuser: boolean;
    owns: boolean;
  }>(
    `select current_user as name, r.rolsuper as superuser,
            pg_has_role(current_user, c.relowner, 'MEMBER') as owns
       from pg_roles r, pg_class c
      where r.rolname = current_user and c.oid = 'pgmcp.resources'::regclass`,
  );
  const row = rows[0];
  if (row === undefined) throw new Error('could not inspect the login role');
  return { name: row.name, superuser: row.superuser, ownsResources: row.owns };
}

/**
 * Whether the login may switch to `role` (the role exists and is granted to it). Answers are
 * cached for `ttlMs`, so a grant or revoke takes effect within that time without a query per request.
 */
export function createRoleChecker(
  db: DatabaseHandle,
  ttlMs: number,
): (role: string) => Promise<boolean> {
  const cache = new Map<string, { allowed: boolean; until: number }>();
  return async function canAssume(role) {
    const now = Date.now();
    const hit = cache.get(role);
    if (hit !== undefined && hit.until > now) return hit.allowed;
    let allowed: boolean;
    try {
      const { rows } = await db.pool.query<{ allowed: boolean | null }>({
        name: 'pgmcp_can_assume_role',
        text: `select pg_has_role(session_user, to_regrole($1), 'MEMBER') as allowed`,
        values: [role],
      });
      allowed = rows[0]?.allowed === true;
    } catch (error) {
      throw toDatabaseError(error);
    }
    if (cache.size > 10_000) cache.clear();
    cache.set(role, { allowed, until: now + ttlMs });
    return allowed;
  };
}

/** GRANT `role` TO pgmcp_authenticator, as the (administrative) `client`. */
export async function grantToAuthenticator(
  client: pg.Client,
  role: string,
): Promise<void> {
  const { rows } = await client.query<{ exists: boolean }>(
    'select to_regrole($1) is not null as exists',
    [role],
  );
  if (rows[0]?.exists !== true)
    throw new Error(
      `role ${JSON.stringify(role)} does not exist; create it first (CREATE ROLE … NOLOGIN)`,
    );
  await client.query(
    `grant ${client.escapeIdentifier(role)} to ${AUTHENTICATOR_ROLE}`,
  );
}

/** Let pgmcp_authenticator log in with `password` (embedded default; the password is pgmcp's own). */
export async function enableAuthenticatorLogin(
  client: pg.Client,
  password: string,
): Promise<void> {
  await client.query(
    `alter role ${AUTHENTICATOR_ROLE} login password ${client.escapeLiteral(password)}`,
  );
}
