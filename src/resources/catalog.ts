// Catalog resources: the company database's tables and views as pg://{database}/{schema}/{table},
// described for an LLM in Markdown (default) or as JSON (?format=json), read from pg_catalog in
// the caller's request transaction, so a relation the role holds no privilege on reads exactly
// like one that does not exist.
import type { Principal } from '../auth/index.js';
import {
  DESCRIBE_RELATION,
  runRequestQuery,
  type DatabaseHandle,
} from '../db/index.js';

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

/** A catalog URI, split: pg://{database}/{schema}/{relation}, identifiers percent-decoded. */
export interface CatalogAddress {
  readonly database: string;
  readonly schema: string;
  readonly relation: string;
  readonly format: 'markdown' | 'json';
}

export function isCatalogUri(uri: string): boolean {
  return uri.startsWith('pg://');
}

/**
 * Parse a pg:// URI (already through validateResourceUri). Identifiers are percent-encoded as
 * encodeURIComponent does, so "/", "%", spaces and non-ASCII survive; undefined when the URI does
 * not name a relation.
 */
export function parseCatalogUri(uri: string): CatalogAddress | undefined {
  const match = /^pg:\/\/([^/?#]+)\/([^/?#]+)\/([^/?#]+)(\?format=json)?$/.exec(
    uri,
  );
  if (match === null) return undefined;
  try {
    return {
      database: decodeURIComponent(match[1] as string),
      schema: decodeURIComponent(match[2] as string),
      relation: decodeURIComponent(match[3] as string),
      format: match[4] === undefined ? 'markdown' : 'json',
    };
  } catch {
    return undefined; // a malformed escape names nothing
  }
}

/** The canonical URI of a relation (optionally its JSON form). */
export function catalogUri(
  database: string,
  schema: string,
  relation: string,
  format: 'markdown' | 'json' = 'markdown',
): string {
  const base = `pg://${encodeURIComponent(database)}/${encodeURIComponent(schema)}/${encodeURIComponent(relation)}`;
  return format === 'json' ? `${base}?format=json` : base;
}

/** The contents JSON of one catalog resource, or none. */
export async function readCatalog(
  db: DatabaseHandle,
  uri: string,
  principal: Principal,
  signal: AbortSignal,
): Promise<string[]> {
  const address = parseCatalogUri(uri);
  if (address === undefined) return [];
  const rows = await runRequestQuery(db, principal, signal, DESCRIBE_RELATION, {
    database: address.database,
    schema: address.schema,
    relation: address.relation,
  });
  const description = rows[0]?.description;
  if (description === undefined) return [];
  if (address.format === 'json')
    return [
      JSON.stringify({ uri, mimeType: 'application/json', text: description }),
    ];
  const facts = JSON.parse(description) as RelationFacts;
  return [
    JSON.stringify({
      uri,
      mimeType: 'text/markdown',
      text: renderMarkdown(facts),
    }),
  ];
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
