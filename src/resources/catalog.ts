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
import {
  catalogUri,
  isDatabaseAddress,
  parseCatalogUri,
  type CatalogAddress,
} from './catalog-uri.js';
import { readNavigator } from './navigator.js';
import { inScope, readRow, type CatalogSource } from './rows.js';

/** The facts DESCRIBE_RELATION returns (db/catalog-statements.ts). */
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

/** The source a pg:// URI's authority names, if any is configured under that name. */
export function sourceOf(
  sources: readonly CatalogSource[],
  database: string,
): CatalogSource | undefined {
  return sources.find((source) => source.name === database);
}

/** The caller of a read: its role and whether it was cancelled. */
interface CatalogRequest {
  readonly principal: Principal;
  readonly cancellation: { readonly aborted: boolean };
}

/** A relation as DESCRIBE_RELATION returned it, and its facts under the configured name. */
interface DescribedRelation {
  readonly json: string;
  readonly facts: RelationFacts;
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
  const source = sourceOf(sources, address.database);
  if (source === undefined) return [];
  if (isDatabaseAddress(address))
    return readNavigator(source, { principal, cancellation }, address.format);
  const { schema, relation } = address;
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
  const request = { principal, cancellation };
  return relation === undefined
    ? readSchema(source, uri, address, request, maxEntries)
    : readRelation(source, address, relation, request);
}

/** One relation's description; none when the role cannot see it. */
async function readRelation(
  source: CatalogSource,
  address: CatalogAddress,
  relation: string,
  request: CatalogRequest,
): Promise<string[]> {
  const rows = await runRequestQuery(
    source.db,
    request.principal,
    request.cancellation,
    DESCRIBE_RELATION,
    { database: source.databaseName, schema: address.schema, relation },
  );
  return described(source, rows.slice(0, 1)).map((entry) =>
    relationContent(source, entry, address.format),
  );
}

/**
 * A schema as a directory: its summary, then up to `maxEntries` of the relations the role can
 * see in it; none when the role cannot see the schema.
 */
async function readSchema(
  source: CatalogSource,
  uri: string,
  address: CatalogAddress,
  request: CatalogRequest,
  maxEntries: number,
): Promise<string[]> {
  const { principal, cancellation } = request;
  const { schema } = address;
  const [found] = await runRequestQuery(
    source.db,
    principal,
    cancellation,
    DESCRIBE_SCHEMA,
    { database: source.databaseName, schema },
  );
  if (found === undefined) return [];
  const rows = await runRequestQuery(
    source.db,
    principal,
    cancellation,
    DESCRIBE_SCHEMA_RELATIONS,
    { database: source.databaseName, schema, limit: maxEntries + 1 },
  );
  const relations = described(source, rows.slice(0, maxEntries));
  const entry = schemaEntry(uri, address, {
    summary: found.comment ?? '',
    relations,
    truncated: rows.length > maxEntries,
  });
  return [
    entry,
    ...relations.map((relation) =>
      relationContent(source, relation, address.format),
    ),
  ];
}

/** Descriptions with their facts; URIs carry the configured name, which may differ from the database's own. */
function described(
  source: CatalogSource,
  rows: readonly { readonly description: string }[],
): DescribedRelation[] {
  return rows.map((row) => ({
    json: row.description,
    facts: {
      ...(JSON.parse(row.description) as RelationFacts),
      database: source.name,
    },
  }));
}

/** One relation's content: its JSON facts, or its Markdown description. */
function relationContent(
  source: CatalogSource,
  { json, facts }: DescribedRelation,
  format: 'markdown' | 'json',
): string {
  return format === 'json'
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
      });
}

/** A schema's own content: a directory listing in Markdown, or its JSON summary. */
function schemaEntry(
  uri: string,
  { database, schema, format }: CatalogAddress,
  listing: {
    readonly summary: string;
    readonly relations: readonly DescribedRelation[];
    readonly truncated: boolean;
  },
): string {
  const { summary, relations, truncated } = listing;
  if (format === 'json')
    return JSON.stringify({
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
    });
  const lines = [
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
  ];
  return JSON.stringify({
    uri,
    mimeType: 'inode/directory',
    text: `${lines.join('\n')}\n`,
  });
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
