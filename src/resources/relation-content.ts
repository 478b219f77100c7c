// A relation's description as a resource content: its facts from pg_catalog (resources/statements/catalog-statements.ts),
// value hints added (pg_stats, or a sample read as the caller under row-level security), as JSON
// or described for an LLM in Markdown (describe-markdown.ts).
import type { Principal } from '../auth/index.js';
import { runRequestQuery } from '../db/index.js';
import {
  SAMPLE_VALUES,
  type SampledColumn,
} from './statements/catalog-statements.js';
import { catalogUri } from './catalog-uri.js';
import { renderMarkdown } from './describe-markdown.js';
import type {
  ColumnStatistics,
  RelationFacts,
  ValueHints,
} from './relation-facts.js';
import type { CatalogSource } from './catalog-source.js';

/** A relation as DESCRIBE_RELATION returned it, under the configured name. */
export interface DescribedRelation {
  readonly facts: RelationFacts;
}

/** Most rows a sample reads. */
const SAMPLE_ROWS = 1000;

/** Descriptions with their facts; URIs carry the configured name, which may differ from the database's own. */
export function described(
  source: CatalogSource,
  rows: readonly { readonly description: string }[],
): DescribedRelation[] {
  return rows.map((row) => ({
    facts: {
      ...(JSON.parse(row.description) as RelationFacts),
      database: source.name,
    },
  }));
}

/**
 * Add value hints to each relation's columns, as the config allows (catalog.valueHints, per table
 * catalog.tables[].valueHints; never for sensitive columns): from pg_stats, which shows only what
 * the role may see, or, for a table the role reads under row-level security, from a sample read
 * as the role. Statistics are dropped from the facts either way.
 */
export async function withValueHints(
  source: CatalogSource,
  relations: readonly DescribedRelation[],
  request: {
    readonly principal: Principal;
    readonly cancellation: { readonly aborted: boolean };
  },
): Promise<void> {
  for (const { facts } of relations) {
    const statistics = facts.statistics ?? {};
    delete facts.statistics;
    const table = source.scope.tables?.find(
      (entry) => entry.schema === facts.schema && entry.table === facts.name,
    );
    // Data marked for consent (config "sensitive") never shows values either: a whole table
    // when no columns are named, else those columns.
    const consent = source.sensitive.find(
      (entry) => entry.schema === facts.schema && entry.table === facts.name,
    );
    if (
      (table?.valueHints ?? source.scope.valueHints ?? true) === false ||
      table?.sensitive === true ||
      (consent !== undefined && consent.columns === null)
    )
      continue;
    const hidden = new Set([
      ...(table?.columns ?? [])
        .filter((column) => column.sensitive === true)
        .map((column) => column.name),
      ...(consent?.columns ?? []),
    ]);
    const shown = facts.columns.filter((column) => !hidden.has(column.name));
    if (facts.rowSecurityActive) {
      const [row] = await runRequestQuery(
        {
          db: source.db,
          principal: request.principal,
          cancellation: request.cancellation,
        },
        SAMPLE_VALUES,
        {
          schema: facts.schema,
          relation: facts.name,
          columns: shown.map((column) => column.name),
          maxRows: SAMPLE_ROWS,
        },
      );
      for (const column of shown) {
        const sampled = row?.sample?.[column.name];
        if (sampled !== undefined) column.values = fromSample(sampled);
      }
      continue;
    }
    for (const column of shown) {
      const stats = statistics[column.name];
      if (stats !== undefined)
        column.values = fromStatistics(stats, facts.approximateRows);
    }
  }
}

function fromStatistics(
  stats: ColumnStatistics,
  rows: number | null,
): ValueHints {
  // n_distinct < 0 is a fraction of the rows (-1: every row distinct).
  const distinct =
    stats.distinct >= 0
      ? stats.distinct
      : rows === null
        ? null
        : Math.round(-stats.distinct * rows);
  return {
    source: 'statistics',
    distinct,
    nullFraction: stats.nullFraction,
    common:
      stats.common === null
        ? null
        : stats.common.slice(0, 5).map((value, index) => ({
            value,
            frequency: stats.frequencies?.[index] ?? 0,
          })),
    min: stats.bounds?.[0] ?? null,
    max: stats.bounds?.at(-1) ?? null,
  };
}

function fromSample(sampled: SampledColumn): ValueHints {
  const total = Math.max(1, sampled.sampled);
  return {
    source: 'sample',
    distinct: sampled.distinct,
    nullFraction: sampled.nulls / total,
    common:
      sampled.common === null
        ? null
        : sampled.common.map(({ value, count }) => ({
            value,
            frequency: count / total,
          })),
    min: sampled.min,
    max: sampled.max,
    sampledRows: sampled.sampled,
  };
}

/** One relation's content: its JSON facts, or its Markdown description. */
export function relationContent(
  source: CatalogSource,
  { facts }: DescribedRelation,
  format: 'markdown' | 'json',
): string {
  const policyExpressions = source.scope.policyExpressions ?? true;
  const shown = policyExpressions
    ? facts
    : {
        ...facts,
        policies: facts.policies.map((policy) => ({ ...policy, using: null })),
      };
  return format === 'json'
    ? JSON.stringify({
        uri: catalogUri(
          {
            database: facts.database,
            schema: facts.schema,
            relation: facts.name,
          },
          'json',
        ),
        mimeType: 'application/json',
        text: JSON.stringify(shown),
      })
    : JSON.stringify({
        uri: catalogUri({
          database: facts.database,
          schema: facts.schema,
          relation: facts.name,
        }),
        mimeType: 'text/markdown',
        text: renderMarkdown(shown),
      });
}
