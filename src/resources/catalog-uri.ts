// pg:// URIs of catalog entries and row-collection rows: how they are built and parsed. Both
// catalog.ts (descriptions) and rows.ts (collections, delivered changes) name resources with them.
import { decodeUriComponent } from './uri.js';

/**
 * A catalog URI, split: pg://{database}/{schema} (a schema) or pg://{database}/{schema}/{relation},
 * identifiers percent-decoded.
 */
export interface CatalogAddress {
  readonly database: string;
  readonly schema: string;
  readonly relation: string | undefined;
  /** pg://{database}/{schema}/{table}/rows/{key}: the key's values (docs/databases.md "Row collections"). */
  readonly rowKey: string[] | undefined;
  readonly format: 'markdown' | 'json';
}

export function isCatalogUri(uri: string): boolean {
  return uri.startsWith('pg://');
}

/**
 * Parse a pg:// URI (already through validateResourceUri). Identifiers are percent-encoded as
 * encodeURIComponent does, so "/", "%", spaces and non-ASCII survive; undefined when the URI does
 * not name a schema or relation.
 */
export function parseCatalogUri(uri: string): CatalogAddress | undefined {
  const match =
    /^pg:\/\/([^/?#]+)\/([^/?#]+)(?:\/([^/?#]+)(?:\/rows\/([^/?#]*))?)?(\?format=json)?$/.exec(
      uri,
    );
  if (match === null) return undefined;
  const [, database, schema, relation, key, json] = match;
  const names = [database, schema, relation].map((part) =>
    part === undefined ? undefined : decodeUriComponent(part),
  );
  const rowKey = key === undefined ? undefined : decodeRowKey(key);
  // A malformed escape (or a NUL) names nothing.
  if (
    names[0] === undefined ||
    names[1] === undefined ||
    (relation !== undefined && names[2] === undefined) ||
    rowKey === null
  )
    return undefined;
  return {
    database: names[0],
    schema: names[1],
    relation: names[2],
    rowKey,
    format: json === undefined ? 'markdown' : 'json',
  };
}

/**
 * A row key in a URI: each primary-key column's value in its PostgreSQL text form, percent-encoded
 * as encodeURIComponent does (which encodes ","), joined with ",", in key order. So "7" is
 * id 7, and "1042,3" is (order_id 1042, line_no 3); a "," inside a value is "%2C".
 */
export function encodeRowKey(key: readonly string[]): string {
  return key.map((value) => encodeURIComponent(value)).join(',');
}

/** The inverse of encodeRowKey; null when a value is malformed or holds a NUL (names no row). */
export function decodeRowKey(segment: string): string[] | null {
  const values = segment.split(',').map(decodeUriComponent);
  return values.every((value) => value !== undefined) ? values : null;
}

/** pg://{database}/{schema}/{table}/rows/{key}. */
export function rowUri(
  database: string,
  schema: string,
  table: string,
  key: readonly string[],
): string {
  return `${catalogUri(database, schema, table)}/rows/${encodeRowKey(key)}`;
}

/** The canonical URI of a schema (relation undefined) or relation, optionally its JSON form. */
export function catalogUri(
  database: string,
  schema: string,
  relation?: string,
  format: 'markdown' | 'json' = 'markdown',
): string {
  let uri = `pg://${encodeURIComponent(database)}/${encodeURIComponent(schema)}`;
  if (relation !== undefined) uri += `/${encodeURIComponent(relation)}`;
  return format === 'json' ? `${uri}?format=json` : uri;
}
