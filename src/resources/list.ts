// resources/list: stored resources in primary-key order, then each database's catalog (schemas,
// then their tables and views) in name order, then the rows of listed collections in key order;
// one keyset page per call under one cursor design.
import type { Principal } from '../auth/index.js';
import { LIST_CATALOG_PAGE } from './statements/catalog-statements.js';
import { LIST_RESOURCES_PAGE } from './statements/resource-statements.js';
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
import { catalogUri } from './catalog-uri.js';
import { decodeAfterId, keysetPage, type ListDependencies } from './keyset.js';
import { renderResource } from './render.js';
import { listRows, type RowsPosition } from './rows.js';
import { LOOKAHEAD_TTL_MS, type CatalogSource } from './catalog-source.js';

const COLLECTION = 'resources';
/**
 * The first key of a catalog-phase cursor ([pg, database, schema, relation]) and of a rows-phase
 * cursor ([rows, database, schema, table, ...key | null]); stored-phase cursors hold one numeric id.
 */
const CATALOG = 'pg';
const ROWS = 'rows';

type Position =
  | { readonly phase: 'stored'; readonly afterId: string }
  | {
      readonly phase: 'catalog';
      readonly source: number;
      readonly schema: string;
      readonly relation: string;
    }
  | {
      readonly phase: 'rows';
      readonly source: number;
      /** Undefined: from the first listed collection's first row. */
      readonly rows: RowsPosition | undefined;
    };

function decodePosition(
  sources: readonly CatalogSource[],
  cursors: CursorCodec,
  cursor: string | undefined,
): Position {
  if (cursor !== undefined) {
    const position = cursors.decode(cursor);
    const [first, database, schema, relation, ...key] = position.k;
    if (position.c === COLLECTION && (first === CATALOG || first === ROWS)) {
      const source = sources.findIndex((entry) => entry.name === database);
      if (
        source === -1 ||
        typeof schema !== 'string' ||
        typeof relation !== 'string' ||
        (first === CATALOG && key.length !== 0) ||
        !key.every((value) => typeof value === 'string')
      )
        throw new ProtocolError('INVALID_CURSOR', 'Invalid cursor.');
      return first === CATALOG
        ? { phase: 'catalog', source, schema, relation }
        : {
            phase: 'rows',
            source,
            rows: {
              schema,
              table: relation,
              after: key.length === 0 ? null : key,
            },
          };
    }
  }
  return {
    phase: 'stored',
    afterId: decodeAfterId(cursors, cursor, COLLECTION),
  };
}

/** The start of the `index`th database's catalog; undefined past the last. */
function catalogStart(
  sources: readonly CatalogSource[],
  index: number,
): Position | undefined {
  return index < sources.length
    ? { phase: 'catalog', source: index, schema: '', relation: '' }
    : undefined;
}

type CatalogRow = (typeof LIST_CATALOG_PAGE)['row'] & {};

/** A schema (a directory) or a table or view, as a Resource. */
function renderCatalogEntry(database: string, row: CatalogRow): string {
  const schemaEntry = row.relation === '';
  const resource: Record<string, string> = schemaEntry
    ? {
        uri: catalogUri({ database, schema: row.schema }),
        name: row.schema,
        title: `Schema ${row.schema}`,
        mimeType: 'inode/directory',
      }
    : {
        uri: catalogUri({
          database,
          schema: row.schema,
          relation: row.relation,
        }),
        name: `${row.schema}.${row.relation}`,
        title: `${row.schema}.${row.relation} (${row.kind ?? 'relation'})`,
        mimeType: 'text/markdown',
      };
  const entry: Record<string, unknown> = resource;
  if (row.comment !== null) entry['description'] = row.comment;
  if (row.lastModified !== null)
    entry['annotations'] = { lastModified: row.lastModified };
  return JSON.stringify(entry);
}

type ListRequest = {
  readonly principal: Principal;
  readonly aborted: boolean;
};
type ListSources = ListDependencies & {
  readonly sources: readonly CatalogSource[];
};

/**
 * What a phase did with the room it was given: the next page's cursor keys (the page is full, or
 * looked one row ahead and found more), or where listing goes on (undefined: nothing is left).
 */
type Step =
  | { readonly next: (string | number)[] }
  | { readonly position: Position | undefined };

/** A page being filled: the request, the room left on it, and the items so far. */
interface PageFill {
  readonly deps: ListSources;
  readonly ctx: ListRequest;
  readonly room: number;
  readonly items: string[];
}

