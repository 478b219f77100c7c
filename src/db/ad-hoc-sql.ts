// The query and explain tools' SQL (issue 15 points 3, 4): a caller's own statement, run as its role
// and made read-only by PostgreSQL itself, never by parsing it here.
//
// The statement is the tail of `DECLARE … CURSOR FOR`, sent through the extended protocol with its
// parameters: PostgreSQL then accepts exactly one SELECT, VALUES, TABLE or WITH … SELECT (anything
// else, SET ROLE, RESET, DO, CALL, COPY, LISTEN, INSERT, DDL, is a syntax error, and a second
// statement is refused by the protocol), in a READ ONLY transaction (writes, FOR UPDATE and writing
// functions fail with 25006), under the session's statement timeout, with the role set
// transaction-locally. Rows are FETCHed max+1 at most, so a huge result is never computed past the
// cap. The FETCH runs inside a SECURITY DEFINER function owned by the request role itself: the
// statement keeps exactly the role's privileges, and PostgreSQL refuses set_config('role', …) inside
// it ("cannot set parameter role within security-definer function"), so a statement cannot switch
// to another role the login may assume. The transaction always ends in ROLLBACK, which undoes any
// setting the statement made.
//
// Each pooled connection makes a role's functions once, as temporary functions (pg_temp) owned by
// the role, executable by it alone, and keeps them until the connection closes: making them per
// call cost more than the rest of the call. A function checks that its owner still has the name it
// was made for (a renamed role's functions are never used for a new role of the old name).
import { tracedApplicationName } from '../observability/index.js';
import type pg from 'pg';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import {
  ImplicitTransaction,
  type ImplicitField,
  type ImplicitStatement,
} from './implicit-transaction.js';
import { connectClient, PIPELINE, type DatabaseHandle } from './pool.js';
import {
  claimsJson,
  watchCancel,
  type Cancellation,
} from './request-transaction.js';
import { jsonMemberValues } from './json-members.js';
import { toDatabaseError } from './sqlstate.js';

/** A column of a result: its name and PostgreSQL type (format_type). */
export interface SqlColumn {
  readonly name: string;
  readonly type: string;
}

/** A statement's outcome: each row's values as text as JSON renders them (null for NULL). */
export interface SqlRows {
  readonly columns: readonly SqlColumn[];
  readonly rows: readonly (readonly (string | null)[])[];
  /** More rows existed than `maxRows`. */
  readonly truncated: boolean;
}

/** A PostgreSQL error the caller's statement caused: shown to the caller, never a JSON-RPC error. */
export class SqlStatementError extends Error {
  constructor(
    readonly sqlstate: string,
    message: string,
    readonly position: number | undefined,
  ) {
    super(message);
  }
}

export interface AdHocSqlOptions {
  readonly sql: string;
  /** Parameter values as PostgreSQL text (null for NULL). */
  readonly params: readonly (string | null)[];
  /** Schemas the statement may read (null: any the role may); also its search_path. */
  readonly schemas: readonly string[] | null;
  /** The request: once it is cancelled, the running statement is cancelled in PostgreSQL. */
  readonly cancellation?: Cancellation | { readonly aborted: boolean };
}

/** A connection's functions for one role (see the file comment). */
interface RoleFunctions {
  readonly fetch: string;
  readonly explain: string;
}

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
 * to run when their owner is no longer named `owner`.
 */
function roleFunctionsSql(names: RoleFunctions, owner: string): string {
  const guard = `if current_user <> ${owner} then raise exception 'pgmcp: this function''s owner was renamed' using errcode = '${STALE_FUNCTION}'; end if;`;
  return `create function ${names.fetch}(n integer) returns setof text
language plpgsql security definer as $f$
declare c refcursor := 'pgmcp_tool_query'; r record;
begin
  ${guard}
  for i in 1..n loop
    fetch c into r;
    exit when not found;
    return next row_to_json(r)::text;
  end loop;
end $f$;
create function ${names.explain}(parameters text[]) returns json
language plpgsql security definer as $f$
declare plan json;
begin
  ${guard}
  -- The parameters become quoted literals here: nothing the caller passes is read as SQL.
  execute 'EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE pgmcp_tool_statement' || coalesce(
    '(' || (select string_agg(quote_nullable(value), ', ' order by n)
              from unnest(parameters) with ordinality as p(value, n)) || ')', '') into plan;
  return plan;
end $f$;
revoke all on function ${names.fetch}(integer) from public;
revoke all on function ${names.explain}(text[]) from public`;
}

