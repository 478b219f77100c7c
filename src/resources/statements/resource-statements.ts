// The resource statements: stored resources and templates, listed and read. Each is a named
// prepared statement; those Kysely can express are built with it (db/connection/prepared.ts).
import {
  builder,
  pipelined,
  prepare,
  sql,
  type PreparedQuery,
} from '../../db/index.js';

// The hot queries return each row as the array of its columns' Postgres text output, in select
// order: no per-row Date, array or bigint parsing in Node, and no row object either (the driver's
// field array is the row). resources/ renders the MCP JSON straight from that text.
// The request pool's sessions run with TimeZone=UTC (db/pool.ts), so timestamptz prints as
// "2026-11-30 05:53:46.761+00"; render.ts turns that into ISO 8601 with string operations.

/** A pgmcp.resources row for listing: bigint, double precision and text[] as Postgres prints them. */
export type ResourceListingRow = readonly [
  id: string,
  uri: string,
  name: string,
  title: string | null,
  description: string | null,
  mime_type: string | null,
  size: string,
  audience: string | null,
  priority: string | null,
  updated_at: string,
];
/** A listing row plus its content: exactly one of text or blob (bytea in hex form, \x…) is set. */
export type ResourceContentRow = readonly [
  ...ResourceListingRow,
  text: string | null,
  blob: string | null,
  /** 't' when reading it needs a person's consent (migration 0016). */
  sensitive: string,
];

const LISTING_COLUMNS = [
  'id',
  'uri',
  'name',
  'title',
  'description',
  'mime_type',
  'size',
  'audience',
  'priority',
  'updated_at',
] as const;

/** Where each column sits in a ResourceListingRow / ResourceContentRow (the select order above). */
export const COLUMN = {
  id: 0,
  uri: 1,
  name: 2,
  title: 3,
  description: 4,
  mime_type: 5,
  size: 6,
  audience: 7,
  priority: 8,
  updated_at: 9,
  text: 10,
  blob: 11,
  sensitive: 12,
} as const;

function textRows<TArgs, TRow>(
  query: PreparedQuery<TArgs, unknown>,
): PreparedQuery<TArgs, TRow> {
  return { ...query, textOutput: true } as PreparedQuery<TArgs, TRow>;
}

// The listing columns, qualified, for the page statement below.
const LISTED = LISTING_COLUMNS.map((column) => `r.${column}`).join(', ');

/**
 * One keyset page of stored resources, in primary-key order, each as its listing columns in
 * Postgres' text output (resources/ renders the MCP `Resource` object from them). Nothing rendered
 * is stored (migration 0023). A role that row-level security does not apply to (superuser,
 * BYPASSRLS) walks pgmcp.resources by primary key. Any other role, a request role or a login
 * without one, walks the keys of pgmcp.resource_listing, kept together per reader, once per member
 * role, instead of every row (a role that reads 1 row in 10 would read ten times the rows), then
 * fetches those rows by primary key under the table's own policy.
 */
export const LIST_RESOURCES_PAGE: PreparedQuery<
  { afterId: string; limit: number },
  ResourceListingRow
> = {
  name: 'pgmcp_list_resources_page',
  text: `(select ${LISTED} from pgmcp.resources r
  where not row_security_active('pgmcp.resources') and r.id > $1
  order by r.id limit $2)
union all
(with page as materialized (
  select distinct on (l.resource_id) l.resource_id
    from unnest((select pgmcp.member_roles())) m(role)
    cross join lateral (
      select l.resource_id from pgmcp.resource_listing l
       where l.reader = m.role and l.resource_id > $1
       order by l.resource_id
       limit $2) l
   where row_security_active('pgmcp.resources')
   order by l.resource_id
   limit $2)
select ${LISTED}
  from page p join pgmcp.resources r on r.id = p.resource_id)
order by 1`,
  values: (args) => [args.afterId, args.limit],
  textOutput: true,
  pipelined: true,
};

/** One stored resource by exact URI. */
export const READ_RESOURCE = pipelined(
  textRows<{ uri: string }, ResourceContentRow>(
    prepare('pgmcp_read_resource', (args: { uri: string }) =>
      builder
        .selectFrom('pgmcp.resources')
        .select([...LISTING_COLUMNS, 'text', 'blob', 'sensitive'])
        .where('uri', '=', args.uri),
    ),
  ),
);

/**
 * A file: directory row (if stored) and its immediate children in one statement, directory first
 * (it sorts before everything under it). `upperBound` is the exclusive end of the prefix range, so
 * the C-collated unique index serves it as a range scan.
 */
export const READ_DIRECTORY = pipelined(
  textRows<
    { directoryUri: string; upperBound: string; limit: number },
    ResourceContentRow
  >(
    prepare(
      'pgmcp_read_directory',
      (args: { directoryUri: string; upperBound: string; limit: number }) =>
        builder
          .selectFrom('pgmcp.resources')
          .select([...LISTING_COLUMNS, 'text', 'blob', 'sensitive'])
          .where('uri', '>=', args.directoryUri)
          .where('uri', '<', args.upperBound)
          // Immediate children only: after the prefix, no "/" except one trailing (a subdirectory).
          .where(
            sql<boolean>`strpos(rtrim(substr(uri, length(${args.directoryUri}) + 1), '/'), '/') = 0`,
          )
          .orderBy('uri')
          .limit(args.limit),
    ),
  ),
);

/** One keyset page of resource templates, in primary-key order. */
export const LIST_TEMPLATES_PAGE = prepare(
  'pgmcp_list_templates_page',
  (args: { afterId: string; limit: number }) =>
    builder
      .selectFrom('pgmcp.resource_templates')
      .select([
        'id',
        'uri_template',
        'name',
        'title',
        'description',
        'mime_type',
      ])
      .where('id', '>', args.afterId)
      .orderBy('id')
      .limit(args.limit),
);

export type TemplateListingRow = NonNullable<
  (typeof LIST_TEMPLATES_PAGE)['row']
>;
