// Which relations a role sees in the catalog, as SQL fragments the features' catalog statements share
// (resources' catalog, directory and navigator reads; the prompts' table arguments).
/** Schemas that are never exposed (system and pgmcp's own). */
export const HIDDEN_SCHEMAS = `n.nspname not in ('pg_catalog', 'information_schema', 'pgmcp')
  and n.nspname !~ '^pg_(toast|temp_|toast_temp_)'`;

/** The configured catalog scope ($include: null for every schema; $exclude), as SQL on n.nspname. */
export const IN_SCOPE = (include: number, exclude: number) =>
  `($${include}::text[] is null or n.nspname = any($${include}::text[])) and not (n.nspname = any($${exclude}::text[]))`;

/** The role holds some privilege on the relation `oid` (on the table or on one of its columns). */
export const RELATION_PRIVILEGE = (oid: string): string =>
  `(has_table_privilege(${oid}, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
       or has_any_column_privilege(${oid}, 'SELECT, INSERT, UPDATE, REFERENCES'))`;

/** A relation the catalog shows (table, view, materialized view, foreign table) that the role holds a privilege on. */
export const VISIBLE_RELATION = `c.relkind in ('r', 'p', 'v', 'm', 'f') and ${HIDDEN_SCHEMAS}
  and ${RELATION_PRIVILEGE('c.oid')}`;
