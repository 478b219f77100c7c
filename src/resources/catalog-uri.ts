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
  /** A schema read's continuation (?after=): the directory starts after this entry's name. */
  readonly after: string | undefined;
}

/**
 * pg://{database}: the navigator, or, with ?changes_since=, the changes since a token (an empty
 * token asks only for the current one).
 */
export interface DatabaseAddress {
  readonly database: string;
  readonly format: 'markdown' | 'json';
  readonly changesSince: string | undefined;
}

export function isCatalogUri(uri: string): boolean {
  return uri.startsWith('pg://');
}

const CATALOG_URI =
  /^pg:\/\/([^/?#]+)(?:\/([^/?#]+)(?:\/([^/?#]+)(?:\/rows\/([^/?#]*))?)?)?(?:\?([^#]*))?$/;

/** The query parameters each kind of pg:// URI takes; any other makes the URI name nothing. */
const PARAMETERS = {
  database: ['format', 'changes_since'],
  schema: ['format', 'after'],
  relation: ['format'],
  row: ['format'],
} as const;

/**
 * Parse a pg:// URI (already through validateResourceUri). Identifiers are percent-encoded as
 * encodeURIComponent does, so "/", "%", spaces and non-ASCII survive; undefined when the URI does
 * not name a database, schema or relation (unknown or repeated query parameters included).
 */
export function parseCatalogUri(
  uri: string,
): CatalogAddress | DatabaseAddress | undefined {
  const match = CATALOG_URI.exec(uri);
  if (match === null) return undefined;
  const [, database, schema, relation, key, query] = match;
  const kind =
    key !== undefined
      ? 'row'
      : relation !== undefined
        ? 'relation'
        : schema !== undefined
          ? 'schema'
          : 'database';
  const parameters = parseQuery(query, PARAMETERS[kind]);
  const names = [database, schema, relation].map((part) =>
    part === undefined ? undefined : decodeUriComponent(part),
  );
  const rowKey = key === undefined ? undefined : decodeRowKey(key);
  // A malformed escape (or a NUL) names nothing.
  if (
    parameters === undefined ||
    names[0] === undefined ||
    (schema !== undefined && names[1] === undefined) ||
    (relation !== undefined && names[2] === undefined) ||
    rowKey === null ||
    (parameters['format'] !== undefined && parameters['format'] !== 'json')
  )
    return undefined;
  const format = parameters['format'] === 'json' ? 'json' : 'markdown';
  if (names[1] === undefined)
    return {
      database: names[0],
      format,
      changesSince: parameters['changes_since'],
    };
  return {
    database: names[0],
    schema: names[1],
    relation: names[2],
    rowKey,
    format,
    after: parameters['after'],
  };
}

/** Whether a parsed pg:// URI names the database itself (pg://{database}). */
export function isDatabaseAddress(
  address: CatalogAddress | DatabaseAddress,
): address is DatabaseAddress {
  return !('schema' in address);
}

/** A query string's parameters, percent-decoded; undefined when one is unknown, repeated or malformed. */
function parseQuery(
  query: string | undefined,
  allowed: readonly string[],
): Record<string, string> | undefined {
  const parameters: Record<string, string> = {};
  if (query === undefined) return parameters;
  for (const pair of query.split('&')) {
    const equals = pair.indexOf('=');
    const name = equals === -1 ? pair : pair.slice(0, equals);
    const value = decodeUriComponent(
      equals === -1 ? '' : pair.slice(equals + 1),
    );
    if (!allowed.includes(name) || name in parameters || value === undefined)
      return undefined;
    parameters[name] = value;
  }
  return parameters;
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
  { schema, table }: { readonly schema: string; readonly table: string },
  key: readonly string[],
): string {
  return `${catalogUri({ database, schema, relation: table })}/rows/${encodeRowKey(key)}`;
}

/** pg://{database}, optionally with query parameters (in the order given, percent-encoded). */
export function databaseUri(
  database: string,
  parameters: Readonly<Record<string, string>> = {},
): string {
  const query = Object.entries(parameters)
    .map(([name, value]) => `${name}=${encodeURIComponent(value)}`)
    .join('&');
  return `pg://${encodeURIComponent(database)}${query === '' ? '' : `?${query}`}`;
}

/** A schema read continuing after the entry `after` (?after=), optionally in JSON. */
export function schemaPageUri(
  database: string,
  {
    schema,
    format = 'markdown',
  }: { readonly schema: string; readonly format?: 'markdown' | 'json' },
  after: string,
): string {
  const uri = `${catalogUri({ database, schema })}?${format === 'json' ? 'format=json&' : ''}after=${encodeURIComponent(after)}`;
  return uri;
}

/** What a catalog URI names: a database's schema, or a relation in it. */
export interface CatalogUriParts {
  readonly database: string;
  readonly schema: string;
  readonly relation?: string | undefined;
}

/** The canonical URI of a schema (relation undefined) or relation, optionally its JSON form. */
export function catalogUri(
  { database, schema, relation }: CatalogUriParts,
  format: 'markdown' | 'json' = 'markdown',
): string {
  let uri = `pg://${encodeURIComponent(database)}/${encodeURIComponent(schema)}`;
  if (relation !== undefined) uri += `/${encodeURIComponent(relation)}`;
  return format === 'json' ? `${uri}?format=json` : uri;
}