/**
 * The request role's functions on this connection, made (as the role, so owned by it, in a
 * committed transaction of their own) the first time the connection serves the role.
 */
async function roleFunctions(
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
    // Default privileges (ALTER DEFAULT PRIVILEGES FOR ROLE … GRANT EXECUTE) may have granted them
    // to others: only the role itself may run them.
    const { rows: grantees } = await client.query<{ grantee: string }>(
      `select distinct case a.grantee when 0 then 'public' else quote_ident(pg_get_userbyid(a.grantee)) end as grantee
         from pg_proc p, aclexplode(p.proacl) a
        where p.oid in (to_regprocedure($1), to_regprocedure($2)) and a.grantee <> p.proowner`,
      [`${names.fetch}(integer)`, `${names.explain}(text[])`],
    );
    for (const { grantee } of grantees)
      await client.query(
        `revoke all on function ${names.fetch}(integer), ${names.explain}(text[]) from ${grantee}`,
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
      `BEGIN READ WRITE; select set_config('role', ${key === '' ? 'current_user' : client.escapeLiteral(key)}, true); drop function if exists ${names.fetch}(integer); drop function if exists ${names.explain}(text[]); COMMIT`,
    )
    .catch(() => client.query('ROLLBACK').catch(() => undefined));
}

/** pg's table of the statements it has prepared on this connection (db/implicit-transaction.ts). */
function parsedStatements(client: pg.PoolClient): Record<string, string> {
  return (
    (
      client as unknown as {
        connection?: { parsedStatements?: Record<string, string> };
      }
    ).connection?.parsedStatements ?? {}
  );
}

/**
 * Whether `error` may say the connection's functions for the role can no longer be used: a guard
 * found its owner renamed, or the functions are gone or not the role's to run. Only a candidate:
 * a statement can raise the same codes on purpose, so the catalog decides (functionsGone).
 */
