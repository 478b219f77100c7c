// The query and explain tools' SQL (issue 15 points 3, 4): a caller's own statement, run as its role
// and made read-only by PostgreSQL itself, never by parsing it here.
//
// The statement is the tail of `DECLARE … CURSOR FOR`, sent through the extended protocol with its
// parameters: PostgreSQL then accepts exactly one SELECT, VALUES, TABLE or WITH … SELECT (anything
// else, SET ROLE, RESET, DO, CALL, COPY, LISTEN, INSERT, DDL, is a syntax error, and a second
// statement is refused by the protocol), in a READ ONLY transaction (writes, FOR UPDATE and writing
// functions fail with 25006), under the session's statement timeout, with the role set
// transaction-locally. Rows are FETCHed max+1 at most, so a huge result is never computed past the
// cap, and the FETCH stops at a byte budget, so PostgreSQL never sends much more than it (issue 32
// point 5; db/statement-limits.ts has the call's other bounds: deadline, temp files, cost). The FETCH runs inside a SECURITY DEFINER function owned by the request role itself: the
// statement keeps exactly the role's privileges, and PostgreSQL refuses set_config('role', …) inside
// it ("cannot set parameter role within security-definer function"), so a statement cannot switch
// to another role the login may assume. The transaction always ends in ROLLBACK, which undoes any
// setting the statement made.
//
// Each pooled connection makes a role's functions once, as temporary functions (pg_temp) owned by
// the role, and keeps them until the connection closes: making them per call cost more than the
// rest of the call. A function checks that its owner still has the name it was made for (a renamed
// role's functions are never used for a new role of the old name), and that the request calling it
// runs as that role: another role's statement on the same connection cannot run it. The check is
// in the body, not a REVOKE: GRANT and REVOKE name no object to an event trigger, so pgmcp's
// schema-change capture would log each as a catalog change that every listener hears of (issue 32
// point 7). Making them runs no other DDL, and the capture ignores objects in pg_temp.
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
import { toDatabaseError } from './connection/sqlstate.js';
import {
  costRefusal,
  limitSettings,
  remainingMs,
  type StatementLimits,
} from './statement-limits.js';

/** A column of a result: its name and PostgreSQL type (format_type). */
export interface SqlColumn {
  readonly name: string;
  readonly type: string;
}

