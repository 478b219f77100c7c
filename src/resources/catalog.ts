// Catalog resources: the company database's tables and views as pg://{database}/{schema}/{table},
// described for an LLM in Markdown (default) or as JSON (?format=json), read from pg_catalog in
// the caller's request transaction, so a relation the role holds no privilege on reads exactly
// like one that does not exist.
import type { Principal } from '../auth/index.js';
import {
  DESCRIBE_RELATION,
  DESCRIBE_SCHEMA_RELATIONS,
  DESCRIBE_SCHEMA,
  runRequestQuery,
} from '../db/index.js';
import { inScope, readRow, type CatalogSource } from './rows.js';
import { decodeUriComponent } from './uri.js';

/** The facts DESCRIBE_RELATION returns (db/catalog.ts). */
interface RelationFacts {
  database: string;
  schema: string;
  name: string;
  kind: string;
  comment: string | null;
  rowLevelSecurity: boolean;
  approximateRows: number | null;
  columns: {
    name: string;
    type: string;
    nullable: boolean;
    default: string | null;
    generated: string | null;
    identity: string | null;
    comment: string | null;
    enumValues: string[] | null;
  }[];
  constraints: { name: string; type: string; definition: string }[];
  referencedBy: { name: string; table: string; definition: string }[];
  indexes: string[];
}

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
  return values.every((value) => value !== undefined)
    ? (values as string[])
    : null;
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

/** The source a pg:// URI's authority names, if any is configured under that name. */
export function sourceOf(
  sources: readonly CatalogSource[],
  database: string,
): CatalogSource | undefined {
  return sources.find((source) => source.name === database);
}

/**
 * The contents JSON of one catalog resource, or none. A relation is one content; a schema is a
 * directory: a short summary, then one content per table and view the role can see in it (at
 * most `maxEntries`); a row of a collection is its JSON (rows.ts).
 */
export async function readCatalog(
  sources: readonly CatalogSource[],
  uri: string,
  principal: Principal,
  cancellation: { readonly aborted: boolean },
  maxEntries: number,
): Promise<string[]> {
  const address = parseCatalogUri(uri);
  if (address === undefined) return [];
  const { database, schema, relation, format } = address;
  const source = sourceOf(sources, database);
  if (source === undefined) return [];
  if (relation !== undefined && address.rowKey !== undefined)
    return readRow(
      source,
      uri,
      schema,
      relation,
      address.rowKey,
      principal,
      cancellation,
    );
  if (!inScope(source.scope, schema)) return [];
  const db = source.db;
  let summary: string | undefined;
  if (relation === undefined) {
    const [found] = await runRequestQuery(
      db,
      principal,
      cancellation,
      DESCRIBE_SCHEMA,
      { database: source.databaseName, schema },
    );
    if (found === undefined) return [];
    summary = found.comment ?? '';
  }
  const rows =
    relation === undefined
      ? await runRequestQuery(
          db,
          principal,
          cancellation,
          DESCRIBE_SCHEMA_RELATIONS,
          { database: source.databaseName, schema, limit: maxEntries + 1 },
        )
      : await runRequestQuery(db, principal, cancellation, DESCRIBE_RELATION, {
          database: source.databaseName,
          schema,
          relation,
        });
  const relations = rows
    .slice(0, relation === undefined ? maxEntries : 1)
    .map((row) => ({
      json: row.description,
      // URIs carry the configured name, which may differ from the database's own.
      facts: {
        ...(JSON.parse(row.description) as RelationFacts),
        database: source.name,
      },
    }));
  const contents = relations.map(({ json, facts }) =>
    format === 'json'
      ? JSON.stringify({
          uri: catalogUri(facts.database, facts.schema, facts.name, 'json'),
          mimeType: 'application/json',
          text:
            source.name === source.databaseName ? json : JSON.stringify(facts),
        })
      : JSON.stringify({
          uri: catalogUri(facts.database, facts.schema, facts.name),
          mimeType: 'text/markdown',
          text: renderMarkdown(facts),
        }),
  );
  if (summary === undefined) return contents;
  const truncated = rows.length > maxEntries;
  const listing = [
    `# Schema ${schema}`,
    '',
    ...(summary === '' ? [] : [summary, '']),
    relations.length === 0
      ? 'No tables or views you can see.'
      : `${relations.length}${truncated ? '+' : ''} tables and views you can see:`,
    '',
    ...relations.map(
      ({ facts }) =>
        `- ${facts.name} (${facts.kind})${facts.comment === null ? '' : `: ${facts.comment}`} — ${catalogUri(facts.database, facts.schema, facts.name)}`,
    ),
  ].join('\n');
  const entry =
    format === 'json'
      ? JSON.stringify({
          uri,
          mimeType: 'application/json',
          text: JSON.stringify({
            database,
            schema,
            comment: summary === '' ? null : summary,
            relations: relations.map(({ facts }) => ({
              name: facts.name,
              kind: facts.kind,
            })),
            truncated,
          }),
        })
      : JSON.stringify({
          uri,
          mimeType: 'inode/directory',
          text: `${listing}\n`,
        });
  return [entry, ...contents];
}

/** An LLM-friendly description: what the relation holds, its columns, keys and indexes. */
export function renderMarkdown(facts: RelationFacts): string {
  const lines = [`# ${facts.schema}.${facts.name} (${facts.kind})`, ''];
  if (facts.comment !== null) lines.push(facts.comment, '');
  const rows =
    facts.approximateRows === null
      ? 'row count not known yet (never analyzed)'
      : `about ${facts.approximateRows} rows`;
  lines.push(
    `Database \`${facts.database}\`, schema \`${facts.schema}\`; row-level security ${facts.rowLevelSecurity ? 'on' : 'off'}; ${rows}.`,
    `JSON form: ${catalogUri(facts.database, facts.schema, facts.name, 'json')}`,
    '',
    '## Columns',
    '',
    '| column | type | nullable | default | comment |',
    '|---|---|---|---|---|',
  );
  for (const column of facts.columns) {
    const type =
      column.enumValues === null
        ? column.type
        : `${column.type} (one of: ${column.enumValues.join(', ')})`;
    const fill =
      column.identity !== null
        ? `identity (${column.identity})`
        : column.generated !== null
          ? `generated: ${column.generated}`
          : (column.default ?? '');
    lines.push(
      `| ${cell(column.name)} | ${cell(type)} | ${column.nullable ? 'yes' : 'no'} | ${cell(fill)} | ${cell(column.comment ?? '')} |`,
    );
  }
  const section = (title: string, items: string[]): void => {
    if (items.length === 0) return;
    lines.push('', `## ${title}`, '', ...items.map((item) => `- ${item}`));
  };
  const of = (type: string) =>
    facts.constraints
      .filter((constraint) => constraint.type === type)
      .map((constraint) => `${constraint.name}: ${constraint.definition}`);
  section('Primary key', of('primary key'));
  section('Foreign keys', of('foreign key'));
  section(
    'Referenced by',
    facts.referencedBy.map(
      (reference) =>
        `${reference.table} (${reference.name}): ${reference.definition}`,
    ),
  );
  section('Unique constraints', of('unique'));
  section('Check constraints', [...of('check'), ...of('exclusion')]);
  section('Indexes', facts.indexes);
  return `${lines.join('\n')}\n`;
}

/** A Markdown table cell: pipes escaped, line breaks flattened. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}