function maybeStale(error: unknown, names: RoleFunctions): boolean {
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
async function functionsGone(
  client: pg.PoolClient,
  names: RoleFunctions,
  role: string | null,
): Promise<boolean> {
  const { rows } = await client.query<{ ours: boolean }>(
    `select pg_get_userbyid(p.proowner) = coalesce($2, current_user::text) as ours
       from pg_proc p where p.oid = to_regprocedure($1)`,
    [`${names.fetch}(integer)`, role],
  );
  return rows[0]?.ours !== true;
}

const CURSOR = 'DECLARE pgmcp_tool_query NO SCROLL CURSOR FOR ';
/** The prefix's length: PostgreSQL's error positions are reported relative to the caller's text. */
const CURSOR_LENGTH = CURSOR.length;

/** Run the caller's statement (see the file comment) and read at most `maxRows` rows. */
export async function runReadOnlySql(
  db: DatabaseHandle,
  principal: Principal,
  options: AdHocSqlOptions & { readonly maxRows: number },
): Promise<SqlRows> {
  return withToolConnection(db, principal, options, async (session) => {
    if (PIPELINE && options.schemas === null)
      return fetchInOneRoundTrip(session, principal, options);
    const { client, functions } = session;
    await beginReadOnly(session, principal, options);
    session.prefixLength = CURSOR_LENGTH;
    await client.query(single(CURSOR + options.sql, [...options.params]));
    // Zero rows: the columns' names and types, without running the statement.
    const described = await client.query(
      'FETCH FORWARD 0 FROM pgmcp_tool_query',
    );
    const fetched = await client.query<{ row: string }>(
      `select ${functions.fetch}($1) as row`,
      [options.maxRows + 1],
    );
    return rowsOf(
      client,
      described.fields,
      fetched.rows.map((entry) => entry.row),
      options.maxRows,
    );
  });
}

/**
 * The whole call in one round trip (db/implicit-transaction.ts): BEGIN READ ONLY, the role and
 * claims, the cursor, its description (FETCH 0), the rows through the role's function, ROLLBACK and
 * the release of advisory locks, then a single Sync. After an error the backend skips the rest and
 * the connection's clean-up ends the transaction.
 */
async function fetchInOneRoundTrip(
  session: ToolSession,
  principal: Principal,
  options: AdHocSqlOptions & { readonly maxRows: number },
): Promise<SqlRows> {
  const { client, functions } = session;
  const transaction = new ImplicitTransaction([
    { name: 'pgmcp_tool_begin', text: 'BEGIN READ ONLY', values: [] },
    toolIdentity(principal),
    // From the caller's statement on, everything is the unnamed statement, parsed as it is sent:
    // the caller's code (planning the cursor, fetching it) could replace a named statement with SQL
    // PREPARE before the Bind that runs it, but never the unnamed one.
    { name: '', text: CURSOR + options.sql, values: [...options.params] },
    { name: '', text: 'FETCH FORWARD 0 FROM pgmcp_tool_query', values: [] },
    {
      name: '',
      text: `select ${functions.fetch}($1) as row`,
      values: [options.maxRows + 1],
    },
    { name: '', text: 'ROLLBACK', values: [] },
    {
      name: '',
      text: `select pg_advisory_unlock_all(), c.* from (${PREPARED_COUNTS}) c`,
      values: [],
    },
  ]);
  session.prefixLength = CURSOR_LENGTH;
  void client.query(transaction as unknown as pg.Submittable);
  let results;
  try {
    results = await transaction.result;
  } catch (error) {
    if (transaction.unsafeToReuse) session.halfParsed = transaction;
    throw error;
  }
  session.ended = true;
  // Counted after this pipeline's own statements were parsed, which pg's table now records.
  session.tamperedWith = tampered(
    client,
    (results[6] ?? [])[0] as PreparedCounts | undefined,
  );
  const fetched = (results[4] ?? []) as { row: string }[];
  return rowsOf(
    client,
    transaction.fields[3] ?? [],
    fetched.map((entry) => entry.row),
    options.maxRows,
  );
}

/**
 * The FETCHed rows (max+1 at most) as a result: each row's JSON object split into its values, as
 * many as the cursor has columns.
 */
async function rowsOf(
  client: pg.PoolClient,
  fields: readonly ImplicitField[],
  fetched: readonly string[],
  maxRows: number,
): Promise<SqlRows> {
  const rows = fetched.map((json) => {
    const values = jsonMemberValues(json);
    if (values.length !== fields.length)
      throw new Error(
        `a fetched row has ${values.length} values for ${fields.length} columns`,
      );
    return values;
  });
  return {
    columns: await columnTypes(client, fields),
    rows: rows.slice(0, maxRows),
    truncated: rows.length > maxRows,
  };
}

/** The plan of the caller's statement as JSON (EXPLAIN FORMAT JSON), executed only with `analyze`. */
export async function explainSql(
  db: DatabaseHandle,
  principal: Principal,
  options: AdHocSqlOptions & { readonly analyze: boolean },
): Promise<{ plan: unknown; text: string }> {
  return withToolConnection(db, principal, options, async (session) => {
    const { client } = session;
    await beginReadOnly(session, principal, options);
    session.prefixLength = 'EXPLAIN (FORMAT TEXT) '.length;
    const text = await client.query<{ 'QUERY PLAN': string }>(
      single(`EXPLAIN (FORMAT TEXT) ${options.sql}`, [...options.params]),
    );
    const plan = options.analyze
      ? await explainAnalyzed(session, options)
      : await explainJson(session, options);
    return {
      plan,
      text: text.rows.map((row) => row['QUERY PLAN']).join('\n'),
    };
  });
}

/** EXPLAIN (FORMAT JSON) of the caller's statement, without running it. */
async function explainJson(
  session: ToolSession,
  options: AdHocSqlOptions,
): Promise<unknown> {
  session.prefixLength = 'EXPLAIN (FORMAT JSON) '.length;
  const { rows } = await session.client.query<{ 'QUERY PLAN': unknown }>(
    single(`EXPLAIN (FORMAT JSON) ${options.sql}`, [...options.params]),
  );
  return rows[0]?.['QUERY PLAN'];
}

/**
 * The tables the caller's statement reads, from its plan (EXPLAIN (VERBOSE, FORMAT JSON): views
 * expanded to their tables), without running it: what a consent check needs to know.
 */
export async function tablesOfSql(
  db: DatabaseHandle,
  principal: Principal,
  options: AdHocSqlOptions,
): Promise<{ schema: string; table: string }[]> {
  return withToolConnection(db, principal, options, async (session) => {
    const { client } = session;
    await beginReadOnly(session, principal, options);
    session.prefixLength = 'EXPLAIN (VERBOSE, FORMAT JSON) '.length;
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
      single(`EXPLAIN (VERBOSE, FORMAT JSON) ${options.sql}`, [
        ...options.params,
      ]),
    );
    const found = new Map<string, { schema: string; table: string }>();
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      if (typeof node !== 'object' || node === null) return;
      const fields = node as Record<string, unknown>;
      const schema = fields['Schema'];
      const table = fields['Relation Name'];
      if (typeof schema === 'string' && typeof table === 'string')
        found.set(`${schema}.${table}`, { schema, table });
      Object.values(fields).forEach(walk);
    };
    walk(rows[0]?.['QUERY PLAN']);
    return [...found.values()];
  });
}

