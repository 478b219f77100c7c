// search (issue 15 point 1): PostgreSQL full-text search over stored resources, the catalog and
// the rows of collections with searchable columns, as the caller's role. The answer follows the contract ChatGPT's connectors publish for `search`
// (one text item holding {"results": [{id, title, url}]}), with the same results as structured
// content and as resource_links for MCP hosts.
import { z } from 'zod';
import { runRequestQuery, type DatabaseHandle } from '../db/index.js';
import {
  SEARCH_CATALOG,
  SEARCH_COLLECTION_ROWS,
  SEARCH_RESOURCES,
} from './statements/search-statements.js';
import type { RequestContext } from '../protocol/index.js';
import { defineTool, type ContentBlock, type Tool } from './tool.js';

export interface SearchDependencies {
  readonly db: DatabaseHandle;
  /** The pg:// URI of a relation of the searched database. */
  readonly relationUri: (schema: string, relation: string) => string;
  /** The catalog's scope (config file "catalog"). */
  readonly scope: {
    readonly include: readonly string[] | null;
    readonly exclude: readonly string[];
  };
  /** How many results a search returns (config file tools.searchLimit, at most 100). */
  readonly limit: number;
  /** Collections whose rows search matches (config file collections[].searchable). */
  readonly collections?: readonly SearchableCollection[];
}

/** A collection with searchable columns, in the database it is served from. */
export interface SearchableCollection {
  readonly db: DatabaseHandle;
  readonly schema: string;
  readonly table: string;
  /** Matched columns: the first weighs like a title, the second like a description, the rest like a body. */
  readonly columns: readonly string[];
  readonly titleColumn: string | undefined;
  /** A row's resource URI (what resources/read and fetch accept), from its key's text forms. */
  readonly rowUri: (key: readonly string[]) => string;
  /** A row's name when it has no title: schema.table/key. */
  readonly rowName: (key: readonly string[]) => string;
}

/** A match that ranks with the others: a stored resource or a row. */
interface RankedResult extends SearchResult {
  readonly rank: number;
}

interface SearchResult {
  id: string;
  title: string;
  url: string;
  snippet: string;
  kind: 'resource' | 'relation' | 'row';
  mimeType?: string;
}

const SEARCH_OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    results: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string', description: 'The resource URI: fetch it.' },
          title: { type: 'string' },
          url: { type: 'string' },
          snippet: { type: 'string', description: 'Matches in **bold**.' },
          kind: { enum: ['resource', 'relation', 'row'] },
        },
        required: ['id', 'title', 'url'],
      },
    },
    more: { type: 'integer', description: 'How many more matched.' },
  },
  required: ['results', 'more'],
};

const SearchArgsSchema = z
  .object({
    query: z
      .string()
      .min(1)
      .max(1000)
      .describe(
        'Words to look for in documents, notes, files, table names and searchable rows ("quoted phrase", -excluded, or).',
      ),
  })
  .strict();

/** The search tool. */
export function createSearchTool(deps: SearchDependencies): Tool {
  return defineTool({
    name: 'search',
    title: 'Search',
    description:
      'Full-text search over the documents, notes, files and table rows you can read and the tables and views you may query. Returns up to ' +
      `${deps.limit} results, best first, each with an id to fetch.`,
    args: SearchArgsSchema,
    outputSchema: SEARCH_OUTPUT_SCHEMA,
    async call({ query }, ctx) {
      const args = { query, limit: deps.limit };
      const call = { db: deps.db, principal: ctx.principal, cancellation: ctx };
      const [resources, relations, rows] = await Promise.all([
        runRequestQuery(call, SEARCH_RESOURCES, args),
        runRequestQuery(call, SEARCH_CATALOG, { ...args, ...deps.scope }),
        searchRows(deps, query, ctx),
      ]);
      // Stored resources and rows rank alike (the same weighted document, migration 0022); ranks
      // of relation names do not compare with theirs: relations come first, taking at most a
      // quarter of the results unless there are too few others to fill the rest.
      const ranked = [
        ...resources.map((row): RankedResult => ({
          id: row.uri,
          title: row.title,
          url: row.uri,
          snippet: row.snippet,
          kind: 'resource',
          rank: row.rank,
          ...(row.mime_type === null ? {} : { mimeType: row.mime_type }),
        })),
        ...rows.results,
      ].sort((a, b) => b.rank - a.rank || (a.id < b.id ? -1 : 1));
      const relationSlots = Math.max(
        Math.ceil(deps.limit / 4),
        deps.limit - ranked.length,
      );
      const shown: SearchResult[] = [
        ...relations.slice(0, relationSlots).map((row) => {
          const uri = deps.relationUri(row.schema, row.relation);
          return {
            id: uri,
            title: `${row.schema}.${row.relation}`,
            url: uri,
            snippet: row.snippet,
            kind: 'relation' as const,
          };
        }),
        ...ranked.map(({ rank: _rank, ...result }) => result),
      ].slice(0, deps.limit);
      const total =
        Number(resources[0]?.total ?? 0) +
        Number(relations[0]?.total ?? 0) +
        rows.total;
      return answer(shown, total - shown.length);
    },
  });
}

/** Each searchable collection's best matches as the caller, and how many matched in all. */
async function searchRows(
  deps: SearchDependencies,
  query: string,
  ctx: RequestContext,
): Promise<{ results: RankedResult[]; total: number }> {
  const found = await Promise.all(
    (deps.collections ?? []).map(async (collection) => {
      const matches = await runRequestQuery(
        { db: collection.db, principal: ctx.principal, cancellation: ctx },
        SEARCH_COLLECTION_ROWS,
        {
          schema: collection.schema,
          table: collection.table,
          columns: collection.columns,
          query,
          limit: deps.limit,
          titleColumn: collection.titleColumn ?? null,
        },
      );
      return matches.map((match) => {
        const uri = collection.rowUri(match.key);
        return {
          result: {
            id: uri,
            title: match.title ?? collection.rowName(match.key),
            url: uri,
            snippet: match.snippet,
            kind: 'row' as const,
            mimeType: 'application/json',
            rank: match.rank,
          },
          total: Number(match.total),
        };
      });
    }),
  );
  return {
    results: found.flat().map((entry) => entry.result),
    total: found.reduce((sum, matches) => sum + (matches[0]?.total ?? 0), 0),
  };
}

/** The contract's JSON text first, then a resource_link per result, then how many more matched. */
function answer(results: readonly SearchResult[], more: number) {
  const structured = results.map(({ mimeType: _type, ...result }) => result);
  const content: ContentBlock[] = [
    {
      type: 'text',
      text: JSON.stringify({
        results: results.map(({ id, title, url }) => ({ id, title, url })),
      }),
    },
    ...results.map((result) => ({
      type: 'resource_link',
      uri: result.id,
      name: result.title,
      title: result.title,
      description: result.snippet,
      ...(result.mimeType === undefined ? {} : { mimeType: result.mimeType }),
    })),
  ];
  if (more > 0)
    content.push({
      type: 'text',
      text: `${more} more matched; narrow the query to see them.`,
    });
  return { content, structuredContent: { results: structured, more } };
}
