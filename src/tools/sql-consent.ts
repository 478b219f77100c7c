// The consent gate of query and explain (issue 17, issue 32 point 2): a statement that can read a
// table the config file marks sensitive, pgmcp.resources while a stored resource is sensitive, or
// the planner's statistics of such data, asks a person first.
import {
  SqlStatementError,
  tablesOfSql,
  type StatementLimits,
} from '../db/index.js';
import type { InputParams, RequestContext } from '../protocol/index.js';
import type { GuardVerdict } from './sql-guard/index.js';
import type { SqlToolDependencies } from './sql-tool-dependencies.js';
import type { InputRequiredResult } from './tool.js';

/**
 * The consent question (input_required) when the statement can read sensitive data and the person
 * has not yet answered, else undefined (read on). What it can read: the relations of its plan
 * (views expanded) and, when it reaches a function with a body, everything the guard found it can
 * reach; any table when it reaches a pgmcp function that runs dynamic SQL; the sensitive data's
 * statistics when it reaches pg_statistic. A table with a sensitive column counts whole. The
 * statement and its parameters are what the state is bound to and what the audit records.
 */
export async function askSqlConsent(
  deps: SqlToolDependencies,
  ctx: RequestContext,
  call: {
    /** What the request's retry carries (the person's answers), when it is one. */
    input: InputParams;
    action: 'query' | 'explain';
    sql: string;
    params: (string | null)[];
    verdict: GuardVerdict;
    /** The call's deadline and bounds: the plan shares them with the run. */
    limits: StatementLimits;
  },
): Promise<InputRequiredResult | undefined> {
  const consent = deps.consent;
  if (consent === undefined) return undefined;
  const key = (table: { schema: string; name?: string; table?: string }) =>
    `${table.schema}.${table.table ?? table.name ?? ''}`;
  const sensitive = new Set(consent.tables.map(key));
  if (call.verdict.sensitiveResources) sensitive.add('pgmcp.resources');
  if (sensitive.size === 0) return undefined;
  const reaches = call.verdict.relations.some((relation) =>
    sensitive.has(key(relation)),
  );
  let needed = call.verdict.dynamicReads || call.verdict.statistics;
  if (!needed && reaches) needed = call.verdict.bodies;
  if (!needed && reaches) {
    try {
      const read = await tablesOfSql(deps.db, ctx.principal, {
        sql: call.sql,
        params: call.params,
        ...call.limits,
        schemas: deps.schemas,
        cancellation: ctx,
      });
      needed = read.some((table) => sensitive.has(key(table)));
    } catch (error) {
      // A statement PostgreSQL cannot plan fails the same way when run: run it, so the call is
      // audited like any other, and it reads nothing.
      if (!(error instanceof SqlStatementError)) throw error;
    }
  }
  if (!needed) return undefined;
  const target = `${call.action}: ${call.sql}${call.params.length === 0 ? '' : ` -- params ${JSON.stringify(call.params)}`}`;
  const outcome = await consent.check(ctx, target, call.input);
  return outcome.granted ? undefined : outcome.result;
}
