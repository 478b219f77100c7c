// resources/list: stored resources in primary-key order, then the catalog (schemas, then their
// tables and views) in name order, one keyset page per call under one cursor design.
import {
  COLUMN,
  LIST_CATALOG_PAGE,
  LIST_RESOURCES_PAGE,
  LIST_RESOURCES_PAGE_AS_ROLE,
} from '../db/index.js';
import { ProtocolError } from '../errors.js';
import {
  createMethod,
  PaginatedParamsSchema,
  RawJson,
  type CursorCodec,
  type MethodHandler,
  type PaginatedParams,
} from '../protocol/index.js';
import { cacheHints } from './cache-hints.js';
import { catalogUri } from './catalog.js';
import { decodeAfterId, keysetPage, type ListDependencies } from './keyset.js';
import { renderResource } from './render.js';

const COLLECTION = 'resources';
/** The first key of a catalog-phase cursor; stored-phase cursors hold one numeric id. */
const CATALOG = 'pg';

type Position =
  | { readonly phase: 'stored'; readonly afterId: string }
  | {
      readonly phase: 'catalog';
      readonly schema: string;
      readonly relation: string;
    };

function decodePosition(
  cursors: CursorCodec,
  cursor: string | undefined,
): Position {
  if (cursor !== undefined) {
    const position = cursors.decode(cursor);
    const [first, schema, relation] = position.k;
    if (position.c === COLLECTION && first === CATALOG) {
      if (
        position.k.length !== 3 ||
        typeof schema !== 'string' ||
        typeof relation !== 'string'
      )
        throw new ProtocolError('INVALID_CURSOR', 'Invalid cursor.');
      return { phase: 'catalog', schema, relation };
    }
  }
  return {
    phase: 'stored',
    afterId: decodeAfterId(cursors, cursor, COLLECTION),
  };
}

type CatalogRow = (typeof LIST_CATALOG_PAGE)['row'] & {};

/** A schema (a directory) or a table or view, as a Resource. */
function renderCatalogEntry(row: CatalogRow): string {
  const schemaEntry = row.relation === '';
  const resource: Record<string, string> = schemaEntry
    ? {
        uri: catalogUri(row.database, row.schema),
        name: row.schema,
        title: `Schema ${row.schema}`,
        mimeType: 'inode/directory',
      }
    : {
        uri: catalogUri(row.database, row.schema, row.relation),
        name: `${row.schema}.${row.relation}`,
        title: `${row.schema}.${row.relation} (${row.kind ?? 'relation'})`,
        mimeType: 'text/markdown',
      };
  if (row.comment !== null) resource['description'] = row.comment;
  return JSON.stringify(resource);
}

/**
 * Every stored resource (keyset on pgmcp.resources.id), then every catalog entry the role can
 * see (keyset on schema and relation name). A page that ends the stored resources is filled from
 * the catalog; the cursor says which phase and where.
 */
export function createListResourcesMethod(
  deps: ListDependencies,
): MethodHandler<PaginatedParams> {
  return createMethod({
    params: PaginatedParamsSchema,
    async handle(params, ctx) {
      const position = decodePosition(deps.cursors, params.cursor);
      const items: string[] = [];
      let next: string[] | undefined;
      let catalogFrom: { schema: string; relation: string } | undefined;
      if (position.phase === 'stored') {
        const { page, more } = await keysetPage(
          deps.db,
          ctx,
          // Without a role the request runs as the login, usually a superuser that RLS does not
          // apply to: it walks the table. A request role walks its own rows (db/queries.ts).
          ctx.principal.role === null
            ? LIST_RESOURCES_PAGE
            : LIST_RESOURCES_PAGE_AS_ROLE,
          { afterId: position.afterId },
          deps.pageSize,
        );
        for (const row of page) items.push(renderResource(row));
        const last = page.at(-1);
        if (more && last !== undefined) next = [last[COLUMN.id]];
        else catalogFrom = { schema: '', relation: '' };
      } else {
        catalogFrom = { schema: position.schema, relation: position.relation };
      }
      if (catalogFrom !== undefined) {
        const { page, more } = await keysetPage(
          deps.db,
          ctx,
          LIST_CATALOG_PAGE,
          {
            afterSchema: catalogFrom.schema,
            afterRelation: catalogFrom.relation,
          },
          deps.pageSize - items.length,
        );
        for (const row of page) items.push(renderCatalogEntry(row));
        const last = page.at(-1);
        if (more)
          next =
            last === undefined
              ? [CATALOG, catalogFrom.schema, catalogFrom.relation]
              : [CATALOG, last.schema, last.relation];
      }
      return {
        resources: new RawJson(`[${items.join(',')}]`),
        ...(next === undefined
          ? {}
          : { nextCursor: deps.cursors.encode({ c: COLLECTION, k: next }) }),
        ...cacheHints('list', ctx.principal),
      };
    },
  });
}
