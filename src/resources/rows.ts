// Row collections: rows of the tables a config file names, as pg://{database}/{schema}/{table}/rows/{key}
// (JSON; bytea as base64), read in the caller's request transaction so the table's own GRANTs and
// row-level security decide; optionally listed after the catalog, keyset on the primary key.
import type { Principal } from '../auth/index.js';
import type { CollectionConfig } from './collection-settings.js';
import { runRequestQuery } from '../db/index.js';
import {
  LIST_COLLECTION_ROWS,
  READ_COLLECTION_ROW,
} from './statements/row-statements.js';
import { ProtocolError } from '../errors.js';
import { findCollection, type CatalogSource } from './catalog-source.js';
import { encodeRowKey, rowUri } from './catalog-uri.js';
import { keysetPage } from './keyset.js';

/** A row's URI, and the collection and primary key it names. */
export interface RowAddress {
  readonly uri: string;
  readonly schema: string;
  readonly table: string;
  readonly key: readonly string[];
}

/**
 * The contents JSON of one row, or none: no such collection, no such row, or one the role may not
 * see. A key value that does not convert to its column's type is INVALID_PARAMS (-32602).
 */
export async function readRow(
  source: CatalogSource,
  { uri, schema, table, key }: RowAddress,
  {
    principal,
    cancellation,
  }: {
    readonly principal: Principal;
    readonly cancellation: { readonly aborted: boolean };
  },
): Promise<string[]> {
  if (findCollection(source, schema, table) === undefined) return [];
  const rows = await runRequestQuery(
    { db: source.db, principal, cancellation },
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
  {
    key,
    title,
  }: { readonly key: readonly string[]; readonly title: string | null },
): string {
  const resource: Record<string, string> = {
    uri: rowUri(source.name, collection, key),
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
  {
    from,
    room,
  }: { readonly from: RowsPosition | undefined; readonly room: number },
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
    const { page, more } = await keysetPage(source.db, ctx, {
      query: LIST_COLLECTION_ROWS,
      position: {
        schema: collection.schema,
        table: collection.table,
        after,
        titleColumn: collection.titleColumn ?? null,
      },
      room: room - items.length,
    });
    for (const row of page) items.push(renderRow(source, collection, row));
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
