// A pooled connection lent to one query or explain call: the role's functions, the cancel watch,
// the clean-up that makes it safe for the next request (or drops it), the caller's errors.
import type pg from 'pg';
import type { Principal } from '../../auth/index.js';
import { ProtocolError } from '../../errors.js';
import { parsedStatementsOf } from '../driver/index.js';
import { connectClient, type DatabaseHandle } from '../pool.js';
import { watchCancel, type Cancellation } from '../request-transaction.js';
import { toDatabaseError } from '../connection/sqlstate.js';
import { remainingMs } from './statement-limits.js';
import {
  onReadServer,
  StandbyUnsuitableError,
} from '../standby/read-server.js';
import type { ReadServer } from '../standby/standby-options.js';
import { storedRoleFunctions } from './stored-role-functions.js';
import {
  SqlStatementError,
  type AdHocSqlOptions,
  type RoleFunctions,
  type ToolSession,
} from './tool-session.js';
import {
  roleFunctions,
  maybeStale,
  functionsGone,
  forgetRoleFunctions,
} from './role-functions.js';

/** A tool call: on which database, as whom, with what. */
export interface ToolCall {
  readonly db: DatabaseHandle;
  readonly principal: Principal;
  readonly options: AdHocSqlOptions;
}

/**
 * Lend `work` a connection with the role's functions, then clean it up and return it to the pool.
 * A function found stale (its owner renamed or gone) is made again and `work` runs once more. The
 * caller's own errors become SqlStatementError; the connection's own failures the usual
 * ProtocolErrors.
 */
export async function withToolConnection<T>(
  call: ToolCall,
  work: (session: ToolSession) => Promise<T>,
): Promise<T> {
  refuseNul(call.options);
  if (call.db.standbys === undefined) return lend(call, work, undefined);
  return onReadServer(
    call.db,
    (db, server) => lend({ ...call, db }, work, server),
    {
      beforeStandby: call.options.beforeStandby,
      role: roleKeyOf(call.principal.role),
    },
  );
}

/** `result` with the server that answered, when the database has standbys. */
export function answeredBy<T extends object>(
  session: ToolSession,
  result: T,
): T & { server?: ReadServer } {
  return session.server === undefined
    ? result
    : { ...result, server: session.server };
}

/**
 * The role's functions on the call's connection: on the primary the connection's temporary ones;
 * on a standby, which cannot make them, the stored ones `pgmcp role grant` made, or none, and
 * the call goes to the primary (StandbyUnsuitableError).
 */
async function functionsFor(
  client: pg.PoolClient,
  role: string | null,
  server: ReadServer | undefined,
): Promise<RoleFunctions> {
  if (server?.kind !== 'standby') return roleFunctions(client, role);
  const stored = await storedRoleFunctions(client, role);
  if (stored === undefined)
    throw new StandbyUnsuitableError(
      `the role's query and explain functions are not on this standby (pgmcp role grant ${role ?? '<login>'} makes them)`,
      roleKeyOf(role),
    );
  return stored;
}

/** The login (no role) cannot collide with a role name: those never contain a NUL. */
function roleKeyOf(role: string | null): string {
  return role ?? '\u0000login';
}

async function lend<T>(
  { db, principal, options }: ToolCall,
  work: (session: ToolSession) => Promise<T>,
  server: ReadServer | undefined,
): Promise<T> {
  const client = await connectClient(db);
  let broken: Error | undefined;
  let session: ToolSession | undefined;
  const watch = watchCancel(client, callSignal(options));
  try {
    for (let retried = false; ; retried = true) {
      let functions;
      try {
        functions = await functionsFor(client, principal.role, server);
      } catch (error) {
        // Its transaction may not have ended: the connection goes. Finding the stored functions
        // missing ran only reads outside a transaction, so that connection is fine.
        if (!(error instanceof StandbyUnsuitableError))
          broken = error instanceof Error ? error : new Error(String(error));
        throw error;
      }
      session = {
        client,
        functions,
        ended: false,
        prepared: false,
        prefixLength: 0,
        server,
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
export const PREPARED_COUNTS = `select count(*) filter (where from_sql)::int as sql_prepared,
       count(*) filter (where not from_sql)::int as protocol
  from pg_prepared_statements`;

export interface PreparedCounts {
  readonly sql_prepared: number;
  readonly protocol: number;
}

/** Why the connection cannot be trusted after a caller's statement, or undefined when it can. */
export function tampered(
  client: pg.PoolClient,
  counts: PreparedCounts | undefined,
): Error | undefined {
  if (counts === undefined) return new Error('no prepared-statement count');
  if (counts.sql_prepared > 0)
    return new Error('a statement prepared with SQL outlived the call');
  if (counts.protocol !== Object.keys(parsedStatementsOf(client)).length)
    return new Error("pgmcp's prepared statements changed during the call");
  return undefined;
}

/**
 * A statement sent through the extended protocol even without parameters (pg would send a
 * parameterless one as a simple query, which runs several statements): PostgreSQL then refuses a
 * second statement. @types/pg does not declare `queryMode`; pg reads it.
 */
export function single(
  text: string,
  values: readonly unknown[],
): pg.QueryConfig {
  return { text, values: [...values], queryMode: 'extended' } as pg.QueryConfig;
}

/** The caller's statement failed in PostgreSQL: its SQLSTATE and message, positions made its own. */
function statementError(error: unknown, prefixLength: number): Error {
  if (error instanceof SqlStatementError || error instanceof ProtocolError)
    return error;
  const { code, message, position, severity, routine, file } = (error ??
    {}) as {
    code?: unknown;
    message?: unknown;
    position?: unknown;
    severity?: unknown;
    routine?: unknown;
    file?: unknown;
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
  const made = new SqlStatementError(
    code,
    typeof message === 'string' ? message : 'error',
    Number.isFinite(at) && at > prefixLength ? at - prefixLength : undefined,
  );
  made.origin = {
    ...(typeof routine === 'string' ? { routine } : {}),
    ...(typeof file === 'string' ? { file } : {}),
  };
  return made;
}
