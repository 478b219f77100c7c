// A call's transaction set-up over the public API (BEGIN READ ONLY, role, claims, bounds, search
// path) and its checks: the settings re-check after the statement, the schemas and the cost ceiling.
import { tracedApplicationName } from '../../observability/index.js';
import type pg from 'pg';
import type { Principal } from '../../auth/index.js';
import { claimsJson } from '../request-transaction.js';
import { costRefusal, limitSettings, remainingMs } from './statement-limits.js';
import {
  SqlStatementError,
  type AdHocSqlOptions,
  type ToolSession,
  type RequestSettings,
} from './tool-session.js';
import { single } from './tool-connection.js';

/** The per-request settings now, and current_user: compared with what pgmcp set (checkSettings). */
export const SETTINGS_NOW = `select current_setting('role') as role, current_user::text as user,
       current_setting('request.jwt.claims', true) as claims,
       current_setting('search_path') as search_path`;

/**
 * Belt and braces behind the statement guard (tools/sql-guard, issue 32 point 1): after the
 * caller's statement ran or was planned, the role, current_user, the claims and (when pgmcp set it)
 * the search path must still be what pgmcp set, else its output is discarded and the call refused.
 */
export function checkSettings(
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
export async function verifySettings(session: ToolSession): Promise<void> {
  const { rows } = await session.client.query<RequestSettings>(SETTINGS_NOW);
  checkSettings(session.settings, rows[0]);
}

/**
 * BEGIN READ ONLY, the role and claims (transaction-local) and the search_path when schemas are
 * named, in one round trip; then, with schemas named, the statement's plan checked against them.
 */
export async function beginReadOnly(
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
export function leftOrRefuse(options: AdHocSqlOptions): number | undefined {
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
export function refuseCost(plan: unknown, options: AdHocSqlOptions): void {
  const refusal = costRefusal(plan, options);
  if (refusal !== undefined)
    throw new SqlStatementError('54000', refusal, undefined);
}

/**
 * The cost ceiling for the statement, on `plan` when one was made anyway, else on a new EXPLAIN
 * of the statement after `prefix` (an EXPLAIN (FORMAT JSON) …).
 */
export async function checkCost(
  session: ToolSession,
  options: AdHocSqlOptions,
  planned: { readonly plan: unknown; readonly prefix: string },
): Promise<void> {
  let { plan } = planned;
  const { prefix } = planned;
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

function searchPath(schemas: readonly string[]): string {
  return schemas.map((schema) => `"${schema.replace(/"/g, '""')}"`).join(', ');
}
