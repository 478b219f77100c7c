// search (issue 15 point 1): PostgreSQL full-text search over stored resources and the catalog, as
// the caller's role. The answer follows the contract ChatGPT's connectors publish for `search`
// (one text item holding {"results": [{id, title, url}]}), with the same results as structured
// content and as resource_links for MCP hosts.
import { z } from 'zod';
import {
  runRequestQuery,
  SEARCH_CATALOG,
  SEARCH_RESOURCES,
  type DatabaseHandle,
} from '../db/index.js';
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
}

interface SearchResult {
  id: string;
  title: string;
  url: string;
  snippet: string;
  kind: 'resource' | 'relation';
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
          kind: { enum: ['resource', 'relation'] },
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
        'Words to look for in documents, notes, files and table names ("quoted phrase", -excluded, or).',
      ),
  })
  .strict();

/** The search tool. */
export function createSearchTool(deps: SearchDependencies): Tool {
  return defineTool({
    name: 'search',
    title: 'Search',
    description:
      'Full-text search over the documents, notes and files you can read and the tables and views you may query. Returns up to ' +
      `${deps.limit} results, best first, each with an id to fetch.`,
    args: SearchArgsSchema,
    outputSchema: SEARCH_OUTPUT_SCHEMA,
    async call({ query }, ctx) {
      const args = { query, limit: deps.limit };
      const [resources, relations] = await Promise.all([
        runRequestQuery(deps.db, ctx.principal, ctx, SEARCH_RESOURCES, args),
        runRequestQuery(deps.db, ctx.principal, ctx, SEARCH_CATALOG, {
          ...args,
          ...deps.scope,
        }),
      ]);
      // Ranks of notes and of relation names do not compare: relations come first, taking at
      // most a quarter of the results unless there are too few resources to fill the rest.
      const relationSlots = Math.max(
        Math.ceil(deps.limit / 4),
        deps.limit - resources.length,
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
        ...resources.map((row) => ({
          id: row.uri,
          title: row.title,
          url: row.uri,
          snippet: row.snippet,
          kind: 'resource' as const,
          ...(row.mime_type === null ? {} : { mimeType: row.mime_type }),
        })),
      ].slice(0, deps.limit);
      const total =
        Number(resources[0]?.total ?? 0) + Number(relations[0]?.total ?? 0);
      return answer(shown, total - shown.length);
    },
  });
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
