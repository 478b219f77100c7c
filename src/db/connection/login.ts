// Who pgmcp logs in as, and which request roles that login may assume.
import { METRICS } from '../../observability/index.js';
import type pg from 'pg';
import type { DatabaseHandle } from '../pool.js';
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

/** Facts about the login requests on `db`'s pool run as. */
export async function inspectRequestLogin(
  db: DatabaseHandle,
): Promise<LoginFacts> {
  const client = await db.pool.connect();
  try {
    return await inspectLogin(client);
  } finally {
    client.release();
  }
}

/**
 * Whether a request may assume a role, or why not: `unknown` (no role has exactly this name),
 * `login` (the login itself or pgmcp_authenticator, or a role with their privileges), `superuser`
 * and `bypassrls` (row-level security would not apply), `reads_all_data` (a member of
 * pg_read_all_data: it could read pgmcp's own tables), `not_granted` (the login may not switch to
 * it).
 */
export type RoleVerdict =
  | 'allowed'
  | 'unknown'
  | 'login'
  | 'superuser'
  | 'bypassrls'
  | 'reads_all_data'
  | 'not_granted';

// The name is compared as text with rolname, never parsed as an identifier (to_regrole would fold
// case, strip quotes and blanks, and raise on bad syntax). PostgreSQL 16 lets a grant withhold SET;
// before 16, membership is what SET ROLE needs.
// pgmcp's own tables (claims of listening principals, shared secrets) are granted
// to the login only: a role holding the login's privileges, or pg_read_all_data's (which no REVOKE
// takes back), would read them through the query tool.
const ROLE_VERDICT_SQL = `
select r.rolname::text = l.rolname::text or r.rolname::text = '${AUTHENTICATOR_ROLE}'
       or exists (select from pg_roles o
                   where (o.oid = l.oid or o.rolname::text = '${AUTHENTICATOR_ROLE}')
                     and pg_has_role(r.oid, o.oid, 'USAGE')) as login,
       r.rolsuper as superuser, r.rolbypassrls as bypassrls,
       exists (select from pg_roles a where a.rolname = 'pg_read_all_data'
                  and pg_has_role(r.oid, a.oid, 'USAGE')) as reads_all_data,
       case when current_setting('server_version_num')::int >= 160000
            then pg_has_role(l.oid, r.oid, 'SET')
            else pg_has_role(l.oid, r.oid, 'MEMBER') end as granted
  from pg_roles r
  left join pg_roles l on l.rolname::text = coalesce($2::text, session_user::text)
 where r.rolname::text = $1::text`;

/**
 * Whether requests served by `login` (default: the session's login) may run as exactly `role`.
 * The one check behind tokens (createRoleChecker) and `pgmcp token`.
 */
export async function checkRequestRole(
  queryable: Pick<pg.Pool, 'query'> | pg.Client,
  role: string,
  login?: string,
): Promise<RoleVerdict> {
  let rows: {
    login: boolean | null;
    superuser: boolean;
    bypassrls: boolean;
    reads_all_data: boolean;
    granted: boolean | null;
  }[];
  try {
    ({ rows } = await queryable.query({
      name: 'pgmcp_check_request_role',
      text: ROLE_VERDICT_SQL,
      values: [role, login ?? null],
    }));
  } catch (error) {
    throw toDatabaseError(error);
  }
  const row = rows[0];
  if (row === undefined) return 'unknown';
  if (row.login === true) return 'login';
  if (row.superuser) return 'superuser';
  if (row.bypassrls) return 'bypassrls';
  if (row.reads_all_data) return 'reads_all_data';
  return row.granted === true ? 'allowed' : 'not_granted';
}

/** checkRequestRole on `db`'s request pool. */
export function checkPoolRole(
  db: DatabaseHandle,
  role: string,
  login?: string,
): Promise<RoleVerdict> {
  return checkRequestRole(db.pool, role, login);
}

export interface RoleCheckerOptions {
  /** Decisions kept, the oldest dropped first; 0: every request asks the database. */
  readonly maxEntries: number;
  /** How long a decision stands: role DDL and role grants reach no change feed. 0: not kept. */
  readonly maxAgeMs: number;
  /** The clock (tests move it). */
  readonly now?: () => number;
}

