// A relation described for an LLM in Markdown: one DDL-like line per column with its value hints,
// keys, join conditions, row security as the caller meets it; text written by others (comments,
// values) inside data blocks (data-block.ts).
import { catalogUri } from './catalog-uri.js';
import { dataBlock, DATA_NOTICE } from './data-block.js';
import type { RelationFacts, ValueHints } from './relation-facts.js';

/** Longest value shown in a hint; longer ones are cut with "…". */
const MAX_VALUE_CHARS = 40;

/** An LLM-friendly description: what the relation holds, its columns, keys and indexes. */
export function renderMarkdown(facts: RelationFacts): string {
  const lines = [
    `# ${facts.schema}.${facts.name} (${facts.kind})`,
    '',
    `Database \`${facts.database}\`, schema \`${facts.schema}\`; ${sizeLine(facts)}`,
    `JSON form: ${catalogUri({ database: facts.database, schema: facts.schema, relation: facts.name }, 'json')}`,
    DATA_NOTICE,
    '',
  ];
  if (facts.comment !== null) lines.push(dataBlock(facts.comment));
  lines.push(
    '## Columns',
    '',
    dataBlock(facts.columns.map(columnLine).join('\n')),
  );
  const section = (title: string, items: string[]): void => {
    if (items.length === 0) return;
    lines.push(`## ${title}`, '', ...items.map((item) => `- ${item}`), '');
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
  section('Join conditions', facts.joins);
  section('Unique constraints', of('unique'));
  section('Check constraints', [...of('check'), ...of('exclusion')]);
  section('Indexes', facts.indexes);
  lines.push('## Row security', '', rowSecurity(facts));
  return `${lines.join('\n').trimEnd()}\n`;
}

/** Rows, size and freshness; withheld under row-level security (they would count hidden rows). */
function sizeLine(facts: RelationFacts): string {
  if (facts.rowSecurityActive)
    return 'row count and size withheld: row-level security limits which rows you see.';
  const parts = [
    facts.approximateRows === null
      ? 'row count not known yet (never analyzed)'
      : `about ${facts.approximateRows} rows`,
  ];
  if (facts.sizeBytes !== null)
    parts.push(`${kilobytes(facts.sizeBytes)} on disk`);
  parts.push(
    facts.lastAnalyzed === null
      ? 'never analyzed'
      : `last analyzed ${facts.lastAnalyzed}`,
  );
  return `${parts.join(', ')}.`;
}

function kilobytes(bytes: number): string {
  return bytes < 1024 * 1024
    ? `${Math.ceil(bytes / 1024)} kB`
    : `${Math.round(bytes / (1024 * 1024))} MB`;
}

/** One column, DDL-like: name, type, constraints, default; then its comment and value hints. */
function columnLine(column: RelationFacts['columns'][number]): string {
  const type =
    column.enumValues === null
      ? column.type
      : `${column.type} (one of: ${column.enumValues.join(', ')})`;
  const parts = [column.name, type];
  if (!column.nullable) parts.push('not null');
  if (column.identity !== null) parts.push(`identity ${column.identity}`);
  else if (column.generated !== null)
    parts.push(`generated always as (${column.generated})`);
  else if (column.default !== null) parts.push(`default ${column.default}`);
  const notes: string[] = [];
  if (column.comment !== null) notes.push(column.comment);
  if (column.values !== undefined && column.values !== null)
    notes.push(valueHint(column.values));
  const line =
    notes.length === 0
      ? parts.join(' ')
      : `${parts.join(' ')} -- ${notes.join('; ')}`;
  return line.replace(/\s*[\r\n]+\s*/g, ' ');
}

/** A column's values in a few words: the common ones when few, else distinct count, nulls, range. */
function valueHint(hints: ValueHints): string {
  const from =
    hints.source === 'sample'
      ? `in a sample of ${hints.sampledRows ?? 0} rows`
      : 'by statistics';
  const parts: string[] = [];
  // Few values that repeat: pg_stats keeps common values only when they repeat; a sample shows
  // every value, so it must hold each about twice.
  const few =
    hints.common !== null &&
    hints.distinct !== null &&
    hints.distinct > 0 &&
    hints.distinct <= 10 &&
    (hints.source === 'statistics' ||
      hints.distinct * 2 <= (hints.sampledRows ?? 0));
  if (few && hints.common !== null)
    parts.push(
      `values ${hints.common.map((common) => `${value(common.value)} ${percent(common.frequency)}`).join(', ')}`,
    );
  else {
    if (hints.distinct !== null) parts.push(`${hints.distinct} distinct`);
    if (hints.min !== null && hints.max !== null)
      parts.push(`${value(hints.min)} … ${value(hints.max)}`);
  }
  if (hints.nullFraction > 0) parts.push(`${percent(hints.nullFraction)} null`);
  return `${parts.join(', ')} (${from})`;
}

function value(text: string): string {
  return text.length > MAX_VALUE_CHARS
    ? `'${text.slice(0, MAX_VALUE_CHARS)}…'`
    : `'${text}'`;
}

function percent(fraction: number): string {
  return `${Math.round(fraction * 100)}%`;
}

/** Row security as the caller meets it: on/forced, and the SELECT policies that apply to it. */
function rowSecurity(facts: RelationFacts): string {
  if (!facts.rowLevelSecurity)
    return 'Row-level security is off: you read every row your privileges allow.';
  const state = `Row-level security is on${facts.forceRowLevelSecurity ? ' (forced, even for the owner)' : ''}${facts.rowSecurityActive ? '' : ', but does not filter your reads (you own the table or bypass it)'}.`;
  if (facts.policies.length === 0)
    return `${state} No policy lets you read rows: every query returns none.\n`;
  const policies = facts.policies.map(
    (policy) =>
      `- ${policy.name} (${policy.permissive ? 'permissive' : 'restrictive'}, ${policy.command})${policy.using === null ? '' : `: rows where ${policy.using}`}`,
  );
  return `${state} Policies that decide which rows you read:\n\n${policies.join('\n')}\n`;
}
