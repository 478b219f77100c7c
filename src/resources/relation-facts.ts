// What pgmcp knows of one relation: the facts DESCRIBE_RELATION returns (resources/statements/catalog-statements.ts)
// and the value hints added to its columns. relation-content.ts builds them, describe-markdown.ts
// renders them.

/** What pg_stats says of a column (DESCRIBE_RELATION's "statistics"). */
export interface ColumnStatistics {
  readonly nullFraction: number;
  readonly distinct: number;
  readonly common: string[] | null;
  readonly frequencies: number[] | null;
  readonly bounds: string[] | null;
}

/** A column's value hints, from pg_stats or a sample read as the caller. */
export interface ValueHints {
  readonly source: 'statistics' | 'sample';
  /** Distinct values (estimated from statistics; counted in the sample). */
  readonly distinct: number | null;
  readonly nullFraction: number;
  /** The most common values with their share of rows (0–1). */
  readonly common: { value: string; frequency: number }[] | null;
  readonly min: string | null;
  readonly max: string | null;
  /** Rows in the sample (source "sample"). */
  readonly sampledRows?: number;
}

/** The facts DESCRIBE_RELATION returns (resources/statements/catalog-statements.ts), value hints added. */
export interface RelationFacts {
  database: string;
  schema: string;
  name: string;
  kind: string;
  comment: string | null;
  rowLevelSecurity: boolean;
  forceRowLevelSecurity: boolean;
  /** Whether row-level security filters what this role reads (row counts and sizes are then withheld). */
  rowSecurityActive: boolean;
  approximateRows: number | null;
  sizeBytes: number | null;
  lastAnalyzed: string | null;
  policies: {
    name: string;
    command: string;
    permissive: boolean;
    using: string | null;
  }[];
  joins: string[];
  statistics?: Record<string, ColumnStatistics> | null;
  columns: {
    name: string;
    type: string;
    nullable: boolean;
    default: string | null;
    generated: string | null;
    identity: string | null;
    comment: string | null;
    enumValues: string[] | null;
    values?: ValueHints | null;
  }[];
  constraints: { name: string; type: string; definition: string }[];
  referencedBy: { name: string; table: string; definition: string }[];
  indexes: string[];
}
