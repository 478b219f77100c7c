// The query and explain tools' SQL (issue 15 points 3, 4): a caller's own statement, run as its role
// and made read-only by PostgreSQL itself, never by parsing it here.
//
// The statement is the tail of `DECLARE … CURSOR FOR`, sent through the extended protocol with its
// parameters: PostgreSQL then accepts exactly one SELECT, VALUES, TABLE or WITH … SELECT (anything
// else, SET ROLE, RESET, DO, CALL, COPY, LISTEN, INSERT, DDL, is a syntax error, and a second
// statement is refused by the protocol), in a READ ONLY transaction (writes, FOR UPDATE and writing
// functions fail with 25006), under the session's statement timeout, with the role set
// transaction-locally. Rows are FETCHed max+1 at most, so a huge result is never computed past the
// cap. The FETCH runs inside a SECURITY DEFINER function owned by the request role itself (a temp
// function, made in the transaction before it turns read-only): the statement keeps exactly the
// role's privileges, and PostgreSQL refuses set_config('role', …) inside it ("cannot set parameter
// role within security-definer function"), so a statement cannot switch to another role the login
// may assume. The transaction always ends in ROLLBACK, which drops the function and undoes any
// setting the statement made.
import type pg from 'pg';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import { connectClient, type DatabaseHandle } from './pool.js';
import { watchCancel, type Cancellation } from './request-transaction.js';
import { toDatabaseError } from './sqlstate.js';

/** A column of a result: its name and PostgreSQL type (format_type). */
export interface SqlColumn {
  readonly name: string;
  readonly type: string;
}

/** A statement's outcome: rows as PostgreSQL's text output (null for NULL). */
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

/**
 * Rows of the cursor as text arrays (json_each_text keeps order and repeated names), FETCHed while
 * a security-definer function owned by the request role is running (see the file comment).
 */
const FETCH_FUNCTION = `create function pg_temp.pgmcp_tool_fetch(n integer) returns setof text[]
language plpgsql security definer as $f$
declare c refcursor := 'pgmcp_tool_query'; r record;
begin
  for i in 1..n loop
    fetch c into r;
    exit when not found;
    return next (select array_agg(value) from json_each_text(row_to_json(r)));
  end loop;
end $f$;
create function pg_temp.pgmcp_tool_explain(arguments text) returns json
language plpgsql security definer as $f$
declare plan json;
begin
  execute 'EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE pgmcp_tool_statement' || arguments into plan;
  return plan;
end $f$`;
const CURSOR = 'DECLARE pgmcp_tool_query NO SCROLL CURSOR FOR ';
/** The prefix's length: PostgreSQL's error positions are reported relative to the caller's text. */
const CURSOR_LENGTH = CURSOR.length;

/** Run the caller's statement (see the file comment) and read at most `maxRows` rows. */
export async function runReadOnlySql(
  db: DatabaseHandle,
  principal: Principal,
  options: AdHocSqlOptions & { readonly maxRows: number },
): Promise<SqlRows> {
  return inRequestTransaction(db, principal, options, async (client) => {
    await checkSchemas(client, options);
    await client.query(single(CURSOR + options.sql, [...options.params]));
    // Zero rows: the columns' names and types, without running the statement.
    const described = await client.query(
      'FETCH FORWARD 0 FROM pgmcp_tool_query',
    );
    const fetched = await client.query<{ row: (string | null)[] | null }>(
      'select pg_temp.pgmcp_tool_fetch($1) as row',
      [options.maxRows + 1],
    );
    // A row of no columns comes back as NULL (array_agg of nothing).
    const rows = fetched.rows.map((entry) => entry.row ?? []);
    return {
      columns: await columnTypes(client, described.fields),
      rows: rows.slice(0, options.maxRows),
      truncated: rows.length > options.maxRows,
    };
  });
}