/** Whether the login may switch to a role, with a cache the change feed can empty. */
export interface RoleChecker {
  (role: string): Promise<boolean>;
  /** Forget every decision (the feed reported a schema change, or the database's history moved). */
  clear(): void;
}

/**
 * Whether the login may switch to `role` (checkRequestRole says `allowed`). A decision is kept
 * for at most `maxAgeMs`, so a revoked or dropped role is refused within that time without a
 * query per request; callers asking at once share one query.
 */
export function createRoleChecker(
  db: DatabaseHandle,
  options: RoleCheckerOptions,
): RoleChecker {
  const now = options.now ?? Date.now;
  const keep = options.maxEntries > 0 && options.maxAgeMs > 0;
  const cache = new Map<string, { allowed: Promise<boolean>; until: number }>();
  const canAssume = (async (role: string) => {
    const time = now();
    const hit = cache.get(role);
    if (hit !== undefined && hit.until > time) {
      METRICS.cacheLookups.inc({ cache: 'role', result: 'hit' });
      return hit.allowed;
    }
    METRICS.cacheLookups.inc({ cache: 'role', result: 'miss' });
    cache.delete(role);
    const allowed = checkRequestRole(db.pool, role).then(
      (verdict) => verdict === 'allowed',
    );
    if (!keep) return allowed;
    const oldest = cache.keys().next();
    if (cache.size >= options.maxEntries && oldest.done !== true)
      cache.delete(oldest.value);
    const entry = { allowed, until: time + options.maxAgeMs };
    cache.set(role, entry);
    // A failed check is not a decision: the next request asks again.
    allowed.catch(() => {
      if (cache.get(role) === entry) cache.delete(role);
    });
    return allowed;
  }) as RoleChecker;
  canAssume.clear = () => cache.clear();
  return canAssume;
}

/** Why a role is refused, for the CLI (never sent to clients: the wire answer names no role). */
export const ROLE_REFUSALS: Readonly<
  Record<Exclude<RoleVerdict, 'allowed'>, string>
> = {
  unknown:
    'no role has exactly this name (role names are case-sensitive and taken as written, without quotes)',
  login:
    'it is the login pgmcp serves requests as, and a request may never act as the login',
  superuser:
    'it is a superuser, and row-level security does not apply to superusers',
  bypassrls: 'it has BYPASSRLS, so row-level security would not apply to it',
  reads_all_data:
    "it is a member of pg_read_all_data, which reads pgmcp's own tables (no REVOKE takes that back)",
  not_granted: `it is not granted to the login: run pgmcp role grant <role>`,
};

/** GRANT `role` TO pgmcp_authenticator, as the (administrative) `client`, if requests may use it. */
export async function grantToAuthenticator(
  client: pg.Client,
  role: string,
): Promise<void> {
  const verdict = await checkRequestRole(client, role, AUTHENTICATOR_ROLE);
  if (verdict !== 'allowed' && verdict !== 'not_granted')
    throw new Error(
      `role ${JSON.stringify(role)} may not serve requests: ${ROLE_REFUSALS[verdict]}` +
        (verdict === 'unknown'
          ? '; create it first (CREATE ROLE … NOLOGIN)'
          : ''),
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

/** Whether pgmcp_authenticator exists and may log in (undefined: it does not exist). */
export async function authenticatorLogin(
  client: pg.Client,
): Promise<{ readonly canLogin: boolean } | undefined> {
  const { rows } = await client.query<{ login: boolean | null }>(
    'select rolcanlogin as login from pg_roles where rolname = $1',
    [AUTHENTICATOR_ROLE],
  );
  const role = rows[0];
  return role === undefined ? undefined : { canLogin: role.login === true };
}

/** What an administrator runs to let pgmcp_authenticator log in (advice `pgmcp migrate` prints). */
export const ENABLE_AUTHENTICATOR_LOGIN_HINT = `ALTER ROLE ${AUTHENTICATOR_ROLE} LOGIN PASSWORD '<choose one>';`;