/** A statement's outcome: each row's values as text as JSON renders them (null for NULL). */
export interface SqlRows {
  readonly columns: readonly SqlColumn[];
  readonly rows: readonly (readonly (string | null)[])[];
  /** More rows existed than `maxRows`, or their text passed `maxBytes`. */
  readonly truncated: boolean;
  /** Which bound cut the rows, when they were cut. */
  readonly truncatedBy?: 'max_rows' | 'max_bytes';
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

export interface AdHocSqlOptions extends StatementLimits {
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
 * to run when their owner is no longer named `owner`, and when the transaction calling them does
 * not run as `owner` (the role setting, which a security-definer function leaves as the caller
 * set it and cannot change, names the request's role).
 */
function roleFunctionsSql(names: RoleFunctions, owner: string): string {
  const guard = (name: string) =>
    `if current_user <> ${owner} then raise exception 'pgmcp: this function''s owner was renamed' using errcode = '${STALE_FUNCTION}'; end if;
  if current_setting('role') <> ${owner} then raise exception 'permission denied for function ${name.replace('pg_temp.', '')}' using errcode = '42501'; end if;`;
  return `create function ${names.fetch}(n integer, budget integer) returns setof text
language plpgsql security definer as $f$
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
end $f$;
create function ${names.explain}(parameters text[]) returns json
language plpgsql security definer as $f$
declare plan json;
begin
  ${guard(names.explain)}
  -- The parameters become quoted literals here: nothing the caller passes is read as SQL.
  execute 'EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE pgmcp_tool_statement' || coalesce(
    '(' || (select string_agg(quote_nullable(value), ', ' order by n)
              from unnest(parameters) with ordinality as p(value, n)) || ')', '') into plan;
  return plan;
end $f$`;
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
    [`${names.fetch}(integer, integer)`, role],
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
  options: FetchOptions,
): Promise<SqlRows> {
  return withToolConnection(db, principal, options, async (session) => {
    if (PIPELINE && options.schemas === null)
      return fetchInOneRoundTrip(session, principal, options);
    const { client, functions } = session;
    const plan = await beginReadOnly(session, principal, options);
    session.prefixLength = CURSOR_LENGTH;
    await client.query(single(CURSOR + options.sql, [...options.params]));
    // Declared (planned, not run): now the cost ceiling, before a row is computed.
    await checkCost(session, options, plan, EXPLAIN_CURSOR);
    // Zero rows: the columns' names and types, without running the statement.
    const described = await client.query(
      'FETCH FORWARD 0 FROM pgmcp_tool_query',
    );
    const fetched = await client.query<{ row: string | null }>(
      `select ${functions.fetch}($1, $2) as row`,
      [options.maxRows + 1, options.maxBytes],
    );
    await verifySettings(session);
    return rowsOf(
      client,
      described.fields,
      fetched.rows.map((entry) => entry.row),
      options.maxRows,
    );
  });
}

const EXPLAIN_CURSOR = `EXPLAIN (FORMAT JSON) ${CURSOR}`;

/** What a query call reads at most: rows, and bytes of their JSON text. */
type FetchOptions = AdHocSqlOptions & {
  readonly maxRows: number;
  readonly maxBytes: number;
};

/**
 * The cost ceiling needs the plan before a row is computed: the cursor is declared (which plans,
 * never runs it) and planned once more by EXPLAIN, in a round trip of its own; the transaction
 * stays open for the rest. Returns the identity statement's row.
 */
async function declareWithinCost(
  session: ToolSession,
  head: ImplicitStatement[],
  options: FetchOptions,
): Promise<RequestSettings | undefined> {
  const planned = await pipelined(session, [
    ...head,
    {
      name: '',
      text: EXPLAIN_CURSOR + options.sql,
      values: [...options.params],
    },
  ]);
  const plan = (planned.results[head.length] ?? [])[0] as
    { 'QUERY PLAN'?: unknown } | undefined;
  refuseCost(plan?.['QUERY PLAN'], options);
  return (planned.results[1] ?? [])[0] as RequestSettings | undefined;
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
  options: FetchOptions,
): Promise<SqlRows> {
  const { client, functions } = session;
  let head: ImplicitStatement[] = [
    { name: 'pgmcp_tool_begin', text: 'BEGIN READ ONLY', values: [] },
    identityStep(principal, options),
    // From the caller's statement on, everything is the unnamed statement, parsed as it is sent:
    // the caller's code (planning the cursor, fetching it) could replace a named statement with SQL
    // PREPARE before the Bind that runs it, but never the unnamed one.
    { name: '', text: CURSOR + options.sql, values: [...options.params] },
  ];
  session.prefixLength = CURSOR_LENGTH;
  // The identity statement's row: what pgmcp set, compared with the settings after the fetch.
  let identity: RequestSettings | undefined;
  if ((options.maxCost ?? 0) > 0) {
    identity = await declareWithinCost(session, head, options);
    head = [];
  }
  const at = head.length;
  const { results, fields } = await pipelined(session, [
    ...head,
    { name: '', text: 'FETCH FORWARD 0 FROM pgmcp_tool_query', values: [] },
    {
      name: '',
      text: `select ${functions.fetch}($1, $2) as row`,
      values: [options.maxRows + 1, options.maxBytes],
    },
    { name: '', text: SETTINGS_NOW, values: [] },
    { name: '', text: 'ROLLBACK', values: [] },
    {
      name: '',
      text: `select pg_advisory_unlock_all(), c.* from (${PREPARED_COUNTS}) c`,
      values: [],
    },
  ]);
  session.ended = true;
  // Counted after this pipeline's own statements were parsed, which pg's table now records.
  session.tamperedWith = tampered(
    client,
    (results[at + 4] ?? [])[0] as PreparedCounts | undefined,
  );
  if (at > 0) identity = (results[1] ?? [])[0] as RequestSettings | undefined;
  checkSettings(
    identity,
    (results[at + 2] ?? [])[0] as RequestSettings | undefined,
  );
  const fetched = (results[at + 1] ?? []) as { row: string | null }[];
  return rowsOf(
    client,
    fields[at] ?? [],
    fetched.map((entry) => entry.row),
    options.maxRows,
  );
}

/**
 * BEGIN's companion in the pipeline: the role and claims, and the call's bounds (db/
 * statement-limits.ts). Named per shape: with or without temp_file_limit, which only the login
 * may set and so comes before the role.
 */
function identityStep(
  principal: Principal,
  options: AdHocSqlOptions,
): ImplicitStatement {
  const limited = (options.tempFileLimitKb ?? 0) > 0;
  const values = [
    principal.role,
    claimsJson(principal),
    // No deadline: the session's own timeout stays (0 would switch it off).
    leftOrRefuse(options)?.toString() ?? null,
  ];
  // Named columns: checkSettings compares the role and claims set here with those after the fetch.
  const identity =
    "set_config('role', coalesce($1, current_user), true) as role, set_config('request.jwt.claims', $2, true) as claims, set_config('statement_timeout', coalesce($3, current_setting('statement_timeout')), true) as statement_timeout";
  const traced = tracedApplicationName();
  // Each variant is its own prepared statement: untraced calls run exactly the plain one.
  const { name } =
    TOOL_IDENTITY[
      `${limited ? 'limited' : 'plain'}${traced === undefined ? '' : 'Traced'}`
    ];
  const parts = [
    ...(limited
      ? [
          `set_config('temp_file_limit', $${values.push(String(options.tempFileLimitKb))} || 'kB', true)`,
        ]
      : []),
    identity,
    ...(traced === undefined
      ? []
      : [`set_config('application_name', $${values.push(traced)}, true)`]),
  ];
  return { name, text: `select ${parts.join(', ')}`, values };
}

/** The identity statement's prepared names, one per shape (docs/statements.md lists them). */
const TOOL_IDENTITY = {
  plain: { name: 'pgmcp_tool_identity' },
  limited: { name: 'pgmcp_tool_identity_limited' },
  plainTraced: { name: 'pgmcp_tool_identity_traced' },
  limitedTraced: { name: 'pgmcp_tool_identity_limited_traced' },
} as const;

/** Send `statements` as one pipeline (db/implicit-transaction.ts) on the session's connection. */
async function pipelined(
  session: ToolSession,
  statements: ImplicitStatement[],
): Promise<{
  results: unknown[][];
  fields: (readonly ImplicitField[] | undefined)[];
}> {
  const transaction = new ImplicitTransaction(statements);
  void session.client.query(transaction as unknown as pg.Submittable);
  try {
    const results = (await transaction.result) as unknown[][];
    return { results, fields: transaction.fields };
  } catch (error) {
    if (transaction.unsafeToReuse) session.halfParsed = transaction;
    throw error;
  }
}

/**
 * The FETCHed rows (max+1 at most) as a result: each row's JSON object split into its values, as
 * many as the cursor has columns.
 */
async function rowsOf(
  client: pg.PoolClient,
  fields: readonly ImplicitField[],
  fetched: readonly (string | null)[],
  maxRows: number,
): Promise<SqlRows> {
  // A NULL after the rows: the fetch function stopped at the byte budget.
  const stop = fetched.indexOf(null);
  const sent = (stop === -1 ? fetched : fetched.slice(0, stop)) as string[];
  const rows = sent.map((json) => {
    const values = jsonMemberValues(json);
    if (values.length !== fields.length)
      throw new Error(
        `a fetched row has ${values.length} values for ${fields.length} columns`,
      );
    return values;
  });
  const truncatedBy =
    rows.length > maxRows ? 'max_rows' : stop === -1 ? undefined : 'max_bytes';
  return {
    columns: await columnTypes(client, fields),
    rows: rows.slice(0, maxRows),
    truncated: truncatedBy !== undefined,
    ...(truncatedBy === undefined ? {} : { truncatedBy }),
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
    const schemaPlan = await beginReadOnly(session, principal, options);
    if (options.analyze)
      await checkCost(session, options, schemaPlan, 'EXPLAIN (FORMAT JSON) ');
    session.prefixLength = 'EXPLAIN (FORMAT TEXT) '.length;
    const text = await client.query<{ 'QUERY PLAN': string }>(
      single(`EXPLAIN (FORMAT TEXT) ${options.sql}`, [...options.params]),
    );
    // Planning may evaluate functions (constant folding): the settings must still be pgmcp's.
    await verifySettings(session);
    const plan = options.analyze
      ? await explainAnalyzed(session, options)
      : await explainJson(session, options);
    await verifySettings(session);
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
  /** The per-request settings as pgmcp set them (beginReadOnly). */
  settings?: RequestSettings;
}

/** The settings pgmcp sets per request, as set_config returned them (search_path when set). */
interface RequestSettings {
  readonly role: string;
  readonly claims: string | null;
  readonly search_path?: string | null;
  /** current_user (SETTINGS_NOW only). */
  readonly user?: string;
}

/** The per-request settings now, and current_user: compared with what pgmcp set (checkSettings). */
const SETTINGS_NOW = `select current_setting('role') as role, current_user::text as user,
       current_setting('request.jwt.claims', true) as claims,
       current_setting('search_path') as search_path`;

/**
 * Belt and braces behind the statement guard (tools/sql-guard, issue 32 point 1): after the
 * caller's statement ran or was planned, the role, current_user, the claims and (when pgmcp set it)
 * the search path must still be what pgmcp set, else its output is discarded and the call refused.
 */
function checkSettings(
  set: RequestSettings | undefined,
  now: RequestSettings | undefined,
): void {
  const changed =
    set === undefined || now === undefined
      ? ['the settings']
      : [
          ...(now.role === set.role && now.user === set.role ? [] : ['role']),
          ...(now.claims === set.claims ? [] : ['request.jwt.claims']),
          ...(set.search_path === undefined ||
          now.search_path === set.search_path
            ? []
            : ['search_path']),
        ];
  if (changed.length > 0)
    throw new SqlStatementError(
      '42501',
      `pgmcp refuses this statement: it changed ${changed.join(', ')}, which pgmcp sets per request; its output was discarded`,
      undefined,
    );
}

/** checkSettings on the session's connection (the paths that are not one round trip). */
async function verifySettings(session: ToolSession): Promise<void> {
  const { rows } = await session.client.query<RequestSettings>(SETTINGS_NOW);
  checkSettings(session.settings, rows[0]);
}

/**
 * BEGIN READ ONLY, the role and claims (transaction-local) and the search_path when schemas are
 * named, in one round trip; then, with schemas named, the statement's plan checked against them.
 */
async function beginReadOnly(
  session: ToolSession,
  principal: Principal,
  options: AdHocSqlOptions,
): Promise<unknown> {
  const { client } = session;
  const literal = (value: string) => client.escapeLiteral(value);
  const bounds = limitSettings(options, leftOrRefuse(options));
  const traced = tracedApplicationName();
  const results = (await client.query(
    [
      'BEGIN READ ONLY',
      `select ${[
        ...bounds.beforeRole,
        `set_config('role', ${principal.role === null ? 'current_user' : literal(principal.role)}, true) as role`,
        `set_config('request.jwt.claims', ${literal(claimsJson(principal))}, true) as claims`,
        ...bounds.afterRole,
        ...(options.schemas === null
          ? []
          : [
              `set_config('search_path', ${literal(searchPath(options.schemas))}, true) as search_path`,
            ]),
        ...(traced === undefined
          ? []
          : [`set_config('application_name', ${literal(traced)}, true)`]),
      ].join(', ')}`,
    ].join(';\n'),
  )) as unknown as pg.QueryResult<RequestSettings>[];
  session.settings = results[1]?.rows[0];
  return checkSchemas(session, options);
}

/** The time left before the call's deadline; past it, the call ends as a timed-out statement. */
function leftOrRefuse(options: AdHocSqlOptions): number | undefined {
  const left = remainingMs(options);
  if (left === 0)
    throw new SqlStatementError(
      '57014',
      'canceling statement due to statement timeout (the call used up its time before this step)',
      undefined,
    );
  return left;
}

/** Refuse, before it runs, a statement whose plan costs more than the ceiling. */
function refuseCost(plan: unknown, options: AdHocSqlOptions): void {
  const refusal = costRefusal(plan, options);
  if (refusal !== undefined)
    throw new SqlStatementError('54000', refusal, undefined);
}

/**
 * The cost ceiling for the statement, on `plan` when one was made anyway, else on a new EXPLAIN
 * of the statement after `prefix` (an EXPLAIN (FORMAT JSON) …).
 */
async function checkCost(
  session: ToolSession,
  options: AdHocSqlOptions,
  plan: unknown,
  prefix: string,
): Promise<void> {
  if ((options.maxCost ?? 0) <= 0) return;
  if (plan === undefined) {
    session.prefixLength = prefix.length;
    const { rows } = await session.client.query<{ 'QUERY PLAN': unknown }>(
      single(prefix + options.sql, [...options.params]),
    );
    plan = rows[0]?.['QUERY PLAN'];
  }
  refuseCost(plan, options);
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
  refuseNul(options);
  const client = await connectClient(db);
  let broken: Error | undefined;
  let session: ToolSession | undefined;
  const watch = watchCancel(client, callSignal(options));
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

/**
 * PostgreSQL reads a statement's text (and a text parameter) up to its first NUL: the text before
 * it would run, not what the caller sent, and the audit could not store it. Refused before any
 * connection is taken (issue 32 point 3).
 */
function refuseNul(options: AdHocSqlOptions): void {
  const where = options.sql.includes('\0')
    ? 'the statement'
    : options.params.some((value) => value?.includes('\0') === true)
      ? 'a parameter'
      : undefined;
  if (where !== undefined)
    throw new SqlStatementError(
      '22021',
      `${where} contains a NUL character (U+0000), which PostgreSQL cannot take; nothing was run`,
      undefined,
    );
}

/**
 * The request's cancellation, and past the call's deadline a cancel of whatever still runs: each
 * transaction's statement_timeout is what was left when it began, so several statements in one
 * transaction could otherwise add up past the deadline. PostgreSQL's own timeout normally fires
 * first; this one is the backstop.
 */
function callSignal(
  options: AdHocSqlOptions,
): Cancellation | { readonly aborted: boolean } {
  const cancellation = options.cancellation ?? { aborted: false };
  const left = remainingMs(options);
  if (left === undefined) return cancellation;
  const request: AbortSignal | undefined =
    cancellation instanceof AbortSignal
      ? cancellation
      : (cancellation as { readonly signal?: AbortSignal }).signal;
  const deadline = AbortSignal.timeout(left + DEADLINE_GRACE_MS);
  return request === undefined
    ? deadline
    : AbortSignal.any([request, deadline]);
}

/** How long after the deadline the backstop cancel comes: PostgreSQL's timeout is first. */
const DEADLINE_GRACE_MS = 100;

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
): Promise<unknown> {
  if (options.schemas === null) return undefined;
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
  return rows[0]?.['QUERY PLAN'];
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
  const { code, message, position, severity } = (error ?? {}) as {
    code?: unknown;
    message?: unknown;
    position?: unknown;
    severity?: unknown;
  };
  // Connection classes and the pool's own failures are the server's, not the statement's. One
  // exception: 08P01 at severity ERROR is PostgreSQL refusing the caller's Bind (a parameter count
  // that does not match the statement, issue 32 point 6); the session goes on, so it is the
  // caller's mistake. A protocol violation that ends the session comes as FATAL.
  const callersBind = code === '08P01' && severity === 'ERROR';
  if (
    typeof code !== 'string' ||
    !/^[0-9A-Z]{5}$/.test(code) ||
    (code.startsWith('08') && !callersBind) ||
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
