// What a database's catalog shows and which of its tables serve rows: plain settings the
// composition root fills in from the config file (resources/ knows no config).

/** A table whose rows are resources pg://{database}/{schema}/{table}/rows/{key}. */
export interface CollectionConfig {
  /** The database's name (its URI authority); undefined: the main database. */
  readonly database: string | undefined;
  readonly schema: string;
  readonly table: string;
  /** Whether resources/list lists its rows (after the catalog). */
  readonly list: boolean;
  /** A column whose text becomes each listed row's title. */
  readonly titleColumn: string | undefined;
  /** Columns the search tool matches, in weight order (docs/tools.md "Searching rows"). */
  readonly searchable?: readonly string[] | undefined;
}

/**
 * Which schemas the catalog shows (`include`, all when null, minus `exclude`), and how it
 * describes them (config file "catalog"; docs/databases.md): budgets, value hints, policies.
 */
export interface CatalogScope {
  readonly include: readonly string[] | null;
  readonly exclude: readonly string[];
  /** The navigator's (pg://{database}) budget in bytes; 16 KB when unset. */
  readonly navigatorBytes?: number | undefined;
  /** A schema read's budget in bytes; 64 KB when unset. */
  readonly directoryBytes?: number | undefined;
  /** Whether descriptions carry value hints (default true); per table in `tables`. */
  readonly valueHints?: boolean | undefined;
  /** Whether descriptions show policies' USING expressions (default true). */
  readonly policyExpressions?: boolean | undefined;
  /** Per-table settings. */
  readonly tables?: readonly CatalogTableSettings[] | undefined;
}

/** One table's catalog settings (config file "catalog.tables"). */
export interface CatalogTableSettings {
  readonly schema: string;
  readonly table: string;
  /** false: no value hints for this table. */
  readonly valueHints?: boolean | undefined;
  /** true: no value of any column of this table is ever shown. */
  readonly sensitive?: boolean | undefined;
  /** Columns whose values are never shown. */
  readonly columns?:
    | readonly {
        readonly name: string;
        readonly sensitive?: boolean | undefined;
      }[]
    | undefined;
}

/**
 * A table whose rows are read only with a person's consent (docs/consent.md): every column when
 * `columns` is null, else a row is sensitive because it carries one of those columns.
 */
export interface SensitiveTable {
  /** The database's name (its URI authority); undefined: the main database. */
  readonly database: string | undefined;
  readonly schema: string;
  readonly table: string;
  readonly columns: readonly string[] | null;
}