/**
 * EXPLAIN ANALYZE runs the statement, so it runs where query's FETCH does: inside the role's own
 * security-definer function, where no role change is possible. The statement is PREPAREd (one
 * statement, through the extended protocol) and EXECUTEd there with the parameters as literals,
 * which PostgreSQL converts to the types it inferred; the clean-up drops the prepared statement.
 */
async function explainAnalyzed(
  session: ToolSession,
  options: AdHocSqlOptions,
): Promise<unknown> {
  const { client, functions } = session;
  session.prepared = true;
  session.prefixLength = 'PREPARE pgmcp_tool_statement AS '.length;
  await client.query(
    single(`PREPARE pgmcp_tool_statement AS ${options.sql}`, []),
  );
  session.prefixLength = 'PREPARE pgmcp_tool_statement AS '.length;
  const { rows } = await client.query<{ plan: unknown }>(
    `select ${functions.explain}($1) as plan`,
    [[...options.params]],
  );
  return rows[0]?.plan;
}

/** A pooled connection lent to one tool call, and what its clean-up must undo. */
interface ToolSession {
  readonly client: pg.PoolClient;
  readonly functions: RoleFunctions;
  /** The call's transaction ended, its locks released: nothing to clean up. */
  ended: boolean;
  /** pgmcp_tool_statement may exist (explain with analyze). */
  prepared: boolean;
  /** A pipeline whose new prepared statements may be half-made (an error on their first use). */
  halfParsed?: ImplicitTransaction;
  /** What pgmcp put before the caller's text in the statement running now (error positions). */
  prefixLength: number;
  /** Why the connection cannot go back to the pool, found after the call ended. */
  tamperedWith?: Error;
}

/**
 * The tool's identity statement; a traced request's also names its trace in application_name
 * (issue 35, transaction-local: pg_stat_activity shows it while the caller's statement runs).
 */
function toolIdentity(principal: Principal): ImplicitStatement {
  const traced = tracedApplicationName();
  return traced === undefined
    ? {
        name: 'pgmcp_tool_identity',
        text: "select set_config('role', coalesce($1, current_user), true), set_config('request.jwt.claims', $2, true)",
        values: [principal.role, claimsJson(principal)],
      }
    : {
        name: 'pgmcp_tool_identity_traced',
        text: "select set_config('role', coalesce($1, current_user), true), set_config('request.jwt.claims', $2, true), set_config('application_name', $3, true)",
        values: [principal.role, claimsJson(principal), traced],
      };
}

/**
 * BEGIN READ ONLY, the role and claims (transaction-local) and the search_path when schemas are
 * named, in one round trip; then, with schemas named, the statement's plan checked against them.
 */
async function beginReadOnly(
  session: ToolSession,
  principal: Principal,
  options: AdHocSqlOptions,
): Promise<void> {
  const { client } = session;
  const literal = (value: string) => client.escapeLiteral(value);
  const traced = tracedApplicationName();
  await client.query(
    [
      'BEGIN READ ONLY',
      `select set_config('role', ${principal.role === null ? 'current_user' : literal(principal.role)}, true), set_config('request.jwt.claims', ${literal(claimsJson(principal))}, true)${options.schemas === null ? '' : `, set_config('search_path', ${literal(searchPath(options.schemas))}, true)`}${traced === undefined ? '' : `, set_config('application_name', ${literal(traced)}, true)`}`,
    ].join(';\n'),
  );
  await checkSchemas(session, options);
}

