// Row collections: rows of the tables a config file names, as pg://{database}/{schema}/{table}/rows/{key}
// (JSON; bytea as base64), read in the caller's request transaction so the table's own GRANTs and
// row-level security decide; optionally listed after the catalog, keyset on the primary key.
import type { Principal } from '../auth/index.js';
import type {
  CatalogScope,
  CollectionConfig,
  SensitiveTable,
} from './collection-settings.js';
import {
  currentDatabaseName,
  LIST_COLLECTION_ROWS,
  READ_COLLECTION_ROW,
  runRequestQuery,
  type DatabaseHandle,
} from '../db/index.js';
import { ProtocolError } from '../errors.js';
import { catalogUri, encodeRowKey, rowUri } from './catalog-uri.js';
import { keysetPage } from './keyset.js';
import { RolePageMemo } from './role-page-memo.js';

/** One database's catalog and collections, under the URI authority it is configured with. */
export interface CatalogSource {
  /** The URI authority: pg://{name}/… */
  readonly name: string;
  /** What current_database() says there (the authority may be another name). */
  readonly databaseName: string;
  readonly db: DatabaseHandle;
  readonly scope: CatalogScope;
  readonly collections: readonly CollectionConfig[];
  /** Tables of this database whose rows need a person's consent (consent.ts). */
  readonly sensitive: readonly SensitiveTable[];
  /**
   * Per role: whether its catalog has any entry, as last seen, until when. The page that ends
   * the stored resources needs only that (is there a next page?), and asking the catalog costs
   * as much as the page itself. Cleared when the source's feed reports a schema change.
   */
  readonly lookahead: Map<
    string,
    { readonly any: boolean; readonly until: number }
  >;
  /** Navigators per role and format (navigator.ts); kept only while a change feed can clear them. */
  readonly navigators: RolePageMemo<string>;
}

/** How long a remembered lookahead holds without a schema change (a database without event triggers). */
export const LOOKAHEAD_TTL_MS = 30_000;

/**
 * A database as a catalog source, named (its URI authority) `name` or, by default, by what
 * current_database() says; every schema and no collections unless configured.
 */
export async function catalogSource(
  db: DatabaseHandle,
  options: {
    name?: string | undefined;
    scope?: CatalogScope;
    collections?: readonly CollectionConfig[];
    sensitive?: readonly SensitiveTable[];
  } = {},
): Promise<CatalogSource> {
  const databaseName = await currentDatabaseName(db);
  return {
    name: options.name ?? databaseName,
    databaseName,
    db,
    scope: options.scope ?? { include: null, exclude: [] },
    collections: options.collections ?? [],
    sensitive: options.sensitive ?? [],
    lookahead: new Map(),
    navigators: new RolePageMemo<string>({
      maxEntries: 1000,
      maxAgeMs: LOOKAHEAD_TTL_MS,
    }),
  };
}

/** Whether the catalog shows `schema` (config file "catalog"). */
export function inScope(scope: CatalogScope, schema: string): boolean {
  return (
    (scope.include === null || scope.include.includes(schema)) &&
    !scope.exclude.includes(schema)
  );
}

/** Whether rows of `schema`.`table` need a person's consent (the table or any of its columns is marked). */
export function isSensitiveTable(
  source: CatalogSource,
  schema: string,
  table: string,
): boolean {
  return source.sensitive.some(
    (entry) => entry.schema === schema && entry.table === table,
  );
}

export function findCollection(
  source: CatalogSource,
  schema: string,
  table: string,
): CollectionConfig | undefined {
  return source.collections.find(
    (collection) => collection.schema === schema && collection.table === table,
  );
}

/**
 * The contents JSON of one row, or none: no such collection, no such row, or one the role may not
 * see. A key value that does not convert to its column's type is INVALID_PARAMS (-32602).
 */
export async function readRow(
  source: CatalogSource,
  uri: string,
  schema: string,
  table: string,
  key: readonly string[],
  principal: Principal,
  cancellation: { readonly aborted: boolean },
): Promise<string[]> {
  if (findCollection(source, schema, table) === undefined) return [];
  const rows = await runRequestQuery(
    source.db,
    principal,
    cancellation,
    READ_COLLECTION_ROW,
    { schema, table, key },
  );
  return rows.map((row) =>
    JSON.stringify({ uri, mimeType: 'application/json', text: row.content }),
  );
}

/** A listed row as a Resource. */
function renderRow(
  source: CatalogSource,
  collection: CollectionConfig,
  key: readonly string[],
  title: string | null,
): string {
  const resource: Record<string, string> = {
    uri: rowUri(source.name, collection.schema, collection.table, key),
    name: `${collection.schema}.${collection.table}/${encodeRowKey(key)}`,
    mimeType: 'application/json',
  };
  if (title !== null) resource['title'] = title;
  return JSON.stringify(resource);
}

