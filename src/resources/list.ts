// resources/list: stored resources in primary-key order, one keyset page per call.
import { LIST_RESOURCES_PAGE, runRequestTransaction, type DatabaseHandle } from '../db/index.js';
import { createMethod, PaginatedParamsSchema, RawJson, type CursorCodec, type MethodHandler, type PaginatedParams } from '../protocol/index.js';
import { cacheHints } from './cache-hints.js';
import { decodeAfterId, keysetPage } from './keyset.js';
import { renderResource } from './render.js';

const COLLECTION = 'resources';

export interface ListDependencies {
  readonly db: DatabaseHandle;
  readonly cursors: CursorCodec;
  readonly pageSize: number;
}

/**
 * Pages are keyset pages on the surrogate key: stable while rows are inserted and deleted (no
 * duplicates; nothing that existed for the whole walk is skipped) and as fast on the last page as
 * on the first. `nextCursor` is absent exactly on the last page (one extra row is fetched to know).
 */
export function createListResourcesMethod(deps: ListDependencies): MethodHandler<PaginatedParams> {
  return createMethod({
    params: PaginatedParamsSchema,
    async handle(params, ctx) {
      const afterId = decodeAfterId(deps.cursors, params.cursor, COLLECTION);
      const rows = await runRequestTransaction(deps.db, ctx.principal, ctx.signal, (queries) =>
        queries.run(LIST_RESOURCES_PAGE, { afterId, limit: deps.pageSize + 1 }),
      );
      const { page, nextCursor } = keysetPage(rows, deps.pageSize, deps.cursors, COLLECTION);
      return {
        resources: new RawJson(`[${page.map(renderResource).join(',')}]`),
        ...(nextCursor === undefined ? {} : { nextCursor }),
        ...cacheHints('list', ctx.principal),
      };
    },
  });
}
