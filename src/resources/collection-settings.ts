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
}

/** Which schemas the catalog shows: `include` (all when null) minus `exclude`. */
export interface CatalogScope {
  readonly include: readonly string[] | null;
  readonly exclude: readonly string[];
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