/**
 * Lend `work` a connection with the role's functions, then clean it up and return it to the pool.
 * A function found stale (its owner renamed or gone) is made again and `work` runs once more. The
 * caller's own errors become SqlStatementError; the connection's own failures the usual
 * ProtocolErrors.
 */
async function withToolConnection<T>(
  db: DatabaseHandle,
  principal: Principal,
  options: AdHocSqlOptions,
  work: (session: ToolSession) => Promise<T>,
): Promise<T> {
  const client = await connectClient(db);
  let broken: Error | undefined;
  let session: ToolSession | undefined;
  const watch = watchCancel(client, options.cancellation ?? { aborted: false });
  try {
    for (let retried = false; ; retried = true) {
      let functions;
      try {
        functions = await roleFunctions(client, principal.role);
      } catch (error) {
        // Its transaction may not have ended: the connection goes.
        broken = error instanceof Error ? error : new Error(String(error));
        throw error;
      }
      session = {
        client,
        functions,
        ended: false,
        prepared: false,
        prefixLength: 0,
      };
      try {
        return await work(session);
      } catch (error) {
        if (retried || !maybeStale(error, functions)) throw error;
        const failed = await cleanUp(session);
        session.ended = true;
        if (failed !== undefined) {
          broken = failed;
          throw error;
        }
        if (!(await functionsGone(client, functions, principal.role)))
          throw error;
        await forgetRoleFunctions(client, principal.role);
      }
    }
  } catch (error) {
    throw statementError(error, session?.prefixLength ?? 0);
  } finally {
    // A cancel still on its way could hit the clean-up or the next request: wait for it first.
    if ((await watch.stop()) === false)
      broken = new Error('a cancel request could not be delivered');
    else if (session?.tamperedWith !== undefined) broken = session.tamperedWith;
    else if (session !== undefined && !session.ended)
      broken ??= await cleanUp(session);
    client.release(broken);
  }
}

/** Forget this connection's functions for `role` (gone, or someone else's now), dropping what is left. */
async function forgetRoleFunctions(
  client: pg.PoolClient,
  role: string | null,
): Promise<void> {
  const state = roleFunctionsByConnection.get(client);
  if (state !== undefined)
    await dropRoleFunctions(client, state.byRole, role ?? '');
}

/**
 * End the caller's transaction and undo what outlives a ROLLBACK: session-level advisory locks the
 * statement took (pg_advisory_lock is allowed read-only), the explain statement prepared by name,
 * and prepared statements a failed pipeline may have half-made. An error says the connection
 * cannot be trusted and must not go back to the pool.
 */
