// The role's own functions on a pooled connection (index.ts): FETCH with a byte budget, and
// EXPLAIN ANALYZE, made once per connection and role as temporary SECURITY DEFINER functions.
import type pg from 'pg';
import { type RoleFunctions } from './tool-session.js';

/** Per pooled connection: its roles' functions, and the number the next ones get. */
const roleFunctionsByConnection = new WeakMap<
  object,
  { next: number; readonly byRole: Map<string, RoleFunctions> }
>();
/** A connection keeps the functions of this many roles; the least recently made go first. */

const ROLES_PER_CONNECTION = 32;
/** Raised by a function whose owner was renamed: make new ones and run again. */

const STALE_FUNCTION = 'PGM01';

/**
 * The functions as `owner` makes them: FETCH rows of the cursor, each as its row_to_json text (one
 * expression per row: a subquery per row cost several times more; rowsOf splits the text into
 * values, keeping order and repeated names); EXPLAIN ANALYZE the prepared statement. Both refuse
 * to run when their owner is no longer named `owner`, and when the transaction calling them does
 * not run as `owner` (the role setting, which a security-definer function leaves as the caller
 * set it and cannot change, names the request's role).
 */
function roleFunctionsSql(names: RoleFunctions, owner: string): string {
  const bodies = roleFunctionBodies(names, owner);
  return `create function ${names.fetch}(n integer, budget integer) returns setof text
language plpgsql security definer as $f$${bodies.fetch}$f$;
create function ${names.explain}(parameters text[]) returns json
language plpgsql security definer as $f$${bodies.explain}$f$`;
}

/** The bodies of the role's functions (roleFunctionsSql); stored-role-functions.ts checks them too. */
export function roleFunctionBodies(
  names: RoleFunctions,
  owner: string,
): RoleFunctions {
  const guard = (name: string) =>
    `if current_user <> ${owner} then raise exception 'pgmcp: this function''s owner was renamed' using errcode = '${STALE_FUNCTION}'; end if;
  if current_setting('role') <> ${owner} then raise exception 'permission denied for function ${name.replace('pg_temp.', '')}' using errcode = '42501'; end if;`;
  return {
    fetch: `
declare c refcursor := 'pgmcp_tool_query'; r record; t text; used bigint := 0; cap integer;
begin
  ${guard(names.fetch)}
  for i in 1..n loop
    fetch c into r;
    exit when not found;
    t := row_to_json(r)::text;
    if used + octet_length(t) > budget then
      -- Over the byte budget: stop sending (a NULL says so). A first row alone over it is sent
      -- with each value cut to its share of the budget, marked with a trailing "...".
      if used = 0 then
        cap := greatest(budget / greatest((select count(*) from json_each(row_to_json(r))), 1), 16);
        return next (select '{' || coalesce(string_agg(to_json(e.key)::text || ':' || case
            when octet_length(e.value::text) <= cap then e.value::text
            when json_typeof(e.value) = 'string' then to_json(left(e.value #>> '{}', cap) || '...')::text
            else to_json(left(e.value::text, cap) || '...')::text end, ',' order by e.n), '') || '}'
          from json_each(row_to_json(r)) with ordinality as e(key, value, n));
      end if;
      return next null;
      return;
    end if;
    used := used + octet_length(t);
    return next t;
  end loop;
end `,
    explain: `
declare plan json;
begin
  ${guard(names.explain)}
  -- The parameters become quoted literals here: nothing the caller passes is read as SQL.
  execute 'EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE pgmcp_tool_statement' || coalesce(
    '(' || (select string_agg(quote_nullable(value), ', ' order by n)
              from unnest(parameters) with ordinality as p(value, n)) || ')', '') into plan;
  return plan;
end `,
  };
}

/**
 * The request role's functions on this connection, made (as the role, so owned by it, in a
 * committed transaction of their own) the first time the connection serves the role.
 */
export async function roleFunctions(
  client: pg.PoolClient,
  role: string | null,
): Promise<RoleFunctions> {
  let state = roleFunctionsByConnection.get(client);
  if (state === undefined) {
    state = { next: 1, byRole: new Map() };
    roleFunctionsByConnection.set(client, state);
  }
  const key = role ?? '';
  const known = state.byRole.get(key);
  if (known !== undefined) return known;
  const oldest = state.byRole.keys().next();
  if (state.byRole.size >= ROLES_PER_CONNECTION && oldest.done !== true)
    await dropRoleFunctions(client, state.byRole, oldest.value);
  const n = state.next;
  state.next += 1;
  const names = {
    fetch: `pg_temp.pgmcp_tool_fetch_${n}`,
    explain: `pg_temp.pgmcp_tool_explain_${n}`,
  };
  try {
    await client.query('BEGIN READ WRITE');
    const { rows } = await client.query<{ owner: string }>(
      "select set_config('role', coalesce($1, current_user), true) as owner",
      [role],
    );
    await client.query(
      roleFunctionsSql(names, client.escapeLiteral(rows[0]?.owner ?? '')),
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
  state.byRole.set(key, names);
  return names;
}

/** Drop a role's functions from this connection (as the role, their owner); forget them either way. */
async function dropRoleFunctions(
  client: pg.PoolClient,
  byRole: Map<string, RoleFunctions>,
  key: string,
): Promise<void> {
  const names = byRole.get(key);
  byRole.delete(key);
  if (names === undefined) return;
  await client
    .query(
      `BEGIN READ WRITE; select set_config('role', ${key === '' ? 'current_user' : client.escapeLiteral(key)}, true); drop function if exists ${names.fetch}(integer, integer); drop function if exists ${names.explain}(text[]); COMMIT`,
    )
    .catch(() => client.query('ROLLBACK').catch(() => undefined));
}

/**
 * Whether `error` may say the connection's functions for the role can no longer be used: a guard
 * found its owner renamed, or the functions are gone or not the role's to run. Only a candidate:
 * a statement can raise the same codes on purpose, so the catalog decides (functionsGone).
 */
export function maybeStale(error: unknown, names: RoleFunctions): boolean {
  const { code, message } = (error ?? {}) as {
    code?: unknown;
    message?: unknown;
  };
  if (code === STALE_FUNCTION) return true;
  if ((code !== '42501' && code !== '42883') || typeof message !== 'string')
    return false;
  return [names.fetch, names.explain].some((name) =>
    new RegExp(`\\b${name.replace('pg_temp.', '')}\\b`).test(message),
  );
}

/** Whether the role's fetch function is missing or owned by a role of another name now. */
export async function functionsGone(
  client: pg.PoolClient,
  names: RoleFunctions,
  role: string | null,
): Promise<boolean> {
  const { rows } = await client.query<{ ours: boolean }>(
    `select pg_get_userbyid(p.proowner) = coalesce($2, current_user::text) as ours
       from pg_proc p where p.oid = to_regprocedure($1)`,
    [`${names.fetch}(integer, integer)`, role],
  );
  return rows[0]?.ours !== true;
}

/** Forget this connection's functions for `role` (gone, or someone else's now), dropping what is left. */
export async function forgetRoleFunctions(
  client: pg.PoolClient,
  role: string | null,
): Promise<void> {
  const state = roleFunctionsByConnection.get(client);
  if (state !== undefined)
    await dropRoleFunctions(client, state.byRole, role ?? '');
}
