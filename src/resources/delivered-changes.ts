// Delivered changes: what subscribers hear of a change logged in a catalog source's database (a
// stored resource's URI, a collection row's URI, a schema change's catalog URIs, or only the lists).
import {
  findCollection,
  inScope,
  isSensitiveTable,
  type CatalogSource,
} from './catalog-source.js';
import { catalogUri, rowUri } from './catalog-uri.js';

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
        uri: rowUri(source.name, { schema, table }, key),
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
    catalogUri({ database: source.name, schema }),
    catalogUri({ database: source.name, schema, relation: undefined }, 'json'),
  ];
  if (table !== undefined)
    uris.push(
      catalogUri({ database: source.name, schema, relation: table }),
      catalogUri({ database: source.name, schema, relation: table }, 'json'),
    );
  return uris.map((uri, index) => ({
    seq: change.seq,
    uri,
    kind: 'updated',
    // One list_changed per change is enough.
    listed: index === 0,
  }));
}
