// The request transaction: the only way request handlers touch Postgres (STYLE §2).
import type pg from 'pg';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import type { LeadingStatement } from '../leading-statement.js';
import {
  traceStep,
  tracedApplicationName,
  tracingEnabled,
} from '../observability/index.js';
import {
  cancelBackend,
  ImplicitTransaction,
  type ImplicitStatement,
  type RequestPipelines,
} from './driver/index.js';
import { connectClient, type DatabaseHandle } from './pool.js';
import type { PreparedQuery } from './connection/prepared.js';
import { toDatabaseError } from './connection/sqlstate.js';
import { onReadServer } from './standby/read-server.js';

const SET_IDENTITY = {
  name: 'pgmcp_set_identity',
  text: "select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)",
} as const;

/**
 * Issue 35: a traced request's identity statement also names its trace in application_name,
 * transaction-local, so pg_stat_activity and log_line_prefix's %a show it while the transaction
 * runs. Untraced requests keep SET_IDENTITY: their statement text and cost do not change.
 */
const SET_TRACED_IDENTITY = {
  name: 'pgmcp_set_identity_traced',
  text: "select set_config('role', $1, true), set_config('request.jwt.claims', $2, true), set_config('application_name', $3, true)",
} as const;

/**
 * How a request says it was cancelled: an AbortSignal, or a request context whose `aborted` is read
 * without making a signal and whose `signal` (when it has one) is listened to while a statement
 * runs. A context may also hear of each statement it ran (`statementRan`: name, time, rows; never
 * the values).
 */
export type Cancellation =
  | AbortSignal
  | {
      readonly aborted: boolean;
      readonly signal?: AbortSignal;
      statementRan?(name: string, ms: number, rows: number): void;
      /**
       * A statement to run first in this request's transaction (LeadingStatement); once, and only
       * in a transaction on the database it names.
       */
      takeLeadingStatement?(db: DatabaseHandle): LeadingStatement | undefined;
    };

/**
 * Run one prepared query as `principal`, in one read-only transaction and one round trip.
 *
 * Without a role the statement runs alone: the pool's sessions default to read-only, so it is its
 * own read-only transaction. With a role, the identity statement (set_config('role', …, true) and
 * the claims, transaction-local, never session-level on a pooled connection) and the query go out
 * together before one Sync: PostgreSQL runs them as one implicit read-only transaction, and the
 * role ends with it. Driver errors become ProtocolErrors through the SQLSTATE table. An already
 * cancelled request (`cancellation`: a signal, or a request context, which answers without making one)
 * is refused before taking a connection; one cancelled while its statement runs stops that
 * statement at once (PostgreSQL's cancel on the backend) and the connection goes back clean.
 */
export function runRequestQuery<TArgs, TRow>(
  call: RequestCall,
  query: PreparedQuery<TArgs, TRow>,
  args: TArgs,
): Promise<TRow[]> {
  const statement: RequestStatement = {
    name: query.name,
    text: query.text,
    values: query.values(args),
    textOutput: query.textOutput,
    onPrimary: query.onPrimary,
  };
  // Issue 35: a child span of the request's when traces are exported; a plain call otherwise.
  if (!tracingEnabled())
    return runQuery<TRow>(call, statement, query.pipelined === true);
  return traceStep(
    'db transaction',
    { 'db.system.name': 'postgresql', 'db.query.summary': query.name },
    () => runQuery<TRow>(call, statement, query.pipelined === true),
  );
}

/** Who runs a request's statement, on which database, and how the request says it was cancelled. */
export interface RequestCall {
  readonly db: DatabaseHandle;
  readonly principal: Principal;
  readonly cancellation: Cancellation | { readonly aborted: boolean };
}

/** The statement of a request, its values bound. */
interface RequestStatement {
  readonly name: string;
  readonly text: string;
  readonly values: unknown[];
  readonly textOutput?: boolean | undefined;
  readonly onPrimary?: boolean | undefined;
}

/**
 * The request's statement on the server that answers its reads (db/standby/): a standby when the
 * database has one that may answer, else the database itself. A request that carries a leading
 * statement (a 2025-11-25 session's check, of rows written on the primary), or one marked
 * onPrimary, runs on the primary.
 */
