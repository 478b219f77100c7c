// The company database's catalog, read from pg_catalog as the request role: only relations the
// role holds some privilege on, never system schemas or pgmcp's own.
import {
  HIDDEN_SCHEMAS,
  IN_SCOPE,
  RELATION_PRIVILEGE,
  VISIBLE_RELATION,
  type DatabaseHandle,
  type PreparedQuery,
} from '../../db/index.js';

// Row security as the caller meets it (the SELECT policies that apply to its roles), one join
// condition per foreign key either way (to relations it can see), and pg_stats' figures, which
// show only columns it may select of tables it reads without row-level security.
const EXTRA_FACTS = `'policies', (select coalesce(json_agg(json_build_object(
        'name', p.polname,
        'command', case p.polcmd when 'r' then 'SELECT' else 'ALL' end,
        'permissive', p.polpermissive,
        'using', pg_get_expr(p.polqual, p.polrelid)) order by p.polname), '[]')
      from pg_policy p
      where p.polrelid = c.oid and p.polcmd in ('r', '*')
        and (p.polroles = '{0}' or exists (select from unnest(p.polroles) r where pg_has_role(r, 'USAGE')))),
    'joins', (select coalesce(json_agg(j.condition order by j.condition), '[]') from (
        select (select string_agg(format('%I.%I.%I = %I.%I.%I', fn.nspname, f.relname, fa.attname,
                                         tn.nspname, t.relname, ta.attname), ' and ' order by u.ord)
                  from unnest(k.conkey, k.confkey) with ordinality u(a, b, ord)
                  join pg_attribute fa on fa.attrelid = k.conrelid and fa.attnum = u.a
                  join pg_attribute ta on ta.attrelid = k.confrelid and ta.attnum = u.b) as condition
          from pg_constraint k
          join pg_class f on f.oid = k.conrelid join pg_namespace fn on fn.oid = f.relnamespace
          join pg_class t on t.oid = k.confrelid join pg_namespace tn on tn.oid = t.relnamespace
         where k.contype = 'f' and k.conparentid = 0 and (k.conrelid = c.oid or k.confrelid = c.oid)
           and ${RELATION_PRIVILEGE('case when k.conrelid = c.oid then k.confrelid else k.conrelid end')}) j),
    'statistics', (select json_object_agg(st.attname, json_build_object(
        'nullFraction', st.null_frac, 'distinct', st.n_distinct,
        'common', st.most_common_vals::text::text[], 'frequencies', st.most_common_freqs,
        'bounds', st.histogram_bounds::text::text[]))
      from pg_stats st where st.schemaname = n.nspname and st.tablename = c.relname),`;

/**
 * A relation's facts as JSON (columns with types, nullability, defaults, comments and enum
 * values; constraints; foreign keys pointing at it; indexes; RLS; approximate rows; comment).
 * No row when the database name does not match, the relation does not exist, or the role holds
 * no privilege on it. One statement per case, not one with "$3 is null or relname = $3":
 * request statements run generic plans (db/pool.ts), and such a plan cannot look the name up in
 * pg_class's index, so one relation's description scanned every relation in the database.
 */
export const DESCRIBE_RELATION: PreparedQuery<
  { database: string; schema: string; relation: string },
  { description: string }
> = {
  name: 'pgmcp_describe_relation',
  text: describeRelations('and c.relname = $3', '1'),
  values: (args) => [args.database, args.schema, args.relation],
};

/** DESCRIBE_RELATION for every relation in the schema, at most `limit`. */
export const DESCRIBE_SCHEMA_RELATIONS: PreparedQuery<
  { database: string; schema: string; limit: number },
  { description: string }
> = {
  name: 'pgmcp_describe_schema_relations',
  text: describeRelations('', '$3'),
  values: (args) => [args.database, args.schema, args.limit],
};

/** DESCRIBE_RELATION for the named relations of the schema (a directory page's representatives). */
export const DESCRIBE_NAMED_RELATIONS: PreparedQuery<
  { database: string; schema: string; names: readonly string[] },
  { description: string }
> = {
  name: 'pgmcp_describe_named_relations',
  text: describeRelations('and c.relname = any($3::name[])', '10000'),
  values: (args) => [args.database, args.schema, args.names],
};

