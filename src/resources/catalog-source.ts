// A catalog source: one database's catalog and row collections under the URI authority it is
// configured with, and what its scope, collections and sensitive tables say about a schema or table.
import type {
  CatalogScope,
  CollectionConfig,
  SensitiveTable,
} from './collection-settings.js';
import type { DatabaseHandle } from '../db/index.js';
import { currentDatabaseName } from './statements/catalog-statements.js';
import { RolePageMemo } from './role-page-memo.js';

/** One database's catalog and collections, under the URI authority it is configured with. */
export interface CatalogSource {
  /** The URI authority: pg://{name}/… */
  readonly name: string;
  /** What current_database() says there (the authority may be another name). */
  readonly databaseName: string;
  readonly db: DatabaseHandle;
  readonly scope: CatalogScope;
  readonly collections: readonly CollectionConfig[];
  /** Tables of this database whose rows need a person's consent (consent.ts). */
  readonly sensitive: readonly SensitiveTable[];
  /**
   * Per role: whether its catalog has any entry, as last seen, until when. The page that ends
   * the stored resources needs only that (is there a next page?), and asking the catalog costs
   * as much as the page itself. Cleared when the source's feed reports a schema change.
   */
  readonly lookahead: Map<
    string,
    { readonly any: boolean; readonly until: number }
  >;
  /** Navigators per role and format (navigator.ts); kept only while a change feed can clear them. */
  readonly navigators: RolePageMemo<string>;
}

/** How long a remembered lookahead holds without a schema change (a database without event triggers). */
export const LOOKAHEAD_TTL_MS = 30_000;

/**
 * A database as a catalog source, named (its URI authority) `name` or, by default, by what
 * current_database() says; every schema and no collections unless configured.
 */
export async function catalogSource(
  db: DatabaseHandle,
  options: {
    name?: string | undefined;
    scope?: CatalogScope;
    collections?: readonly CollectionConfig[];
    sensitive?: readonly SensitiveTable[];
  } = {},
): Promise<CatalogSource> {
  const databaseName = await currentDatabaseName(db);
  return {
    name: options.name ?? databaseName,
    databaseName,
    db,
    scope: options.scope ?? { include: null, exclude: [] },
    collections: options.collections ?? [],
    sensitive: options.sensitive ?? [],
    lookahead: new Map(),
    navigators: new RolePageMemo<string>({
      maxEntries: 1000,
      maxAgeMs: LOOKAHEAD_TTL_MS,
    }),
  };
}

/** Whether the catalog shows `schema` (config file "catalog"). */
export function inScope(scope: CatalogScope, schema: string): boolean {
  return (
    (scope.include === null || scope.include.includes(schema)) &&
    !scope.exclude.includes(schema)
  );
}

/** Whether rows of `schema`.`table` need a person's consent (the table or any of its columns is marked). */
export function isSensitiveTable(
  source: CatalogSource,
  schema: string,
  table: string,
): boolean {
  return source.sensitive.some(
    (entry) => entry.schema === schema && entry.table === table,
  );
}

export function findCollection(
  source: CatalogSource,
  schema: string,
  table: string,
): CollectionConfig | undefined {
  return source.collections.find(
    (collection) => collection.schema === schema && collection.table === table,
  );
}