/** The plan of the caller's statement as JSON (EXPLAIN FORMAT JSON), executed only with `analyze`. */
export async function explainSql(
  db: DatabaseHandle,
  principal: Principal,
  options: AdHocSqlOptions & { readonly analyze: boolean },
): Promise<{ plan: unknown; text: string }> {
  return inRequestTransaction(db, principal, options, async (client) => {
    await checkSchemas(client, options);
    const text = await client.query<{ 'QUERY PLAN': string }>(
      single(`EXPLAIN (FORMAT TEXT) ${options.sql}`, [...options.params]),
    );
    const plan = options.analyze
      ? await explainAnalyzed(client, options)
      : (
          await client.query<{ 'QUERY PLAN': unknown }>(
            single(`EXPLAIN (FORMAT JSON) ${options.sql}`, [...options.params]),
          )
        ).rows[0]?.['QUERY PLAN'];
    return {
      plan,
      text: text.rows.map((row) => row['QUERY PLAN']).join('\n'),
    };
  });
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
  return inRequestTransaction(db, principal, options, async (client) => {
    await checkSchemas(client, options);
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
 * which PostgreSQL converts to the types it inferred; the prepared statement is always dropped.
 */
async function explainAnalyzed(
  client: pg.PoolClient,
  options: AdHocSqlOptions,
): Promise<unknown> {
  await client.query(
    single(`PREPARE pgmcp_tool_statement AS ${options.sql}`, []),
  );
  try {
    const literals = options.params.map((value) =>
      value === null ? 'NULL' : client.escapeLiteral(value),
    );
    const { rows } = await client.query<{ plan: unknown }>(
      'select pg_temp.pgmcp_tool_explain($1) as plan',
      [literals.length === 0 ? '' : `(${literals.join(', ')})`],
    );
    return rows[0]?.plan;
  } finally {
    await client
      .query('DEALLOCATE pgmcp_tool_statement')
      .catch(() => undefined);
  }
}

/**
 * One round trip sets up the transaction: BEGIN, the role and claims (transaction-local), the
 * search_path when schemas are named, the fetch function (made as the role, so owned by it), then
 * READ ONLY for the rest. `work` runs, then ROLLBACK whatever happened. The caller's own errors
 * become SqlStatementError; the connection's own failures the usual ProtocolErrors.
 */
async function inRequestTransaction<T>(
  db: DatabaseHandle,
  principal: Principal,
  options: AdHocSqlOptions,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await connectClient(db);
  let broken: Error | undefined;
  const watch = watchCancel(client, options.cancellation ?? { aborted: false });
  try {
    const literal = (value: string) => client.escapeLiteral(value);
    await client.query(
      [
        'BEGIN READ WRITE',
        `select set_config('role', ${principal.role === null ? 'current_user' : literal(principal.role)}, true), set_config('request.jwt.claims', ${literal(JSON.stringify(principal.claims))}, true)${options.schemas === null ? '' : `, set_config('search_path', ${literal(searchPath(options.schemas))}, true)`}`,
        FETCH_FUNCTION,
        'SET TRANSACTION READ ONLY',
      ].join(';\n'),
    );
    return await work(client);
  } catch (error) {
    throw statementError(error);
  } finally {
    // A cancel still on its way could hit the clean-up or the next request: wait for it first.
    broken =
      (await watch.stop()) === false
        ? new Error('a cancel request could not be delivered')
        : await cleanUp(client);
    client.release(broken);
  }
}

/**
 * End the caller's transaction and undo what outlives a ROLLBACK: session-level advisory locks the
 * statement took (pg_advisory_lock is allowed read-only) and the explain statement prepared by
 * name. An error says the connection cannot be trusted and must not go back to the pool.
 */
async function cleanUp(client: pg.PoolClient): Promise<Error | undefined> {
  try {
    await client.query('ROLLBACK');
    await client.query('select pg_advisory_unlock_all()');
    await client.query('DEALLOCATE pgmcp_tool_statement').catch((error) => {
      // 26000: nothing was prepared (the usual case).
      if ((error as { code?: string }).code !== '26000') throw error;
    });
    return undefined;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

/**
 * With schemas named, every relation the plan reads must be in one of them (EXPLAIN VERBOSE names
 * each scan's schema): PostgreSQL plans the statement, pgmcp only reads the plan.
 */
async function checkSchemas(
  client: pg.PoolClient,
  options: AdHocSqlOptions,
): Promise<void> {
  if (options.schemas === null) return;
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
  fields: readonly pg.FieldDef[],
): Promise<SqlColumn[]> {
  const key = (field: pg.FieldDef) =>
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
function statementError(error: unknown): Error {
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
    Number.isFinite(at) && at > CURSOR_LENGTH ? at - CURSOR_LENGTH : undefined,
  );
}