function describeRelations(relation: string, limit: string): string {
  return `select json_build_object(
    'database', current_database(),
    'schema', n.nspname,
    'name', c.relname,
    'kind', case c.relkind when 'r' then 'table' when 'p' then 'partitioned table' when 'v' then 'view'
                           when 'm' then 'materialized view' else 'foreign table' end,
    'comment', obj_description(c.oid, 'pg_class'),
    'rowLevelSecurity', c.relrowsecurity,
    'forceRowLevelSecurity', c.relforcerowsecurity,
    'rowSecurityActive', c.relrowsecurity and row_security_active(c.oid),
    'approximateRows', case when c.reltuples < 0 or (c.relrowsecurity and row_security_active(c.oid)) then null
                            else c.reltuples::bigint end,
    'sizeBytes', case when c.relkind in ('r', 'p', 'm') and not (c.relrowsecurity and row_security_active(c.oid))
                      then pg_total_relation_size(c.oid) end,
    'lastAnalyzed', to_char(greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid))
                            at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    ${EXTRA_FACTS}
    'columns', (select coalesce(json_agg(json_build_object(
        'name', a.attname,
        'type', format_type(a.atttypid, a.atttypmod),
        'nullable', not a.attnotnull,
        'default', case when a.attgenerated = 's' then null else pg_get_expr(d.adbin, d.adrelid) end,
        'generated', case when a.attgenerated = 's' then pg_get_expr(d.adbin, d.adrelid) end,
        'identity', case a.attidentity when 'a' then 'always' when 'd' then 'by default' end,
        'comment', col_description(a.attrelid, a.attnum),
        'enumValues', (select json_agg(e.enumlabel order by e.enumsortorder) from pg_enum e
                        where e.enumtypid = coalesce(nullif(t.typelem, 0), a.atttypid)))
        order by a.attnum), '[]')
      from pg_attribute a join pg_type t on t.oid = a.atttypid
      left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped),
    'constraints', (select coalesce(json_agg(json_build_object(
        'name', k.conname,
        'type', case k.contype when 'p' then 'primary key' when 'f' then 'foreign key' when 'u' then 'unique'
                               when 'c' then 'check' when 'x' then 'exclusion' else k.contype::text end,
        'definition', pg_get_constraintdef(k.oid)) order by k.contype, k.conname), '[]')
      from pg_constraint k where k.conrelid = c.oid),
    'referencedBy', (select coalesce(json_agg(json_build_object(
        'name', k.conname, 'table', format('%I.%I', rn.nspname, r.relname), 'definition', pg_get_constraintdef(k.oid))
        order by rn.nspname, r.relname, k.conname), '[]')
      from pg_constraint k join pg_class r on r.oid = k.conrelid join pg_namespace rn on rn.oid = r.relnamespace
      where k.confrelid = c.oid and k.contype = 'f'
        and (has_table_privilege(r.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
             or has_any_column_privilege(r.oid, 'SELECT, INSERT, UPDATE, REFERENCES'))),
    'indexes', (select coalesce(json_agg(pg_get_indexdef(i.indexrelid) order by i.indexrelid), '[]')
      from pg_index i where i.indrelid = c.oid)
  )::text as description
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
  where current_database() = $1 and n.nspname = $2 ${relation}
    and ${VISIBLE_RELATION}
  order by c.relname
  limit ${limit}`;
}

/** A schema the role may use (USAGE), with its comment; no row when hidden or unknown. */
export const DESCRIBE_SCHEMA: PreparedQuery<
  { database: string; schema: string },
  { comment: string | null }
> = {
  name: 'pgmcp_describe_schema',
  text: `select obj_description(n.oid, 'pg_namespace') as comment
           from pg_namespace n
          where current_database() = $1 and n.nspname = $2 and ${HIDDEN_SCHEMAS}
            and has_schema_privilege(n.oid, 'USAGE')`,
  values: (args) => [args.database, args.schema],
};

/**
 * Names the role can see, for completion: the database's own name, the schemas it may use, or
 * the relations in `schema` it holds a privilege on; those starting with `prefix`, in order, at
 * most `limit`.
 */
export const CATALOG_NAMES: PreparedQuery<
  {
    kind: 'database' | 'schema' | 'table';
    schema: string | null;
    prefix: string;
    limit: number;
    include: readonly string[] | null;
    exclude: readonly string[];
  },
  { name: string }
> = {
  name: 'pgmcp_catalog_names',
  text: `select current_database()::text as name
          where $1 = 'database' and starts_with(current_database(), $3)
         union all
         select n.nspname::text from pg_namespace n
          where $1 = 'schema' and ${HIDDEN_SCHEMAS} and has_schema_privilege(n.oid, 'USAGE')
            and starts_with(n.nspname, $3) and ${IN_SCOPE(5, 6)}
         union all
         select c.relname::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where $1 = 'table' and n.nspname = $2 and ${VISIBLE_RELATION} and starts_with(c.relname, $3)
            and ${IN_SCOPE(5, 6)}
         order by 1 limit $4`,
  values: (args) => [
    args.kind,
    args.schema,
    args.prefix,
    args.limit,
    args.include,
    args.exclude,
  ],
};