async function cleanUp(session: ToolSession): Promise<Error | undefined> {
  const { client } = session;
  try {
    await client.query('ROLLBACK; select pg_advisory_unlock_all()');
    if (session.prepared)
      await client.query('DEALLOCATE pgmcp_tool_statement').catch((error) => {
        // 26000: the PREPARE itself failed.
        if ((error as { code?: string }).code !== '26000') throw error;
      });
    await session.halfParsed?.forgetPreparedStatements(client);
    const { rows } = await client.query<PreparedCounts>(PREPARED_COUNTS);
    return tampered(client, rows[0]);
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

/**
 * The connection's prepared statements: made with SQL PREPARE, and through the protocol. pgmcp
 * prepares none with SQL that outlives a call; a caller's function running dynamic SQL could
 * (PREPARE and DEALLOCATE are allowed read-only and outlive ROLLBACK), to replace a statement
 * pgmcp runs on this connection for the next request.
 */
const PREPARED_COUNTS = `select count(*) filter (where from_sql)::int as sql_prepared,
       count(*) filter (where not from_sql)::int as protocol
  from pg_prepared_statements`;

interface PreparedCounts {
  readonly sql_prepared: number;
  readonly protocol: number;
}

/** Why the connection cannot be trusted after a caller's statement, or undefined when it can. */
function tampered(
  client: pg.PoolClient,
  counts: PreparedCounts | undefined,
): Error | undefined {
  if (counts === undefined) return new Error('no prepared-statement count');
  if (counts.sql_prepared > 0)
    return new Error('a statement prepared with SQL outlived the call');
  if (counts.protocol !== Object.keys(parsedStatements(client)).length)
    return new Error("pgmcp's prepared statements changed during the call");
  return undefined;
}

/**
 * With schemas named, every relation the plan reads must be in one of them (EXPLAIN VERBOSE names
 * each scan's schema): PostgreSQL plans the statement, pgmcp only reads the plan.
 */
async function checkSchemas(
  session: ToolSession,
  options: AdHocSqlOptions,
): Promise<void> {
  if (options.schemas === null) return;
  const { client } = session;
  session.prefixLength = 'EXPLAIN (VERBOSE, FORMAT JSON) '.length;
  const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
    single(`EXPLAIN (VERBOSE, FORMAT JSON) ${options.sql}`, options.params),
  );
  const outside = [...planSchemas(rows[0]?.['QUERY PLAN'])].filter(
    (schema) => !(options.schemas ?? []).includes(schema),
  );
  if (outside.length > 0)
    throw new SqlStatementError(
      '42501',
      `this server lets query and explain read only the schemas ${(options.schemas ?? []).join(', ')}; the statement reads ${outside.join(', ')}`,
      undefined,
    );
}

/** Every "Schema" a JSON plan names, anywhere in it. */
function planSchemas(plan: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(plan)) for (const item of plan) planSchemas(item, found);
  else if (typeof plan === 'object' && plan !== null)
    for (const [key, value] of Object.entries(plan)) {
      if (key === 'Schema' && typeof value === 'string') found.add(value);
      else planSchemas(value, found);
    }
  return found;
}

/** format_type of (type oid, modifier) pairs seen so far: a handful in practice, so bounded loosely. */
const typeNames = new Map<string, string>();

/**
 * A statement sent through the extended protocol even without parameters (pg would send a
 * parameterless one as a simple query, which runs several statements): PostgreSQL then refuses a
 * second statement. @types/pg does not declare `queryMode`; pg reads it.
 */
function single(text: string, values: readonly unknown[]): pg.QueryConfig {
  return { text, values: [...values], queryMode: 'extended' } as pg.QueryConfig;
}

/** The PostgreSQL type name of each result column. */
async function columnTypes(
  client: pg.PoolClient,
  fields: readonly ImplicitField[],
): Promise<SqlColumn[]> {
  const key = (field: ImplicitField) =>
    `${field.dataTypeID}:${field.dataTypeModifier}`;
  if (fields.every((field) => typeNames.has(key(field))))
    return fields.map((field) => ({
      name: field.name,
      type: typeNames.get(key(field)) ?? 'unknown',
    }));
  const { rows } = await client.query<{ type: string }>(
    'select format_type(t.oid, t.mod) as type from unnest($1::oid[], $2::int[]) with ordinality as t(oid, mod, n) order by n',
    [
      fields.map((field) => field.dataTypeID),
      fields.map((field) => field.dataTypeModifier),
    ],
  );
  return fields.map((field, index) => {
    const type = rows[index]?.type ?? 'unknown';
    if (typeNames.size < 1000) typeNames.set(key(field), type);
    return { name: field.name, type };
  });
}

function searchPath(schemas: readonly string[]): string {
  return schemas.map((schema) => `"${schema.replace(/"/g, '""')}"`).join(', ');
}

/** The caller's statement failed in PostgreSQL: its SQLSTATE and message, positions made its own. */
function statementError(error: unknown, prefixLength: number): Error {
  if (error instanceof SqlStatementError || error instanceof ProtocolError)
    return error;
  const { code, message, position } = (error ?? {}) as {
    code?: unknown;
    message?: unknown;
    position?: unknown;
  };
  // Connection classes and the pool's own failures are the server's, not the statement's.
  if (
    typeof code !== 'string' ||
    !/^[0-9A-Z]{5}$/.test(code) ||
    code.startsWith('08') ||
    code.startsWith('57P') ||
    code === '53300'
  )
    return toDatabaseError(error);
  const at = Number(position);
  return new SqlStatementError(
    code,
    typeof message === 'string' ? message : 'error',
    Number.isFinite(at) && at > prefixLength ? at - prefixLength : undefined,
  );
}
