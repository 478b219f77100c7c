// The audit of query and explain calls: every call, failed or not, becomes one pgmcp.audit row
// written after its transaction; old rows are pruned now and then, as the change log is.
import type { Principal } from '../auth/index.js';
import {
  loginMaySetTempFileLimit,
  pruneAudit,
  statementDeadline,
  SqlStatementError,
  trackAuditedCall,
  writeAudit,
  type AuditEntry,
  type ReadServer,
  type StatementLimits,
} from '../db/index.js';
import { ProtocolError } from '../errors.js';
import type { GuardVerdict } from './sql-guard/index.js';
import type { SqlToolDependencies } from './sql-tool-dependencies.js';

/**
 * The bounds of a call starting now: its deadline (the statement timeout from now, for every
 * transaction the call makes), the cost ceiling, and temp_file_limit when the login may set it.
 * Whether it may is asked once; when it may not, one warning says so and the limit is left out.
 */
export function createCallLimits(
  deps: SqlToolDependencies,
): () => Promise<StatementLimits> {
  let tempFileLimit: Promise<number> | undefined;
  const allowedTempFileLimit = (): Promise<number> => {
    const wanted = deps.limits.tempFileLimitKb;
    if (wanted === 0) return Promise.resolve(0);
    tempFileLimit ??= loginMaySetTempFileLimit(deps.db).then(
      (may) => {
        if (!may)
          deps.log(
            `query: PGMCP_QUERY_TEMP_FILE_LIMIT_KB=${wanted} is not applied: the login may not set temp_file_limit (a superuser grants it: GRANT SET ON PARAMETER temp_file_limit TO <login>); the server's own temp_file_limit holds`,
          );
        return may ? wanted : 0;
      },
      (error: unknown) => {
        tempFileLimit = undefined;
        throw error;
      },
    );
    return tempFileLimit;
  };
  return async function callLimits() {
    const deadline = statementDeadline(deps.db);
    return {
      deadline,
      maxCost: deps.limits.maxCost,
      tempFileLimitKb: await allowedTempFileLimit(),
    };
  };
}

const PRUNE_EVERY_MS = 60_000;

/**
 * Run `work` for `action` and write its audit row afterwards, with the rows it returned or the
 * SQLSTATE it failed with. The row is written outside the request's transaction (that one is
 * rolled back), by the login through pgmcp.write_audit, and awaited: a call whose row could not be
 * written answers UNAVAILABLE, never its rows or its statement's error (fail closed, issue 32 point
 * 3). Closing the database waits for calls under way, so shutdown does not lose their rows.
 */
export function createAuditedRunner(deps: SqlToolDependencies) {
  let lastPrune = 0;
  return function audited<T>(
    call: AuditedCall,
    work: () => Promise<T>,
    rowsOf: (result: T) => number | null,
  ): Promise<T> {
    const run = async (): Promise<T> => {
      const started = performance.now();
      let outcome: Outcome<T>;
      try {
        const result = await work();
        outcome = { result, rows: rowsOf(result), sqlstate: null };
      } catch (error) {
        outcome = { error, rows: null, sqlstate: sqlstateOf(error) };
      }
      try {
        await writeAudit(
          deps.db,
          auditEntry(call, outcome, performance.now() - started),
        );
      } catch (error) {
        deps.log(
          `audit: writing a ${call.action} row failed (${String(error)}); the call's answer is withheld`,
        );
        throw new ProtocolError(
          'UNAVAILABLE',
          'The audit record of this call could not be written, so its result is withheld.',
          { cause: error },
        );
      } finally {
        if (Date.now() - lastPrune > PRUNE_EVERY_MS) {
          lastPrune = Date.now();
          pruneAudit(deps.db, deps.auditRetentionSeconds).catch(
            (error: unknown) =>
              deps.log(`audit: pruning failed (${String(error)})`),
          );
        }
      }
      if ('error' in outcome) throw outcome.error;
      return outcome.result;
    };
    return trackAuditedCall(deps.db, run());
  };
}

/**
 * Issue 36 point 1: a call whose statement goes to a standby writes a first audit row on the
 * primary before it runs there (detail `{"phase": "started", "server": "host:port"}`), so no
 * statement runs without a row even if the primary is lost before the call ends; the call's usual
 * row follows. When the first row cannot be written, nothing runs and the call answers UNAVAILABLE.
 */
export function auditBeforeStandby(
  deps: SqlToolDependencies,
  call: AuditedCall,
): (server: ReadServer) => Promise<void> {
  return async function auditStarted(server) {
    try {
      await writeAudit(deps.db, {
        role: call.principal.role,
        subject: subjectOf(call.principal),
        action: call.action,
        target: call.sql,
        parameterCount: call.parameterCount,
        detail: { phase: 'started', server: server.name },
        durable: true,
      });
    } catch (error) {
      deps.log(
        `audit: writing a ${call.action} row before its standby run failed (${String(error)}); nothing was run`,
      );
      throw new ProtocolError(
        'UNAVAILABLE',
        'The audit record of this call could not be written, so it was not run.',
        { cause: error },
      );
    }
  };
}

function subjectOf(principal: Principal): string | null {
  const subject = principal.claims['sub'];
  return typeof subject === 'string' ? subject : null;
}

/** The audit row of a call that ended with `outcome` after `durationMs`. */
function auditEntry(
  call: AuditedCall,
  outcome: Outcome<unknown>,
  durationMs: number,
): AuditEntry {
  return {
    role: call.principal.role,
    subject: subjectOf(call.principal),
    action: call.action,
    target: call.sql,
    parameterCount: call.parameterCount,
    rowCount: outcome.rows,
    durationMs,
    sqlstate: outcome.sqlstate,
    detail:
      'error' in outcome && outcome.error instanceof ProtocolError
        ? { error: outcome.error.key }
        : null,
  };
}

interface AuditedCall {
  readonly action: 'query' | 'explain';
  readonly principal: Principal;
  readonly sql: string;
  readonly parameterCount: number;
}

type Outcome<T> =
  | { result: T; rows: number | null; sqlstate: null }
  | { error: unknown; rows: null; sqlstate: string | null };

function sqlstateOf(error: unknown): string | null {
  if (error instanceof SqlStatementError) return error.sqlstate;
  if (error instanceof ProtocolError) {
    const cause = (error.cause ?? {}) as { code?: unknown };
    return typeof cause.code === 'string' ? cause.code : null;
  }
  return null;
}

/**
 * The statement guard's verdict on `call`'s statement. A statement it refuses, or a guard that
 * could not look in the catalog (a full pool), is audited as a call that failed, then the error
 * is thrown.
 */
export async function inspectAudited(
  deps: SqlToolDependencies,
  audited: ReturnType<typeof createAuditedRunner>,
  call: AuditedCall,
): Promise<GuardVerdict> {
  try {
    return await deps.guard.inspect(call.sql);
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    return audited(
      call,
      () => Promise.reject(failure),
      () => null,
    );
  }
}