// Only cheap filters run before the sort; the privilege checks run above it (OFFSET 0 keeps the
// planner from pushing them down) in key order, so a page checks about as many entries as it
// returns instead of every relation after the key, and the comments are looked up only for the
// rows on the page. pg_class has no index in (namespace, name) order, so the entries after the key
// are still sorted on each page: one scan of pg_class and an in-memory sort.
/**
 * One keyset page of the catalog listing in (schema, relation) order after (`afterSchema`,
 * `afterRelation`): each schema the role may use (relation '' , so it sorts before its relations),
 * then the relations it holds a privilege on. Names compare in C order (type name), so the key is
 * stable across pages.
 */
export const LIST_CATALOG_PAGE: PreparedQuery<
  {
    afterSchema: string;
    afterRelation: string;
    limit: number;
    include: readonly string[] | null;
    exclude: readonly string[];
  },
  {
    database: string;
    schema: string;
    relation: string;
    kind: string | null;
    comment: string | null;
    /** ISO 8601 (UTC), when pgmcp saw the last schema change to it; null when it has not. */
    lastModified: string | null;
  }
> = {
  name: 'pgmcp_list_catalog_page',
  text: `select current_database()::text as database, e.schema, e.relation,
                case e.relkind when 'r' then 'table' when 'p' then 'partitioned table'
                               when 'v' then 'view' when 'm' then 'materialized view'
                               when 'f' then 'foreign table' end as kind,
                case when e.relkind is null then obj_description(e.oid, 'pg_namespace')
                     else obj_description(e.oid, 'pg_class') end as comment,
                (select to_char(k.changed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
                   from pgmcp.catalog_changes k
                  where k.schema_name = e.schema and k.table_name = e.relation) as "lastModified"
           from (
             select n.oid, n.nspname as schema, ''::name as relation, null::"char" as relkind
               from pg_namespace n
              where ${HIDDEN_SCHEMAS} and (n.nspname, ''::name) > ($1::name, $2::name)
                and ${IN_SCOPE(4, 5)}
             union all
             select c.oid, n.nspname, c.relname, c.relkind
               from pg_class c join pg_namespace n on n.oid = c.relnamespace
              where c.relkind in ('r', 'p', 'v', 'm', 'f') and ${HIDDEN_SCHEMAS}
                and n.nspname >= $1::name and (n.nspname, c.relname) > ($1::name, $2::name)
                and ${IN_SCOPE(4, 5)}
              order by 2, 3
             offset 0
           ) e
          where case when e.relkind is null then has_schema_privilege(e.oid, 'USAGE')
                     else ${RELATION_PRIVILEGE('e.oid')} end
          limit $3`,
  values: (args) => [
    args.afterSchema,
    args.afterRelation,
    args.limit,
    args.include,
    args.exclude,
  ],
};

/** What current_database() says: a catalog's URI authority unless configured otherwise. */
export async function currentDatabaseName(db: DatabaseHandle): Promise<string> {
  const { rows } = await db.pool.query<{ name: string }>(
    'select current_database() as name',
  );
  return rows[0]?.name ?? '';
}

/**
 * Value hints of a table the role reads under row-level security: a bounded sample read as the
 * role (pgmcp.sample_values, SECURITY INVOKER, migration 0018), per column of `columns` it may
 * select: rows sampled, nulls, distinct values, the most common ones, min and max (as text).
 */
export const SAMPLE_VALUES: PreparedQuery<
  {
    schema: string;
    relation: string;
    columns: readonly string[];
    maxRows: number;
  },
  { sample: Record<string, SampledColumn> | null }
> = {
  name: 'pgmcp_sample_values',
  text: `select pgmcp.sample_values(format('%I.%I', $1::text, $2::text)::regclass, $3::text[], $4) as sample`,
  values: (args) => [args.schema, args.relation, args.columns, args.maxRows],
};

/** One column's figures in a sample (SAMPLE_VALUES). */
export interface SampledColumn {
  readonly sampled: number;
  readonly nulls: number;
  readonly distinct: number;
  readonly common: { value: string; count: number }[] | null;
  readonly min: string | null;
  readonly max: string | null;
}
