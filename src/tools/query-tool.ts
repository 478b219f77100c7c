// query (issue 15 point 3): one read-only statement as the caller's role, made safe by PostgreSQL
// (db/ runReadOnlySql says how), its rows as a compact text table and as structuredContent.
import { z } from 'zod';
import {
  runReadOnlySql,
  SqlStatementError,
  type SqlRows,
} from '../db/index.js';
import {
  auditBeforeStandby,
  createAuditedRunner,
  createCallLimits,
  inspectAudited,
} from './sql-audit.js';
import type { SqlToolDependencies } from './sql-tool-dependencies.js';
import { ANSWERED_BY_SCHEMA, answeredBy } from './answered-by.js';
import { askSqlConsent } from './sql-consent.js';
import {
  defineTool,
  textResult,
  toolError,
  type Tool,
  type ToolResult,
} from './tool.js';

export const QUERY_DEFAULT_ROWS = 500;
export const QUERY_MAX_ROWS = 10_000;

/** A statement's parameters: JSON scalars, sent as text to PostgreSQL, which converts them. */
export const SqlParamsSchema = z
  .array(z.union([z.string(), z.number(), z.boolean(), z.null()]))
  .max(100)
  .describe('Values for $1, $2, … in the statement.');

const QueryArgsSchema = z
  .object({
    sql: z
      .string()
      .min(1)
      .max(100_000)
      .describe(
        'One read-only SQL statement (SELECT, VALUES, TABLE or WITH … SELECT); use $1, $2 … for values.',
      ),
    params: SqlParamsSchema.optional(),
    max_rows: z
      .number()
      .int()
      .min(1)
      .max(QUERY_MAX_ROWS)
      .optional()
      .describe(`Most rows returned (default ${QUERY_DEFAULT_ROWS}).`),
  })
  .strict();

const QUERY_OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    columns: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string' }, type: { type: 'string' } },
        required: ['name', 'type'],
      },
    },
    rows: {
      type: 'array',
      items: { type: 'array', items: { type: ['string', 'null'] } },
      description:
        "Each row's values as text, as JSON renders them (numbers and booleans as written, timestamps in ISO form); null for NULL.",
    },
    row_count: { type: 'integer' },
    truncated: { type: 'boolean' },
    answered_by: ANSWERED_BY_SCHEMA,
    truncated_reason: {
      enum: ['max_rows', 'max_bytes'],
      description:
        'Present when truncated: max_rows (more rows matched than max_rows) or max_bytes (the rows reached the byte cap PGMCP_QUERY_MAX_BYTES; a single row over it has its long values cut, ending in "...").',
    },
  },
  required: ['columns', 'rows', 'row_count', 'truncated'],
};

/** A query's rows as the tool's result: a text table, and the structured rows. */
function queryResult(result: SqlRows): ToolResult {
  const answered = answeredBy(result.server);
  return textResult(table(result) + answered.line, {
    columns: result.columns,
    rows: result.rows,
    row_count: result.rows.length,
    truncated: result.truncated,
    ...(result.truncatedBy === undefined
      ? {}
      : { truncated_reason: result.truncatedBy }),
    ...answered.member,
  });
}

/** The query tool. */

export function createQueryTool(deps: SqlToolDependencies): Tool {
  const audited = createAuditedRunner(deps);
  const callLimits = createCallLimits(deps);
  return defineTool({
    name: 'query',
    title: 'Run a read-only SQL query',
    description:
      'Run one read-only SQL statement as your database role (SELECT, VALUES, TABLE, WITH … SELECT) and get its rows. Writes, DDL, SET and several statements are refused by PostgreSQL.',
    args: QueryArgsSchema,
    outputSchema: QUERY_OUTPUT_SCHEMA,
    async call(args, ctx, input) {
      const params = args.params ?? [];
      const maxRows = args.max_rows ?? QUERY_DEFAULT_ROWS;
      try {
        // One deadline for the whole call: the consent check's plan and the run share it.
        const limits = await callLimits();
        const call = {
          action: 'query' as const,
          principal: ctx.principal,
          sql: args.sql,
          parameterCount: params.length,
        };
        // The guard refuses what pgmcp cannot vouch for (SqlStatementError), before anything runs.
        const verdict = await inspectAudited(deps, audited, call);
        const asked = await askSqlConsent(deps, ctx, {
          input,
          action: 'query',
          sql: args.sql,
          params: params.map(asText),
          verdict,
          limits,
        });
        if (asked !== undefined) return asked;
        const result = await audited(
          call,
          () =>
            runReadOnlySql(deps.db, ctx.principal, {
              sql: args.sql,
              params: params.map(asText),
              maxRows,
              maxBytes: deps.limits.maxBytes,
              schemas: deps.schemas,
              cancellation: ctx,
              beforeStandby: auditBeforeStandby(deps, call),
              ...limits,
            }),
          (rows) => rows.rows.length,
        );
        return queryResult(result);
      } catch (error) {
        if (error instanceof SqlStatementError) return sqlError(error);
        throw error;
      }
    },
  });
}

/** A PostgreSQL error as the tool's error result: SQLSTATE and message, as psql shows them. */
export function sqlError(error: SqlStatementError) {
  return toolError(
    `ERROR ${error.sqlstate}: ${error.message}${error.position === undefined ? '' : ` (at character ${error.position})`}`,
  );
}

/** JSON scalars as the text PostgreSQL parses for the parameter's type. */
export function asText(value: string | number | boolean | null): string | null {
  return value === null ? null : String(value);
}

/** A compact text table: a header of names and types, one line per row, then the count. */
function table(result: SqlRows): string {
  const cell = (value: string | null) =>
    value === null ? 'NULL' : value.replace(/[\t\n\r]/g, ' ');
  const lines = [
    result.columns
      .map((column) => `${column.name} (${column.type})`)
      .join('\t'),
    ...result.rows.map((row) => row.map(cell).join('\t')),
  ];
  lines.push(
    result.truncatedBy === 'max_bytes'
      ? `(${result.rows.length} ${result.rows.length === 1 ? 'row' : 'rows'} shown: truncated at the byte cap (PGMCP_QUERY_MAX_BYTES); long values cut end in "...")`
      : result.truncated
        ? `(${result.rows.length} rows shown; more rows matched: truncated)`
        : `(${result.rows.length} ${result.rows.length === 1 ? 'row' : 'rows'})`,
  );
  return lines.join('\n');
}