/** Stored resources after `position.afterId`, each rendered from its listing columns' text. */
async function storedPhase(
  { deps, ctx, room, items }: PageFill,
  position: Position & { phase: 'stored' },
): Promise<Step> {
  const { page, more } = await keysetPage(deps.db, ctx, {
    query: LIST_RESOURCES_PAGE,
    position: { afterId: position.afterId },
    room,
  });
  for (const row of page) items.push(renderResource(row));
  const last = page.at(-1);
  if (more && last !== undefined) return { next: [last[0]] };
  return { position: catalogStart(deps.sources, 0) };
}

/** One database's catalog entries after `position`; then its rows. */
async function catalogPhase(
  { deps, ctx, room, items }: PageFill,
  position: Position & { phase: 'catalog' },
): Promise<Step> {
  const source = deps.sources[position.source] as CatalogSource;
  const rowsStart: Step = {
    position: { phase: 'rows', source: position.source, rows: undefined },
  };
  // No room left happens only at the catalog's start: all it asks is whether the role sees any
  // entry, which is remembered (rows.ts).
  const role = ctx.principal.role ?? '';
  const known = room === 0 ? source.lookahead.get(role) : undefined;
  if (known !== undefined && known.until > Date.now())
    return known.any ? { next: [CATALOG, source.name, '', ''] } : rowsStart;
  const { page, more } = await keysetPage(source.db, ctx, {
    query: LIST_CATALOG_PAGE,
    position: {
      afterSchema: position.schema,
      afterRelation: position.relation,
      include: source.scope.include,
      exclude: source.scope.exclude,
    },
    room,
  });
  for (const row of page) items.push(renderCatalogEntry(source.name, row));
  if (room === 0)
    source.lookahead.set(role, {
      any: more,
      until: Date.now() + LOOKAHEAD_TTL_MS,
    });
  if (!more) return rowsStart;
  const last = page.at(-1) ?? position;
  return { next: [CATALOG, source.name, last.schema, last.relation] };
}

/** One database's listed collection rows after `position`; then the next database's catalog. */
async function rowsPhase(
  { deps, ctx, room, items }: PageFill,
  position: Position & { phase: 'rows' },
): Promise<Step> {
  const source = deps.sources[position.source] as CatalogSource;
  const listed = await listRows(source, ctx, {
    from: position.rows,
    room,
  });
  items.push(...listed.items);
  if (listed.next === undefined)
    return { position: catalogStart(deps.sources, position.source + 1) };
  return {
    next: [
      ROWS,
      source.name,
      listed.next.schema,
      listed.next.table,
      ...(listed.next.after ?? []),
    ],
  };
}

/** Runs the phase `position` is in. */
function runPhase(fill: PageFill, position: Position): Promise<Step> {
  switch (position.phase) {
    case 'stored':
      return storedPhase(fill, position);
    case 'catalog':
      return catalogPhase(fill, position);
    case 'rows':
      return rowsPhase(fill, position);
  }
}

/**
 * Every stored resource (keyset on pgmcp.resources.id), then every catalog entry the role can
 * see (keyset on schema and relation name). A page that ends the stored resources is filled from
 * the catalog; the cursor says which phase and where.
 */
export function createListResourcesMethod(
  deps: ListSources,
): MethodHandler<PaginatedParams> {
  return createMethod({
    params: PaginatedParamsSchema,
    async handle(params, ctx) {
      let position: Position | undefined = decodePosition(
        deps.sources,
        deps.cursors,
        params.cursor,
      );
      const items: string[] = [];
      let next: (string | number)[] | undefined;
      // Each phase fills the room left, then says where the next page starts or hands on; with
      // no room left, a phase still looks one row ahead, so the last page has no cursor.
      while (position !== undefined && next === undefined) {
        const room = deps.pageSize - items.length;
        const step = await runPhase({ deps, ctx, room, items }, position);
        if ('next' in step) next = step.next;
        else position = step.position;
      }
      const hints = cacheHints('list', ctx.principal);
      ctx.notices.log('info', 'cache', {
        scope: hints.cacheScope,
        maxAgeMs: hints.ttlMs,
        items: items.length,
      });
      return {
        resources: new RawJson(`[${items.join(',')}]`),
        ...(next === undefined
          ? {}
          : { nextCursor: deps.cursors.encode({ c: COLLECTION, k: next }) }),
        ...hints,
      };
    },
  });
}
