// explain (issue 15 point 4): a statement's plan as JSON and text, without running it; with ANALYZE
// only when the operator allows it, and then in the same read-only, timed, role-bound transaction.
import { z } from 'zod';
import { explainSql, SqlStatementError } from '../db/index.js';
import { asText, SqlParamsSchema, sqlError } from './query-tool.js';
import { ANSWERED_BY_SCHEMA, answeredBy } from './answered-by.js';
import {
  auditBeforeStandby,
  createAuditedRunner,
  createCallLimits,
  inspectAudited,
} from './sql-audit.js';
import type { SqlToolDependencies } from './sql-tool-dependencies.js';
import { askSqlConsent } from './sql-consent.js';
import { defineTool, textResult, type Tool } from './tool.js';

const EXPLAIN_OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    plan: { description: 'EXPLAIN (FORMAT JSON) output.' },
    analyzed: { type: 'boolean' },
    answered_by: ANSWERED_BY_SCHEMA,
  },
  required: ['plan', 'analyzed'],
};

/** explain's arguments: `analyze` exists only when the config file allows it. */
function explainArgs(analyzeAllowed: boolean) {
  return z
    .object({
      sql: z.string().min(1).max(100_000).describe('The statement to plan.'),
      params: SqlParamsSchema.optional(),
      ...(analyzeAllowed
        ? {
            analyze: z
              .boolean()
              .optional()
              .describe(
                'Run the statement (read-only, under the timeout) and show actual times and rows.',
              ),
          }
        : {}),
    })
    .strict();
}

/** A plan as the tool's result: its text, and the JSON plan (with the server that answered). */
function explainResult(
  result: Awaited<ReturnType<typeof explainSql>>,
  analyzed: boolean,
) {
  const { line, member } = answeredBy(result.server);
  return textResult(result.text + line, {
    plan: result.plan,
    analyzed,
    ...member,
  });
}

/** The explain tool; `analyze` only when the config file's tools.explainAnalyze allows it. */
export function createExplainTool(
  deps: SqlToolDependencies & { readonly analyzeAllowed: boolean },
): Tool {
  const audited = createAuditedRunner(deps);
  const callLimits = createCallLimits(deps);
  const args = explainArgs(deps.analyzeAllowed);
  return defineTool({
    name: 'explain',
    title: 'Explain a SQL statement',
    description:
      'Show how PostgreSQL would run one SQL statement (its plan, as JSON and text) without running it.',
    args,
    outputSchema: EXPLAIN_OUTPUT_SCHEMA,
    async call(parsed, ctx, input) {
      const { sql, params = [] } = parsed;
      const analyze =
        deps.analyzeAllowed &&
        (parsed as { analyze?: boolean }).analyze === true;
      try {
        const limits = await callLimits();
        const call = {
          action: 'explain' as const,
          principal: ctx.principal,
          sql,
          parameterCount: params.length,
        };
        // As query: the guard first, then consent (a plan can print constants a function read).
        const verdict = await inspectAudited(deps, audited, call);
        const asked = await askSqlConsent(deps, ctx, {
          input,
          action: 'explain',
          sql,
          params: params.map(asText),
          verdict,
          limits,
        });
        if (asked !== undefined) return asked;
        const result = await audited(
          call,
          () =>
            explainSql(deps.db, ctx.principal, {
              sql,
              params: params.map(asText),
              schemas: deps.schemas,
              cancellation: ctx,
              analyze,
              beforeStandby: auditBeforeStandby(deps, call),
              ...limits,
            }),
          () => null,
        );
        return explainResult(result, analyze);
      } catch (error) {
        if (error instanceof SqlStatementError) return sqlError(error);
        throw error;
      }
    },
  });
}
