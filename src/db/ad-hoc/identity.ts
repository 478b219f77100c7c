// The query tool's identity statement in the one-round-trip fetch: the role, the claims and the
// call's bounds, one prepared statement per shape (docs/statements.md lists their names).
import { tracedApplicationName } from '../../observability/index.js';
import type { Principal } from '../../auth/index.js';
import { type ImplicitStatement } from '../driver/index.js';
import { claimsJson } from '../request-transaction.js';
import { type AdHocSqlOptions } from './tool-session.js';
import { leftOrRefuse } from './settings.js';

/**
 * BEGIN's companion in the pipeline: the role and claims, and the call's bounds (db/
 * statement-limits.ts). Named per shape: with or without temp_file_limit, which only the login
 * may set and so comes before the role.
 */
export function identityStep(
  principal: Principal,
  options: AdHocSqlOptions,
): ImplicitStatement {
  const limited = (options.tempFileLimitKb ?? 0) > 0;
  const values = [
    principal.role,
    claimsJson(principal),
    // No deadline: the session's own timeout stays (0 would switch it off).
    leftOrRefuse(options)?.toString() ?? null,
  ];
  // Named columns: checkSettings compares the role and claims set here with those after the fetch.
  const identity =
    "set_config('role', coalesce($1, current_user), true) as role, set_config('request.jwt.claims', $2, true) as claims, set_config('statement_timeout', coalesce($3, current_setting('statement_timeout')), true) as statement_timeout";
  const traced = tracedApplicationName();
  // Each variant is its own prepared statement: untraced calls run exactly the plain one.
  const { name } =
    TOOL_IDENTITY[
      `${limited ? 'limited' : 'plain'}${traced === undefined ? '' : 'Traced'}`
    ];
  const parts = [
    ...(limited
      ? [
          `set_config('temp_file_limit', $${values.push(String(options.tempFileLimitKb))} || 'kB', true)`,
        ]
      : []),
    identity,
    ...(traced === undefined
      ? []
      : [`set_config('application_name', $${values.push(traced)}, true)`]),
  ];
  return { name, text: `select ${parts.join(', ')}`, values };
}

/** The identity statement's prepared names, one per shape (docs/statements.md lists them). */
const TOOL_IDENTITY = {
  plain: { name: 'pgmcp_tool_identity' },
  limited: { name: 'pgmcp_tool_identity_limited' },
  plainTraced: { name: 'pgmcp_tool_identity_traced' },
  limitedTraced: { name: 'pgmcp_tool_identity_limited_traced' },
} as const;