/** Where a listing of rows stands: in the collection schema.table, after the key `after` (null: from its start). */
export interface RowsPosition {
  readonly schema: string;
  readonly table: string;
  readonly after: readonly string[] | null;
}

/**
 * Fill up to `room` items from the listed collections in config order, starting at `from` (the
 * first listed collection when undefined). Returns the items and where the next page starts, or
 * undefined when every listed collection is done. A cursor naming a collection no longer listed
 * is an invalid cursor.
 */
export async function listRows(
  source: CatalogSource,
  ctx: { readonly principal: Principal; readonly aborted: boolean },
  from: RowsPosition | undefined,
  room: number,
): Promise<{ items: string[]; next: RowsPosition | undefined }> {
  const listed = source.collections.filter((collection) => collection.list);
  let index = 0;
  let after: readonly string[] | null = null;
  if (from !== undefined) {
    index = listed.findIndex(
      (collection) =>
        collection.schema === from.schema && collection.table === from.table,
    );
    if (index === -1)
      throw new ProtocolError('INVALID_CURSOR', 'Invalid cursor.');
    after = from.after;
  }
  const items: string[] = [];
  for (; index < listed.length; index += 1, after = null) {
    const collection = listed[index] as CollectionConfig;
    const { page, more } = await keysetPage(
      source.db,
      ctx,
      LIST_COLLECTION_ROWS,
      {
        schema: collection.schema,
        table: collection.table,
        after,
        titleColumn: collection.titleColumn ?? null,
      },
      room - items.length,
    );
    for (const row of page)
      items.push(renderRow(source, collection, row.key, row.title));
    if (more) {
      const last = page.at(-1);
      return {
        items,
        next: {
          schema: collection.schema,
          table: collection.table,
          after: last === undefined ? after : last.key,
        },
      };
    }
  }
  return { items, next: undefined };
}

/** A logged change, as the change feed reads it (db ChangeRow plus detail). */
export interface LoggedChange {
  readonly seq: string;
  readonly uri: string | null;
  readonly kind: 'created' | 'updated' | 'deleted' | 'schema';
  readonly detail: unknown;
}

/** A change as the fan-out delivers it: one URI (or none: only lists may have changed). */
export interface DeliveredChange {
  readonly seq: string;
  readonly uri: string | null;
  readonly kind: 'created' | 'updated' | 'deleted' | 'schema';
  /** Whether the change can alter resources/list (false for rows of unlisted collections). */
  readonly listed: boolean;
  /** A row of a table marked sensitive: heard of only after the caller's consent (consent.ts). */
  readonly sensitive?: boolean;
}

/**
 * What subscribers hear of a logged change: a stored resource's URI as logged; a row of an
 * exposed table as its row URI (when its table is a configured collection); a schema change as
 * the schema's and the table's catalog URIs, Markdown and JSON forms (within the catalog's
 * scope), plus the list. GRANT and REVOKE name no object: only lists may have changed.
 */
export function deliveredChanges(
  source: CatalogSource,
  change: LoggedChange,
): DeliveredChange[] {
  if (change.uri !== null)
    return [
      { seq: change.seq, uri: change.uri, kind: change.kind, listed: true },
    ];
  const detail = (change.detail ?? {}) as {
    schema?: unknown;
    table?: unknown;
    key?: unknown;
  };
  const schema = typeof detail.schema === 'string' ? detail.schema : undefined;
  const table = typeof detail.table === 'string' ? detail.table : undefined;
  if (change.kind !== 'schema') {
    if (
      schema === undefined ||
      table === undefined ||
      !Array.isArray(detail.key)
    )
      return [];
    const collection = findCollection(source, schema, table);
    if (collection === undefined) return [];
    const key = detail.key.map(String);
    return [
      {
        seq: change.seq,
        uri: rowUri(source.name, schema, table, key),
        kind: change.kind,
        listed: collection.list,
        sensitive: isSensitiveTable(source, schema, table),
      },
    ];
  }
  if (schema === undefined)
    return [{ seq: change.seq, uri: null, kind: 'schema', listed: true }];
  if (!inScope(source.scope, schema)) return [];
  const uris = [
    catalogUri(source.name, schema),
    catalogUri(source.name, schema, undefined, 'json'),
  ];
  if (table !== undefined)
    uris.push(
      catalogUri(source.name, schema, table),
      catalogUri(source.name, schema, table, 'json'),
    );
  return uris.map((uri, index) => ({
    seq: change.seq,
    uri,
    kind: 'updated',
    // One list_changed per change is enough.
    listed: index === 0,
  }));
}
