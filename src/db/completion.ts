// Completion of resource-template arguments (resources/completion.ts): one statement, run as the
// request role, so both the template and the candidate URIs pass row-level security.
import type { PreparedQuery } from './queries.js';

/**
 * Whether the role can see `template`, and up to `limit` stored URIs it can read in
 * [`from`, `to`) in URI order (the C-collated unique index serves the range). Both bounds are
 * always given: the statement runs with a generic plan (db/pool.ts), which could not bound the
 * index scan by an optional one and read on to the end of the table.
 */
export const TEMPLATE_COMPLETION_CANDIDATES: PreparedQuery<
  { template: string; from: string; to: string; limit: number },
  { template_visible: boolean; uris: string[] }
> = {
  name: 'pgmcp_template_completion_candidates',
  text: `select exists (select from pgmcp.resource_templates where uri_template = $1) as template_visible,
                array(select uri from pgmcp.resources
                       where uri >= $2 and uri < $3
                       order by uri limit $4) as uris`,
  values: (args) => [args.template, args.from, args.to, args.limit],
};
