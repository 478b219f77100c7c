// resources/list: stored resources in primary-key order, one keyset page per call.
import { COLUMN, LIST_RESOURCES_PAGE } from '../db/index.js';
import type { MethodHandler, PaginatedParams } from '../protocol/index.js';
import { createKeysetListMethod, type ListDependencies } from './keyset.js';
import { renderResource } from './render.js';

/** Every stored resource, keyset-paginated on pgmcp.resources.id. */
export function createListResourcesMethod(
  deps: ListDependencies,
): MethodHandler<PaginatedParams> {
  return createKeysetListMethod(deps, {
    collection: 'resources',
    query: LIST_RESOURCES_PAGE,
    field: 'resources',
    render: renderResource,
    keyOf: (row) => row[COLUMN.id],
    cache: 'list',
  });
}