async function runQuery<TRow>(
  call: RequestCall,
  statement: RequestStatement,
  pipelined: boolean,
): Promise<TRow[]> {
  if (call.cancellation.aborted)
    throw new ProtocolError('TIMEOUT', 'The request was cancelled.');
  const leading = takesLeading(call, statement, pipelined)
    ? takeLeading(call)
    : undefined;
  if (
    leading !== undefined ||
    call.db.standbys === undefined ||
    statement.onPrimary === true
  )
    return runOn(call, { statement, pipelined, leading });
  return onReadServer(call.db, (db) =>
    runOn({ ...call, db }, { statement, pipelined, leading: undefined }),
  );
}

/** What a request's transaction sends: its statement, where, and the transport's statement first. */
interface RequestWork {
  readonly statement: RequestStatement;
  readonly pipelined: boolean;
  readonly leading: LeadingStatement | undefined;
}

/**
 * Whether the statement's transaction on `call.db` carries the transport's leading statement: a
 * transaction of several statements does (pipelined, or the identity with the driver internals);
 * a lone statement or pg's public API does not, and the leading statement waits for the next.
 */
function takesLeading(
  call: RequestCall,
  statement: RequestStatement,
  pipelined: boolean,
): boolean {
  const { db, principal } = call;
  if (pipelined && db.pipelines !== undefined) return true;
  return (
    db.driverInternals &&
    (principal.role !== null || statement.textOutput === true)
  );
}

/** The transport's leading statement for this request on `call.db`, taken once. */
function takeLeading(call: RequestCall): LeadingStatement | undefined {
  const { cancellation, db } = call;
  return 'takeLeadingStatement' in cancellation
    ? cancellation.takeLeadingStatement?.(db)
    : undefined;
}

async function runOn<TRow>(
  call: RequestCall,
  work: RequestWork,
): Promise<TRow[]> {
  const { db, principal, cancellation } = call;
  const { statement, pipelined } = work;
  if (pipelined && db.pipelines !== undefined)
    return runPipelined(call, db.pipelines, work);
  const client = await connectClient(db);
  let broken: Error | undefined;
  const watch = watchCancel(client, cancellation);
  const observe = observer<TRow>(cancellation, statement.name);
  try {
    if (principal.role === null && statement.textOutput !== true)
      return observe((await client.query(statement)).rows);
    if (!db.driverInternals)
      return observe(await runUnpipelined(client, principal, statement));
    const { transaction, leading } = requestTransaction(call, {
      ...work,
      pipelined: false,
    });
    void client.query(transaction as unknown as pg.Submittable);
    try {
      const rows = await transaction.result;
      leading?.settle(rows[0] ?? []);
      return observe(rows.at(-1) ?? []);
    } finally {
      if (transaction.unsafeToReuse)
        broken = await keepAfterError(client, transaction, watch);
    }
  } catch (error) {
    if (isConnectionError(error))
      broken = error instanceof Error ? error : new Error('connection error');
    throw toDatabaseError(error);
  } finally {
    // A cancel still on its way could hit the next request's statement: wait until the server has
    // taken it (an idle backend forgets it); one that could not be sent costs the connection.
    if ((await watch.stop()) === false)
      broken ??= new Error('a cancel request could not be delivered');
    client.release(broken);
  }
}

/**
 * The request's transaction: the transport's leading statement if it has one (a session's
 * check), the identity when the request has a role, then the statement; text rows come back as
 * the driver's own field arrays, which pg's Query would copy into objects.
 */
function requestTransaction(
  { principal }: RequestCall,
  { statement, pipelined, leading }: RequestWork,
): { transaction: ImplicitTransaction; leading: LeadingStatement | undefined } {
  const statements: ImplicitStatement[] = [];
  if (leading !== undefined) statements.push(leading);
  const traced = tracedApplicationName();
  if (principal.role !== null)
    statements.push(
      traced === undefined
        ? {
            name: SET_IDENTITY.name,
            text: SET_IDENTITY.text,
            values: [principal.role, claimsJson(principal)],
          }
        : {
            name: SET_TRACED_IDENTITY.name,
            text: SET_TRACED_IDENTITY.text,
            values: [principal.role, claimsJson(principal), traced],
          },
    );
  statements.push(statement);
  return {
    transaction: new ImplicitTransaction(statements, pipelined),
    leading,
  };
}

/** A principal's claims as JSON text: made once per claims object (a cached token's are shared). */
const claimsJsonOf = new WeakMap<object, string>();

