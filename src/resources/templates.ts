// resources/templates/list: stored RFC 6570 templates, paginated like every collection.
import { LIST_TEMPLATES_PAGE, runRequestTransaction, type DatabaseHandle } from '../db/index.js';
import { createMethod, PaginatedParamsSchema, type MethodHandler, type PaginatedParams, type ResourceTemplate } from '../protocol/index.js';
import { cacheHints } from './cache-hints.js';
import { decodeAfterId, keysetPage } from './keyset.js';
import type { ListDependencies } from './list.js';

const COLLECTION = 'templates';

/** Templates from pgmcp.resource_templates in primary-key order, keyset-paginated. */
export function createListTemplatesMethod(deps: ListDependencies): MethodHandler<PaginatedParams> {
  return createMethod({
    params: PaginatedParamsSchema,
    async handle(params, ctx) {
      const afterId = decodeAfterId(deps.cursors, params.cursor, COLLECTION);
      const rows = await runRequestTransaction(deps.db, ctx.principal, ctx.signal, (queries) =>
        queries.run(LIST_TEMPLATES_PAGE, { afterId, limit: deps.pageSize + 1 }),
      );
      const { page, nextCursor } = keysetPage(rows, deps.pageSize, deps.cursors, COLLECTION);
      return {
        resourceTemplates: page.map((row) => {
          const template: ResourceTemplate = { uriTemplate: row.uri_template, name: row.name };
          if (row.title !== null) template.title = row.title;
          if (row.description !== null) template.description = row.description;
          if (row.mime_type !== null) template.mimeType = row.mime_type;
          return template;
        }),
        ...(nextCursor === undefined ? {} : { nextCursor }),
        ...cacheHints('templates', ctx.principal),
      };
    },
  });
}
