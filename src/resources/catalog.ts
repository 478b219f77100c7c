// Catalog resources: the company database's tables and views as pg://{database}/{schema}/{table},
// described for an LLM in Markdown (default) or as JSON (?format=json), read from pg_catalog in
// the caller's request transaction, so a relation the role holds no privilege on reads exactly
// like one that does not exist.
import type { Principal } from '../auth/index.js';
import {
  DESCRIBE_RELATIONS,
  DESCRIBE_SCHEMA,
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

/**
 * A catalog URI, split: pg://{database}/{schema} (a schema) or pg://{database}/{schema}/{relation},
 * identifiers percent-decoded.
 */
export interface CatalogAddress {
  readonly database: string;
  readonly schema: string;
  readonly relation: string | undefined;
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
    /^pg:\/\/([^/?#]+)\/([^/?#]+)(?:\/([^/?#]+))?(\?format=json)?$/.exec(uri);
  if (match === null) return undefined;
  try {
    return {
      database: decodeURIComponent(match[1] as string),
      schema: decodeURIComponent(match[2] as string),
      relation:
        match[3] === undefined ? undefined : decodeURIComponent(match[3]),
      format: match[4] === undefined ? 'markdown' : 'json',
    };
  } catch {
    return undefined; // a malformed escape names nothing
  }
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

/**
 * The contents JSON of one catalog resource, or none. A relation is one content; a schema is a
 * directory: a short summary, then one content per table and view the role can see in it (at
 * most `maxEntries`).
 */
export async function readCatalog(
  db: DatabaseHandle,
  uri: string,
  principal: Principal,
  cancellation: { readonly aborted: boolean },
  maxEntries: number,
): Promise<string[]> {
  const address = parseCatalogUri(uri);
  if (address === undefined) return [];
  const { database, schema, relation, format } = address;
  let summary: string | undefined;
  if (relation === undefined) {
    const [found] = await runRequestQuery(
      db,
      principal,
      cancellation,
      DESCRIBE_SCHEMA,
      {
        database,
        schema,
      },
    );
    if (found === undefined) return [];
    summary = found.comment ?? '';
  }
  const rows = await runRequestQuery(
    db,
    principal,
    cancellation,
    DESCRIBE_RELATIONS,
    {
      database,
      schema,
      relation: relation ?? null,
      limit: relation === undefined ? maxEntries + 1 : 1,
    },
  );
  const relations = rows
    .slice(0, relation === undefined ? maxEntries : 1)
    .map((row) => ({
      json: row.description,
      facts: JSON.parse(row.description) as RelationFacts,
    }));
  const contents = relations.map(({ json, facts }) =>
    format === 'json'
      ? JSON.stringify({
          uri: catalogUri(facts.database, facts.schema, facts.name, 'json'),
          mimeType: 'application/json',
          text: json,
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
