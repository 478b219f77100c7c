// The query tool's fetch: the caller's statement as a cursor, its rows read through the role's
// fetch function with a byte cap, in one round trip when the handle drives the driver internals.
import type pg from 'pg';
import type { Principal } from '../../auth/index.js';
import {
  ImplicitTransaction,
  type ImplicitField,
  type ImplicitStatement,
} from '../driver/index.js';
import { type DatabaseHandle } from '../pool.js';
import { jsonMemberValues } from './json-members.js';
import {
  type SqlColumn,
  type SqlRows,
  type FetchOptions,
  type ToolSession,
  type RequestSettings,
} from './tool-session.js';
import {
  withToolConnection,
  answeredBy,
  PREPARED_COUNTS,
  type PreparedCounts,
  tampered,
  single,
} from './tool-connection.js';
import {
  SETTINGS_NOW,
  checkSettings,
  verifySettings,
  beginReadOnly,
  refuseCost,
  checkCost,
} from './settings.js';
import { identityStep } from './identity.js';

const CURSOR = 'DECLARE pgmcp_tool_query NO SCROLL CURSOR FOR ';
/** The prefix's length: PostgreSQL's error positions are reported relative to the caller's text. */

const CURSOR_LENGTH = CURSOR.length;

/** Run the caller's statement (see the file comment) and read at most `maxRows` rows. */
export async function runReadOnlySql(
  db: DatabaseHandle,
  principal: Principal,
  options: FetchOptions,
): Promise<SqlRows> {
  return withToolConnection({ db, principal, options }, async (session) => {
    if (db.driverInternals && options.schemas === null)
      return answeredBy(
        session,
        await fetchInOneRoundTrip(session, principal, options),
      );
    const { client, functions } = session;
    const plan = await beginReadOnly(session, principal, options);
    session.prefixLength = CURSOR_LENGTH;
    await client.query(single(CURSOR + options.sql, [...options.params]));
    // Declared (planned, not run): now the cost ceiling, before a row is computed.
    await checkCost(session, options, { plan, prefix: EXPLAIN_CURSOR });
    // Zero rows: the columns' names and types, without running the statement.
    const described = await client.query(
      'FETCH FORWARD 0 FROM pgmcp_tool_query',
    );
    const fetched = await client.query<{ row: string | null }>(
      `select ${functions.fetch}($1, $2) as row`,
      [options.maxRows + 1, options.maxBytes],
    );
    await verifySettings(session);
    return answeredBy(
      session,
      await rowsOf(client, {
        fields: described.fields,
        fetched: fetched.rows.map((entry) => entry.row),
        maxRows: options.maxRows,
      }),
    );
  });
}

const EXPLAIN_CURSOR = `EXPLAIN (FORMAT JSON) ${CURSOR}`;

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
 * The whole call in one round trip (db/driver/implicit-transaction.ts): BEGIN READ ONLY, the role and
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
  return rowsOf(client, {
    fields: fields[at] ?? [],
    fetched: fetched.map((entry) => entry.row),
    maxRows: options.maxRows,
  });
}

/** Send `statements` as one pipeline (db/driver/implicit-transaction.ts) on the session's connection. */
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
  {
    fields,
    fetched,
    maxRows,
  }: {
    readonly fields: readonly ImplicitField[];
    readonly fetched: readonly (string | null)[];
    readonly maxRows: number;
  },
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

/** format_type of (type oid, modifier) pairs seen so far: a handful in practice, so bounded loosely. */
const typeNames = new Map<string, string>();

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
