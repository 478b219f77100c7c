// Row collections (migrations/0006_row_collections.sql): rows of chosen company tables, read as the
// request role through SECURITY INVOKER functions, so the table's GRANTs and RLS apply.
import type {
  AdminClient,
  DatabaseHandle,
  PreparedQuery,
} from '../../db/index.js';

/**
 * The row of schema.table whose primary key's text forms are `key`, as a JSON object of the
 * columns the role may select (bytea as base64). No row when there is none the role can see.
 */
export const READ_COLLECTION_ROW: PreparedQuery<
  { schema: string; table: string; key: readonly string[] },
  { content: string }
> = {
  name: 'pgmcp_read_collection_row',
  text: `select content from pgmcp.collection_rows($1, $2, 'read', $3::text[], 1)`,
  values: (args) => [args.schema, args.table, args.key],
};

/**
 * Up to `limit` rows of schema.table after `after` (a key's text forms; null from the start), in
 * primary-key order: each row's key and the text of `titleColumn` (null when not given).
 */
export const LIST_COLLECTION_ROWS: PreparedQuery<
  {
    schema: string;
    table: string;
    after: readonly string[] | null;
    titleColumn: string | null;
    limit: number;
  },
  { key: string[]; title: string | null }
> = {
  name: 'pgmcp_list_collection_rows',
  text: `select row_key as key, content as title
           from pgmcp.collection_rows($1, $2, 'list', $3::text[], $4, $5)`,
  values: (args) => [
    args.schema,
    args.table,
    args.after,
    args.limit,
    args.titleColumn,
  ],
};

/**
 * What start-up checks of a configured collection: the table, its key, its change capture (the
 * capture triggers, or membership of the WAL source's publication: pgmcp.table_exposed), its
 * columns, and whether an index serves search (any index over pgmcp.search_document).
 */
export async function inspectCollection(
  db: DatabaseHandle,
  schema: string,
  table: string,
): Promise<{
  exists: boolean;
  hasPrimaryKey: boolean;
  exposed: boolean;
  columns: string[];
  searchIndexed: boolean;
}> {
  const { rows } = await db.pool.query<{
    exists: boolean;
    has_primary_key: boolean;
    exposed: boolean;
    columns: string[] | null;
    search_indexed: boolean;
  }>(
    `select r.relid is not null as exists,
            exists (select from pg_index i where i.indrelid = r.relid and i.indisprimary) as has_primary_key,
            coalesce(pgmcp.table_exposed(r.relid), false) as exposed,
            array(select a.attname::text from pg_attribute a
                   where a.attrelid = r.relid and a.attnum > 0 and not a.attisdropped) as columns,
            exists (select from pg_index i
                     where i.indrelid = r.relid
                       and pg_get_indexdef(i.indexrelid) like '%search_document(%') as search_indexed
       from (select pgmcp.find_relation($1, $2) as relid) r`,
    [schema, table],
  );
  const row = rows[0];
  return {
    exists: row?.exists ?? false,
    hasPrimaryKey: row?.has_primary_key ?? false,
    exposed: row?.exposed ?? false,
    columns: row?.columns ?? [],
    searchIndexed: row?.search_indexed ?? false,
  };
}

/**
 * pgmcp expose / unexpose: install or remove change capture on `table` (a name as SQL writes it,
 * "schema.table", quoted parts allowed) the way the database's change source captures (triggers,
 * or the publication pgmcp_changes), as a role that may create triggers on it. Returns the
 * table's canonical name, or undefined when there is no such table.
 */
export async function setExposed(
  client: AdminClient,
  table: string,
  exposed: boolean,
): Promise<string | undefined> {
  let relid: string | null;
  try {
    const { rows } = await client.query<{ relid: string | null }>(
      'select to_regclass($1)::text as relid',
      [table],
    );
    relid = rows[0]?.relid ?? null;
  } catch (error) {
    if ((error as { code?: string }).code === '42602') return undefined; // not a name at all
    throw error;
  }
  if (relid === null) return undefined;
  await client.query(
    exposed
      ? 'select pgmcp.expose_table($1::regclass)'
      : 'select pgmcp.unexpose_table($1::regclass)',
    [relid],
  );
  return relid;
}
