// The audit of query and explain calls: every call, failed or not, becomes one pgmcp.audit row
// written after its transaction; old rows are pruned now and then, as the change log is.
import type { Principal } from '../auth/index.js';
import {
  pruneAudit,
  SqlStatementError,
  writeAudit,
  type DatabaseHandle,
} from '../db/index.js';
import { ProtocolError } from '../errors.js';
import type { ConsentCheck } from '../protocol/index.js';
import type { SqlGuard } from './sql-guard/index.js';

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
  /** The statement guard (sql-guard/): what a statement reaches, refused before anything runs. */
  readonly guard: SqlGuard;
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
 * rolled back), by the login through pgmcp.write_audit.
 */
export function createAuditedRunner(deps: SqlToolDependencies) {
  let lastPrune = 0;
  return async function audited<T>(
    call: {
      action: 'query' | 'explain';
      principal: Principal;
      sql: string;
      parameterCount: number;
    },
    work: () => Promise<T>,
    rowsOf: (result: T) => number | null,
  ): Promise<T> {
    const started = performance.now();
    let outcome: { rows: number | null; sqlstate: string | null } = {
      rows: null,
      sqlstate: null,
    };
    try {
      const result = await work();
      outcome = { rows: rowsOf(result), sqlstate: null };
      return result;
    } catch (error) {
      outcome = { rows: null, sqlstate: sqlstateOf(error) };
      throw error;
    } finally {
      const subject = call.principal.claims['sub'];
      await writeAudit(deps.db, {
        role: call.principal.role,
        subject: typeof subject === 'string' ? subject : null,
        action: call.action,
        target: call.sql,
        parameterCount: call.parameterCount,
        rowCount: outcome.rows,
        durationMs: performance.now() - started,
        sqlstate: outcome.sqlstate,
      }).catch((error: unknown) =>
        deps.log(
          `audit: writing a ${call.action} row failed (${String(error)})`,
        ),
      );
      if (Date.now() - lastPrune > PRUNE_EVERY_MS) {
        lastPrune = Date.now();
        pruneAudit(deps.db, deps.auditRetentionSeconds).catch(
          (error: unknown) =>
            deps.log(`audit: pruning failed (${String(error)})`),
        );
      }
    }
  };
}

function sqlstateOf(error: unknown): string | null {
  if (error instanceof SqlStatementError) return error.sqlstate;
  if (error instanceof ProtocolError) {
    const cause = (error.cause ?? {}) as { code?: unknown };
    return typeof cause.code === 'string' ? cause.code : null;
  }
  return null;
}
