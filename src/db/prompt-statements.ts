// Stored prompts (migrations/0015_create_prompts.sql) and what their templates render from: run as
// the request role, so the prompts, notes and tags a role gets are those row-level security lets
// it read.
import type { PreparedQuery } from './prepared.js';

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
> = {
  name: 'pgmcp_list_prompts_page',
  text: `select id::text as id, name, title, description, arguments::text as arguments
           from pgmcp.prompts
          where id > $1::bigint
          order by id
          limit $2`,
  values: (args) => [args.afterId, args.limit],
  pipelined: true,
};

/** One prompt by name, when the role can read it; `arguments` and `messages` as JSON text. */
export const GET_PROMPT: PreparedQuery<
  { name: string },
  {
    name: string;
    description: string | null;
    arguments: string;
    messages: string;
  }
> = {
  name: 'pgmcp_get_prompt',
  text: `select name, description, arguments::text as arguments, messages::text as messages
           from pgmcp.prompts
          where name = $1`,
  values: (args) => [args.name],
  pipelined: true,
};

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
> = {
  name: 'pgmcp_tagged_resources',
  text: `select uri, name, title, description, mime_type
           from pgmcp.resources
          where tags @> array[$1::text]
          order by uri
          limit $2`,
  values: (args) => [args.tag, args.limit],
};

/**
 * Distinct tags of the stored resources the role can read that start with `prefix`, in order, at
 * most `limit`. Reads every tag of the readable rows: completion is typed by a person, not run in
 * bulk.
 */
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
