// The search tool's statements (issue 15 point 1), run as the request role: row-level security
// and privileges decide what can match, so no result, snippet or count comes from a row or a
// relation the role cannot read.
import type { PreparedQuery } from '../../db/index.js';

/** One match: where it is, its title, a highlighted snippet, and how many matched in all. */
export interface SearchMatchRow {
  readonly uri: string;
  readonly title: string;
  readonly mime_type: string | null;
  readonly snippet: string;
  readonly rank: number;
  readonly total: string;
}

/** ts_headline's options: one short fragment, matches in **bold** (Markdown). */
const HEADLINE =
  "'MaxFragments=1, MaxWords=24, MinWords=8, StartSel=**, StopSel=**'";

/**
 * Stored resources matching `query` (websearch syntax), best first. pgmcp.search_resources
 * (migration 0022) lets the GIN index of migration 0014 find the matches, which row-level security
 * would forbid as the request role, and keeps those the resources policy shows the caller: no
 * match, snippet or count comes from a row the role cannot read, nor from a sensitive one.
 */
export const SEARCH_RESOURCES: PreparedQuery<
  { query: string; limit: number },
  SearchMatchRow
> = {
  name: 'pgmcp_search_resources',
  text: `select uri, title, mime_type, rank, snippet, total::text as total
           from pgmcp.search_resources($1, $2)`,
  values: (args) => [args.query, args.limit],
};

/** A row of a searchable collection that matched: its key, title (or null), snippet, rank, count. */
export interface RowMatchRow {
  readonly key: string[];
  readonly title: string | null;
  readonly snippet: string;
  readonly rank: number;
  readonly total: string;
}

/**
 * Rows of schema.table whose searchable `columns` match `query`, best first, read as the request
 * role (pgmcp.search_collection_rows, migration 0022, SECURITY INVOKER): the table's GRANTs and
 * row-level security decide what matches and what is counted.
 */
export const SEARCH_COLLECTION_ROWS: PreparedQuery<
  {
    schema: string;
    table: string;
    columns: readonly string[];
    query: string;
    limit: number;
    titleColumn: string | null;
  },
  RowMatchRow
> = {
  name: 'pgmcp_search_collection_rows',
  text: `select row_key as key, title, snippet, rank, total::text as total
           from pgmcp.search_collection_rows($1, $2, $3::text[], $4, $5, $6)`,
  values: (args) => [
    args.schema,
    args.table,
    args.columns,
    args.query,
    args.limit,
    args.titleColumn,
  ],
};

/** A relation the role may read whose names or comments match. */
export interface CatalogMatchRow {
  readonly schema: string;
  readonly relation: string;
  readonly kind: string;
  readonly snippet: string;
  readonly rank: number;
  readonly total: string;
}

/**
 * Tables, views and their columns the role may read (a privilege on the relation or on one of
 * its columns, and USAGE on its schema), matched on schema, relation and column names and
 * comments. The catalog is small: its documents are built per query, not indexed.
 */
export const SEARCH_CATALOG: PreparedQuery<
  {
    query: string;
    limit: number;
    /** The catalog's scope (config file "catalog"): null includes every schema. */
    include: readonly string[] | null;
    exclude: readonly string[];
  },
  CatalogMatchRow
> = {
  name: 'pgmcp_search_catalog',
  text: `with q as (select websearch_to_tsquery('english'::regconfig, $1) as q),
docs as (
  select n.nspname as schema, c.relname as relation, c.relkind::text as kind,
         obj_description(c.oid, 'pg_class') as comment,
         (select string_agg(concat_ws(' ', a.attname, col_description(c.oid, a.attnum)), ' ')
          from pg_attribute a
          where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped) as columns
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
  where c.relkind in ('r', 'p', 'v', 'm', 'f')
    and n.nspname not in ('pg_catalog', 'information_schema', 'pgmcp')
    and n.nspname not like 'pg\\_%'
    and has_schema_privilege(n.oid, 'USAGE')
    and (has_table_privilege(c.oid, 'SELECT') or has_any_column_privilege(c.oid, 'SELECT'))
    and ($3::text[] is null or n.nspname = any($3::text[]))
    and not (n.nspname = any($4::text[]))
),
vectors as (
  -- Names weigh like a document's title, comments like its description, columns like its body.
  select docs.*,
         setweight(to_tsvector('english'::regconfig, schema || ' ' || relation), 'A')
      || setweight(to_tsvector('english'::regconfig, coalesce(comment, '')), 'B')
      || setweight(to_tsvector('english'::regconfig, coalesce(columns, '')), 'D') as vector
  from docs
),
matches as (
  select vectors.*, ts_rank(vector, q.q) as rank
  from vectors, q
  where vector @@ q.q
),
ranked as (
  select *, count(*) over () as total from matches order by rank desc, schema, relation limit $2
)
select schema, relation, kind, rank,
       ts_headline('english'::regconfig, concat_ws(' — ', schema || '.' || relation, comment, columns), q.q, ${HEADLINE}) as snippet,
       total::text as total
from ranked, q
order by rank desc, schema, relation`,
  values: (args) => [args.query, args.limit, args.include, args.exclude],
};
