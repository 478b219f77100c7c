// Completion of resource-template arguments (resources/completion.ts): one statement, run as the
// request role, so both the template and the candidate URIs pass row-level security.
import { builder, prepare, sql } from '../../db/index.js';

/**
 * Whether the role can see `template`, and up to `limit` stored URIs it can read in
 * [`from`, `to`) in URI order (the C-collated unique index serves the range). Both bounds are
 * always given: the statement runs with a generic plan (db/pool.ts), which could not bound the
 * index scan by an optional one and read on to the end of the table.
 */
export const TEMPLATE_COMPLETION_CANDIDATES = prepare(
  'pgmcp_template_completion_candidates',
  (args: { template: string; from: string; to: string; limit: number }) =>
    builder.selectNoFrom((eb) => [
      eb
        .exists(
          eb
            .selectFrom('pgmcp.resource_templates')
            .where('uri_template', '=', args.template),
        )
        .as('template_visible'),
      // Kysely has no array(subquery) constructor; the subquery inside is still built and typed.
      sql<string[]>`array(${eb
        .selectFrom('pgmcp.resources')
        .select('uri')
        .where('uri', '>=', args.from)
        .where('uri', '<', args.to)
        .orderBy('uri')
        .limit(args.limit)})`.as('uris'),
    ]),
);
