// Tables a prompt names or links: resolved in the catalog the caller's role can see (pg_catalog
// privileges, the configured scope), never from what the caller typed alone.
import { runRequestQuery } from '../db/index.js';
import { VISIBLE_TABLES } from './statements/prompt-statements.js';
import { ProtocolError } from '../errors.js';
import type { RequestContext } from '../protocol/index.js';
import type { PromptDependencies } from './prompt-dependencies.js';

/** A table or view the role can see. */
export interface VisibleTable {
  readonly schema: string;
  readonly relation: string;
  readonly comment: string | null;
}

/** Tables examined to resolve a bare name or match a question: enough for a company schema. */
const MAX_TABLES = 1000;

/** Up to `limit` visible tables whose "schema.relation" starts with `prefix`, in order. */
export function visibleTables(
  deps: PromptDependencies,
  ctx: RequestContext,
  {
    prefix,
    limit = MAX_TABLES,
  }: { readonly prefix: string; readonly limit?: number },
): Promise<VisibleTable[]> {
  return runRequestQuery(
    { db: deps.db, principal: ctx.principal, cancellation: ctx },
    VISIBLE_TABLES,
    {
      prefix,
      limit,
      include: deps.catalog.include,
      exclude: deps.catalog.exclude,
    },
  );
}

/**
 * The visible table `name` means: "schema.table", or a bare table name that one visible schema
 * holds. A name the role cannot see is answered exactly like one that does not exist (-32602).
 */
export async function resolveTable(
  deps: PromptDependencies,
  ctx: RequestContext,
  name: string,
): Promise<VisibleTable> {
  const wanted = name.trim();
  const qualified = wanted.includes('.');
  const candidates = await visibleTables(deps, ctx, {
    prefix: qualified ? wanted : '',
  });
  const matches = candidates.filter((table) =>
    qualified
      ? `${table.schema}.${table.relation}` === wanted
      : table.relation === wanted,
  );
  const [match] = matches;
  if (match === undefined)
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: no table or view ${JSON.stringify(wanted.slice(0, 200))} that you can see.`,
    );
  if (matches.length > 1)
    throw new ProtocolError(
      'INVALID_PARAMS',
      `Invalid params: ${JSON.stringify(wanted.slice(0, 200))} names a table in several schemas: write schema.table.`,
    );
  return match;
}

/**
 * The visible tables a question mentions by name (a word equal to the table's name, or to it
 * without a final "s"), at most `limit`.
 */
export async function tablesMentioned(
  deps: PromptDependencies,
  ctx: RequestContext,
  { question, limit }: { readonly question: string; readonly limit: number },
): Promise<VisibleTable[]> {
  const words = new Set(question.toLowerCase().split(/[^\p{L}\p{N}_]+/u));
  const mentioned = (name: string): boolean => {
    const lower = name.toLowerCase();
    return (
      words.has(lower) || (lower.endsWith('s') && words.has(lower.slice(0, -1)))
    );
  };
  const tables = await visibleTables(deps, ctx, { prefix: '' });
  return tables.filter((table) => mentioned(table.relation)).slice(0, limit);
}
