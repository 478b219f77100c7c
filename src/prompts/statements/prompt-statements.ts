// Stored prompts (migrations/0015_create_prompts.sql) and what their templates render from: run as
// the request role, so the prompts, notes and tags a role gets are those row-level security lets
// it read.
import {
  builder,
  IN_SCOPE,
  pipelined,
  prepare,
  sql,
  VISIBLE_RELATION,
  type PreparedQuery,
} from '../../db/index.js';

/** One stored prompt as prompts/list shows it; `arguments` is the column's JSON as text. */
export interface PromptListingRow {
  id: string;
  name: string;
  title: string | null;
  description: string | null;
  arguments: string;
}

/** Up to `limit` prompts the role can read after `afterId`, in primary-key order. */
export const LIST_PROMPTS_PAGE: PreparedQuery<
  { afterId: string; limit: number },
  PromptListingRow
> = pipelined(
  prepare(
    'pgmcp_list_prompts_page',
    (args: { afterId: string; limit: number }) =>
      builder
        .selectFrom('pgmcp.prompts')
        .select((eb) => [
          eb.cast<string>('id', 'text').as('id'),
          'name',
          'title',
          'description',
          eb.cast<string>('arguments', 'text').as('arguments'),
        ])
        .where('id', '>', args.afterId)
        .orderBy('id')
        .limit(args.limit),
  ),
);

/** One prompt by name, when the role can read it; `arguments` and `messages` as JSON text. */
export const GET_PROMPT: PreparedQuery<
  { name: string },
  {
    name: string;
    description: string | null;
    arguments: string;
    messages: string;
  }
> = pipelined(
  prepare('pgmcp_get_prompt', (args: { name: string }) =>
    builder
      .selectFrom('pgmcp.prompts')
      .select((eb) => [
        'name',
        'description',
        eb.cast<string>('arguments', 'text').as('arguments'),
        eb.cast<string>('messages', 'text').as('messages'),
      ])
      .where('name', '=', args.name),
  ),
);

/**
 * Up to `limit` stored resources the role can read that carry `tag`, in URI order (the GIN index
 * on tags finds them), with what a resource_link shows.
 */
export const TAGGED_RESOURCES: PreparedQuery<
  { tag: string; limit: number },
  {
    uri: string;
    name: string;
    title: string | null;
    description: string | null;
    mime_type: string | null;
  }
> = prepare('pgmcp_tagged_resources', (args: { tag: string; limit: number }) =>
  builder
    .selectFrom('pgmcp.resources')
    .select(['uri', 'name', 'title', 'description', 'mime_type'])
    // Kysely has no array constructor; containment (not = any) is what the GIN index serves.
    .where('tags', '@>', sql<string[]>`array[${args.tag}::text]`)
    .orderBy('uri')
    .limit(args.limit),
);

/**
 * Distinct tags of the stored resources the role can read that start with `prefix`, in order, at
 * most `limit`. Reads every tag of the readable rows: completion is typed by a person, not run in
 * bulk.
 */
// Raw SQL: the row source is unnest(r.tags) in a lateral join with a column alias list, t(tag),
// which Kysely could carry only as an untyped fragment (docs/statements.md).
export const RESOURCE_TAGS: PreparedQuery<
  { prefix: string; limit: number },
  { tag: string }
> = {
  name: 'pgmcp_resource_tags',
  text: `select distinct t.tag
           from pgmcp.resources r cross join lateral unnest(r.tags) as t(tag)
          where starts_with(t.tag, $1)
          order by t.tag
          limit $2`,
  values: (args) => [args.prefix, args.limit],
};

/**
 * Tables and views the role holds a privilege on, in the catalog's scope, as (schema, relation)
 * whose "schema.relation" starts with `prefix`, in order, at most `limit` (prompt arguments and
 * their completion).
 */
export const VISIBLE_TABLES: PreparedQuery<
  {
    prefix: string;
    limit: number;
    include: readonly string[] | null;
    exclude: readonly string[];
  },
  { schema: string; relation: string; comment: string | null }
> = {
  name: 'pgmcp_visible_tables',
  text: `select n.nspname::text as schema, c.relname::text as relation,
                obj_description(c.oid, 'pg_class') as comment
           from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where ${VISIBLE_RELATION} and ${IN_SCOPE(3, 4)}
            and starts_with(n.nspname || '.' || c.relname, $1)
          order by n.nspname, c.relname
          limit $2`,
  values: (args) => [args.prefix, args.limit, args.include, args.exclude],
};
