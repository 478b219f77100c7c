// The search tool's collections (tools/ SearchableCollection), built from the databases' catalog
// sources with resources/ naming each row: the two folders meet only here.
import {
  encodeRowKey,
  isSensitiveTable,
  rowUri,
  type CatalogSource,
} from '../resources/index.js';
import type { SearchableCollection } from '../tools/index.js';

/**
 * The collections with searchable columns, in every database. Tables whose rows need a person's
 * consent are left out: search never shows a snippet of them.
 */
export function searchableCollections(
  sources: readonly CatalogSource[],
): SearchableCollection[] {
  return sources.flatMap((source) =>
    source.collections.flatMap(({ schema, table, searchable, titleColumn }) =>
      searchable === undefined ||
      searchable.length === 0 ||
      isSensitiveTable(source, schema, table)
        ? []
        : [
            {
              db: source.db,
              schema,
              table,
              columns: searchable,
              titleColumn,
              rowUri: (key: readonly string[]) =>
                rowUri(source.name, { schema, table }, key),
              rowName: (key: readonly string[]) =>
                `${schema}.${table}/${encodeRowKey(key)}`,
            },
          ],
    ),
  );
}
