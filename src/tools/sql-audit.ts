// The audit of query and explain calls: every call, failed or not, becomes one pgmcp.audit row
// written after its transaction; old rows are pruned now and then, as the change log is.
import type { Principal } from '../auth/index.js';
import {
  pruneAudit,
  SqlStatementError,
  trackAuditedCall,
  writeAudit,
  type AuditEntry,
  type DatabaseHandle,
} from '../db/index.js';
import { ProtocolError } from '../errors.js';
import type { ConsentCheck } from '../protocol/index.js';

/** What query and explain share: the database, which schemas they may read, the audit's settings. */
export interface SqlToolDependencies {
  readonly db: DatabaseHandle;
  /** The only schemas query and explain may read (null: any the role may). */
  readonly schemas: readonly string[] | null;
  readonly auditRetentionSeconds: number;
  /** Logs an audit write that failed (the call itself still answers). */
  readonly log: (line: string) => void;
  /**
   * Tables (or tables with columns) the config file marks sensitive, and the consent gate a
   * statement reading one must pass (issue 17); absent or empty: no statement asks.
   */
  readonly consent?: SqlConsent;
}

/** What query needs of the consent gate: the sensitive tables and the check (resources/ consent.ts). */
export interface SqlConsent {
  readonly tables: readonly {
    readonly schema: string;
    readonly table: string;
  }[];
  readonly check: ConsentCheck;
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

/** The audit row of a call that ended with `outcome` after `durationMs`. */
function auditEntry(
  call: AuditedCall,
  outcome: Outcome<unknown>,
  durationMs: number,
): AuditEntry {
  const subject = call.principal.claims['sub'];
  return {
    role: call.principal.role,
    subject: typeof subject === 'string' ? subject : null,
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
