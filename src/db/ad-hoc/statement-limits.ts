// The bounds on a caller's statement in query and explain (issue 32 point 5): one deadline per
// call, each transaction's statement_timeout set to what is left of it; temp_file_limit where the
// login may set it; and the ceiling on the planned cost, read from an EXPLAIN plan.
import { connectClient, type DatabaseHandle } from '../pool.js';

/** What bounds one call's statements; each is optional (absent or 0: not bounded here). */
export interface StatementLimits {
  /** When the call must be over (epoch ms): statementDeadline() when the call starts. */
  readonly deadline?: number;
  /** temp_file_limit in kB for each transaction (0 or absent: the server's own). */
  readonly tempFileLimitKb?: number;
  /** Largest planned total cost a statement may have to run (0 or absent: no ceiling). */
  readonly maxCost?: number;
}

/** A call's deadline: the statement timeout from now. */
export function statementDeadline(db: DatabaseHandle): number {
  return Date.now() + db.statementTimeoutMs;
}

/** Milliseconds left before the deadline (at least 1), or undefined without one; 0: passed. */
export function remainingMs(limits: StatementLimits): number | undefined {
  if (limits.deadline === undefined) return undefined;
  return Math.max(0, Math.ceil(limits.deadline - Date.now()));
}

/**
 * The set_config calls that bound a transaction, in the order they must run: temp_file_limit
 * before the role changes (only the login may set it), statement_timeout after.
 */
export function limitSettings(
  limits: StatementLimits,
  remaining: number | undefined,
): { beforeRole: string[]; afterRole: string[] } {
  const tempFileLimit = limits.tempFileLimitKb ?? 0;
  return {
    beforeRole:
      tempFileLimit > 0
        ? [`set_config('temp_file_limit', '${tempFileLimit}kB', true)`]
        : [],
    afterRole:
      remaining === undefined
        ? []
        : [`set_config('statement_timeout', '${remaining}', true)`],
  };
}

/** The planned total cost of an EXPLAIN (FORMAT JSON) result's top node, when there is one. */
export function plannedCost(plan: unknown): number | undefined {
  const parsed: unknown = typeof plan === 'string' ? JSON.parse(plan) : plan;
  const top = (Array.isArray(parsed) ? parsed[0] : undefined) as
    { Plan?: { 'Total Cost'?: unknown } } | undefined;
  const cost = top?.Plan?.['Total Cost'];
  return typeof cost === 'number' ? cost : undefined;
}

/** Why a statement with this plan may not run under `limits`, or undefined when it may. */
export function costRefusal(
  plan: unknown,
  limits: StatementLimits,
): string | undefined {
  const ceiling = limits.maxCost ?? 0;
  if (ceiling <= 0) return undefined;
  const cost = plannedCost(plan);
  if (cost === undefined || cost <= ceiling) return undefined;
  return `the statement's planned cost ${cost} exceeds this server's ceiling ${ceiling} (PGMCP_QUERY_MAX_COST); nothing was run`;
}

/**
 * Whether the login may set temp_file_limit (a superuser parameter): a superuser, or on
 * PostgreSQL 15 and later a login granted SET ON PARAMETER temp_file_limit.
 */
export async function loginMaySetTempFileLimit(
  db: DatabaseHandle,
): Promise<boolean> {
  const client = await connectClient(db);
  try {
    const { rows } = await client.query<{
      superuser: boolean;
      version: number;
    }>(
      `select rolsuper as superuser, current_setting('server_version_num')::int as version
         from pg_roles where rolname = current_user`,
    );
    const login = rows[0];
    if (login === undefined || login.superuser) return login !== undefined;
    // has_parameter_privilege (and GRANT SET ON PARAMETER) exist from PostgreSQL 15 on.
    if (login.version < 150000) return false;
    const { rows: granted } = await client.query<{ may: boolean }>(
      "select has_parameter_privilege('temp_file_limit', 'SET') as may",
    );
    return granted[0]?.may === true;
  } finally {
    client.release();
  }
}
