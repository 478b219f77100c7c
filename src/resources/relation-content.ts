// A relation's description as a resource content: its facts from pg_catalog (db/catalog-statements.ts)
// as JSON, or described for an LLM in Markdown.
import { catalogUri } from './catalog-uri.js';
import type { CatalogSource } from './rows.js';

export /** The facts DESCRIBE_RELATION returns (db/catalog-statements.ts). */
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

export /** A relation as DESCRIBE_RELATION returned it, and its facts under the configured name. */
interface DescribedRelation {
  readonly json: string;
  readonly facts: RelationFacts;
}

/** Descriptions with their facts; URIs carry the configured name, which may differ from the database's own. */
export function described(
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
export function relationContent(
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
