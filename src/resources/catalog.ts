// Catalog resources: the company database's tables and views as pg://{database}/{schema}/{table},
// described for an LLM in Markdown (default) or as JSON (?format=json), read from pg_catalog in
// the caller's request transaction, so a relation the role holds no privilege on reads exactly
// like one that does not exist.
import type { Principal } from '../auth/index.js';
import { runRequestQuery } from '../db/index.js';
import { DESCRIBE_RELATION } from './statements/catalog-statements.js';
import {
  isDatabaseAddress,
  parseCatalogUri,
  type CatalogAddress,
} from './catalog-uri.js';
import { readChanges } from './catalog-changes.js';
import { readNavigator } from './navigator.js';
import {
  described,
  relationContent,
  withValueHints,
} from './relation-content.js';
import { readSchema } from './schema-directory.js';
import { readRow } from './rows.js';
import {
  inScope,
  isSensitiveTable,
  type CatalogSource,
} from './catalog-source.js';

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

/** Limits of a catalog read. */
export interface CatalogReadOptions {
  /** Most entries a schema read returns (PGMCP_MAX_DIRECTORY_ENTRIES). */
  readonly maxEntries: number;
  /** Most changes one read of pg://{database}?changes_since= returns (PGMCP_PAGE_SIZE). */
  readonly pageSize?: number | undefined;
  /** How long the change log keeps changes (PGMCP_CHANGE_RETENTION_SECONDS). */
  readonly changeRetentionSeconds?: number | undefined;
}

/** Whether `uri` is a row of a table marked sensitive (reading it needs consent, consent.ts). */
export function isSensitiveRowUri(
  sources: readonly CatalogSource[],
  uri: string,
): boolean {
  const address = parseCatalogUri(uri);
  if (
    address === undefined ||
    isDatabaseAddress(address) ||
    address.relation === undefined ||
    address.rowKey === undefined
  )
    return false;
  const source = sourceOf(sources, address.database);
  return (
    source !== undefined &&
    isSensitiveTable(source, address.schema, address.relation)
  );
}

/** Who reads a catalog resource, whether the request is still wanted, and the read's settings. */
export interface CatalogRead {
  readonly principal: Principal;
  readonly cancellation: { readonly aborted: boolean };
  readonly options: CatalogReadOptions;
}

/**
 * The contents JSON of one catalog resource, or none. A relation is one content; a schema is a
 * directory: a short summary, then one content per table and view the role can see in it (at
 * most `maxEntries`); a row of a collection is its JSON (rows.ts).
 */
export async function readCatalog(
  sources: readonly CatalogSource[],
  uri: string,
  { principal, cancellation, options }: CatalogRead,
): Promise<string[]> {
  const address = parseCatalogUri(uri);
  if (address === undefined) return [];
  const source = sourceOf(sources, address.database);
  if (source === undefined) return [];
  if (isDatabaseAddress(address))
    return address.changesSince === undefined
      ? readNavigator(source, { principal, cancellation }, address.format)
      : readChanges(
          source,
          { principal, cancellation },
          {
            token: address.changesSince,
            pageSize: options.pageSize ?? 100,
            retentionSeconds: options.changeRetentionSeconds ?? 86_400,
          },
        );
  const { schema, relation } = address;
  if (relation !== undefined && address.rowKey !== undefined)
    return readRow(
      source,
      { uri, schema, table: relation, key: address.rowKey },
      { principal, cancellation },
    );
  if (!inScope(source.scope, schema)) return [];
  const request = { principal, cancellation };
  return relation === undefined
    ? readSchema(
        source,
        { uri, address, maxEntries: options.maxEntries },
        request,
      )
    : readRelation(source, { ...address, relation }, request);
}

/** One relation's description; none when the role cannot see it. */
async function readRelation(
  source: CatalogSource,
  address: CatalogAddress & { readonly relation: string },
  request: CatalogRequest,
): Promise<string[]> {
  const { relation } = address;
  const rows = await runRequestQuery(
    {
      db: source.db,
      principal: request.principal,
      cancellation: request.cancellation,
    },
    DESCRIBE_RELATION,
    { database: source.databaseName, schema: address.schema, relation },
  );
  const relations = described(source, rows.slice(0, 1));
  await withValueHints(source, relations, request);
  return relations.map((entry) =>
    relationContent(source, entry, address.format),
  );
}