export function claimsJson(principal: Principal): string {
  let json = claimsJsonOf.get(principal.claims);
  if (json === undefined) {
    json = JSON.stringify(principal.claims);
    claimsJsonOf.set(principal.claims, json);
  }
  return json;
}

/**
 * runRequestQuery for a statement on pgmcp's own tables: its transaction goes out on a pipelined
 * connection (db/driver/request-pipeline.ts). A cancel does not reach PostgreSQL (the statement is short,
 * and a cancel could hit another request's statement on the same connection): the answer is
 * dropped by the transport instead.
 */
async function runPipelined<TRow>(
  call: RequestCall,
  pipelines: RequestPipelines,
  work: RequestWork,
): Promise<TRow[]> {
  const observe = observer<TRow>(call.cancellation, work.statement.name);
  const { transaction, leading } = requestTransaction(call, work);
  try {
    const rows = await pipelines.run(transaction);
    leading?.settle(rows[0] ?? []);
    return observe(rows.at(-1) ?? []);
  } catch (error) {
    throw toDatabaseError(error);
  }
}

/** Rows as TRow, after telling a context that listens (`statementRan`) the statement's time and count. */
function observer<TRow>(
  cancellation: Cancellation | { readonly aborted: boolean },
  name: string,
): (rows: unknown[]) => TRow[] {
  const context = 'statementRan' in cancellation ? cancellation : undefined;
  if (context?.statementRan === undefined) return (rows) => rows as TRow[];
  const started = performance.now();
  return (rows) => {
    context.statementRan?.(name, performance.now() - started, rows.length);
    return rows as TRow[];
  };
}

/**
 * A connection whose transaction failed with a statement half-parsed (a cancel during a first run)
 * is kept once the cancel has landed and its prepared statements are dropped; the error returned
 * says why it cannot be kept.
 */
async function keepAfterError(
  client: pg.PoolClient,
  transaction: ImplicitTransaction,
  watch: { stop(): Promise<boolean | undefined> },
): Promise<Error | undefined> {
  if ((await watch.stop()) === false)
    return new Error('a cancel request could not be delivered');
  try {
    await transaction.forgetPreparedStatements(client);
    return undefined;
  } catch (error) {
    return error instanceof Error
      ? error
      : new Error('a prepared statement may be half-made');
  }
}

/**
 * While a statement runs, a cancel of the request sends PostgreSQL's cancel for the client's
 * backend. `stop` ends the watch and resolves with whether a cancel sent was delivered (undefined
 * when none was sent).
 */
export function watchCancel(
  client: pg.PoolClient,
  cancellation: Cancellation | { readonly aborted: boolean },
): { stop(): Promise<boolean | undefined> } {
  const signal =
    cancellation instanceof AbortSignal
      ? cancellation
      : 'signal' in cancellation
        ? cancellation.signal
        : undefined;
  if (signal === undefined) return { stop: () => Promise.resolve(undefined) };
  let sent: Promise<boolean> | undefined;
  const onAbort = () => {
    sent ??= cancelBackend(client);
  };
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort();
  return {
    stop() {
      signal.removeEventListener('abort', onAbort);
      return sent ?? Promise.resolve(undefined);
    },
  };
}

const TEXT_TYPES = { getTypeParser: () => (value: string) => value };

/** The same transaction through pg's public API: begin, identity, query, commit, a round trip each. */
async function runUnpipelined(
  client: pg.PoolClient,
  principal: Principal,
  statement: RequestStatement,
): Promise<unknown[]> {
  const config: pg.QueryConfig = {
    name: statement.name,
    text: statement.text,
    values: statement.values,
    ...(statement.textOutput === true
      ? { rowMode: 'array', types: TEXT_TYPES }
      : {}),
  };
  if (principal.role === null)
    return (await client.query<unknown[]>(config)).rows;
  await client.query('begin');
  try {
    await client.query({
      ...SET_IDENTITY,
      values: [principal.role, claimsJson(principal)],
    });
    const { rows } = await client.query<unknown[]>(config);
    await client.query('commit');
    return rows;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
}

/** True when the client must not go back to the pool: no SQLSTATE (a socket failure) or a connection class. */
function isConnectionError(error: unknown): boolean {
  if (error instanceof ProtocolError) return false;
  const code =
    typeof error === 'object' && error !== null
      ? (error as { code?: unknown }).code
      : undefined;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code.startsWith('57P');
}
