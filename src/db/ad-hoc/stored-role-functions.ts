// A role's query and explain functions kept in pgmcp's schema, for hot standbys (issue 36 point 1).
// A standby cannot make the temporary functions a pooled connection makes on the primary
// (role-functions.ts: no catalog writes during recovery), so `pgmcp role grant` makes these once on
// the primary, as the role (so owned by it), and replication brings them to every standby. They
// are the temporary ones' bodies, SECURITY DEFINER with a fixed search_path; a call on a standby
// checks them in the catalog first (owner, body, settings), since their owner may alter them.
import type pg from 'pg';
import { roleFunctionBodies } from './role-functions.js';
import type { RoleFunctions } from './tool-session.js';

const SEARCH_PATH = 'search_path=pg_catalog, pg_temp';

/** The stored functions' names for the role with this oid. */
function storedNames(oid: string): RoleFunctions {
  return {
    fetch: `pgmcp.tool_fetch_${oid}`,
    explain: `pgmcp.tool_explain_${oid}`,
  };
}

/**
 * Make (or make again) `role`'s stored functions, on the primary, through an administrative client
 * that owns pgmcp's schema (or is a superuser) and may act as the role. The role may create in the
 * schema only inside this transaction: CREATE is granted, used and revoked before it commits.
 */
export async function storeRoleFunctions(
  client: pg.Client,
  role: string,
): Promise<void> {
  const { rows } = await client.query<{ oid: string }>(
    'select oid::text as oid from pg_roles where rolname = $1',
    [role],
  );
  const oid = rows[0]?.oid;
  if (oid === undefined) throw new Error(`role ${role} does not exist`);
  const names = storedNames(oid);
  const bodies = roleFunctionBodies(names, client.escapeLiteral(role));
  const quoted = client.escapeIdentifier(role);
  await client.query('begin');
  try {
    await client.query(
      `drop function if exists ${names.fetch}(integer, integer);
       drop function if exists ${names.explain}(text[]);
       grant create on schema pgmcp to ${quoted};
       set local role ${quoted};
       create function ${names.fetch}(n integer, budget integer) returns setof text
         language plpgsql security definer set ${SEARCH_PATH.replace('=', ' = ')} as $f$${bodies.fetch}$f$;
       create function ${names.explain}(parameters text[]) returns json
         language plpgsql security definer set ${SEARCH_PATH.replace('=', ' = ')} as $f$${bodies.explain}$f$;
       revoke all on function ${names.fetch}(integer, integer), ${names.explain}(text[]) from public;
       reset role;
       revoke create on schema pgmcp from ${quoted};`,
    );
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
}

/**
 * The request role's stored functions as this connection's server has them, or undefined when
 * either is missing or not exactly what storeRoleFunctions makes (another owner, another body,
 * not SECURITY DEFINER, other settings). Asked on every call: their owner could alter them.
 */
export async function storedRoleFunctions(
  client: pg.PoolClient,
  role: string | null,
): Promise<RoleFunctions | undefined> {
  const { rows } = await client.query<{ oid: string; name: string }>(
    'select oid::text as oid, rolname as name from pg_roles where rolname = coalesce($1, current_user)',
    [role],
  );
  const found = rows[0];
  if (found === undefined) return undefined;
  const names = storedNames(found.oid);
  const bodies = roleFunctionBodies(names, client.escapeLiteral(found.name));
  const { rows: checked } = await client.query<{ matching: number }>(
    `select count(*)::int as matching
       from pg_proc p
      where p.oid in (to_regprocedure($1), to_regprocedure($2))
        and p.proowner = $3::oid and p.prosecdef and p.proconfig = array[$4]
        and p.prolang = (select oid from pg_language where lanname = 'plpgsql')
        and p.prosrc = case when p.oid = to_regprocedure($1) then $5 else $6 end`,
    [
      `${names.fetch}(integer, integer)`,
      `${names.explain}(text[])`,
      found.oid,
      SEARCH_PATH,
      bodies.fetch,
      bodies.explain,
    ],
  );
  return checked[0]?.matching === 2 ? names : undefined;
}
