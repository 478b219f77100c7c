// The catalog side of the query/explain statement guard (issue 32 points 1, 2): what the names a
// statement uses can reach (functions, relations, views, policies, domain checks), and whether the
// config file's sensitive entries name things that exist.
import { toDatabaseError, type DatabaseHandle } from '../../db/index.js';

/** A name as written: its schema ('' when unqualified: every schema counts) and the name. */
export interface QualifiedName {
  readonly schema: string;
  readonly name: string;
}

/** The names one resolution round looks up. */
export interface GuardLookup {
  readonly functions: readonly QualifiedName[];
  readonly relations: readonly QualifiedName[];
  readonly types: readonly QualifiedName[];
  readonly operators: readonly QualifiedName[];
  /**
   * The first round: also every user-defined implicit or assignment cast's function, and whether
   * a stored resource is sensitive (migration 0032's partial index answers it).
   */
  readonly userDefined: boolean;
}

/** A function the names can reach. */
export interface ReachedFunction {
  readonly oid: number;
  readonly schema: string;
  readonly name: string;
  readonly language: string;
  /** Built into PostgreSQL (oid below 16384). */
  readonly builtin: boolean;
  /** The body of a non-builtin sql or plpgsql function (null otherwise, or for BEGIN ATOMIC). */
  readonly source: string | null;
  /** Its SET clauses (proconfig), e.g. `search_path=public`. */
  readonly config: readonly string[];
}

/** What a round found. */
export interface GuardCatalog {
  readonly functions: readonly ReachedFunction[];
  readonly relations: readonly QualifiedName[];
  /** Some pgmcp.resources row is marked sensitive (false after the first round). */
  readonly sensitiveResources: boolean;
}

/**
 * Everything the names can reach through the catalog: the functions of that name (qualified: in
 * that schema, pg_temp meaning any session's; unqualified: in any schema, an over-approximation
 * of the search path), the
 * relations, types and user-defined operators of that name, then, following pg_depend, what
 * views' rules, row-level policies, aggregates, operators and BEGIN ATOMIC bodies use, the
 * constraints, casts and operators of reached user-defined types (a table's column types among
 * them: ORDER BY, DISTINCT and joins call their operators unnamed), and the children of reached
 * tables (inheritance, partitions). With `userDefined`, the function of every user-defined
 * implicit or assignment cast is reached too: PostgreSQL may apply one without any name of it in
 * the statement.
 */
const RESOLVE = `with recursive
seed(classid, objid) as (
  select 'pg_proc'::regclass::oid, p.oid
    from unnest($1::text[], $2::text[]) as f(s, name)
    join pg_proc p on p.proname = f.name
    join pg_namespace n on n.oid = p.pronamespace
     and (f.s = '' or n.nspname = f.s or (f.s = 'pg_temp' and n.nspname like 'pg\_temp\_%'))
  union
  select 'pg_class'::regclass::oid, c.oid
    from unnest($3::text[], $4::text[]) as r(s, name)
    join pg_class c on c.relname = r.name
    join pg_namespace n on n.oid = c.relnamespace
     and (r.s = '' or n.nspname = r.s or (r.s = 'pg_temp' and n.nspname like 'pg\_temp\_%'))
  union
  select 'pg_type'::regclass::oid, t.oid
    from unnest($5::text[], $6::text[]) as y(s, name)
    join pg_type t on t.typname = y.name
    join pg_namespace n on n.oid = t.typnamespace and (y.s = '' or n.nspname = y.s)
  union
  select 'pg_operator'::regclass::oid, o.oid
    from unnest($7::text[], $8::text[]) as x(s, name)
    join pg_operator o on o.oprname = x.name and o.oid >= 16384
    join pg_namespace n on n.oid = o.oprnamespace and (x.s = '' or n.nspname = x.s)
  union
  select 'pg_proc'::regclass::oid, c.castfunc from pg_cast c
   where $9 and c.oid >= 16384 and c.castfunc <> 0 and c.castcontext <> 'e'
),
reach(classid, objid) as (
  select classid, objid from seed
  union
  select next.classid, next.objid
    from reach r
    cross join lateral (
      select d.refclassid as classid, d.refobjid as objid from pg_depend d
       where d.classid = r.classid and d.objid = r.objid
         and d.refclassid in ('pg_proc'::regclass, 'pg_class'::regclass, 'pg_type'::regclass)
      union all
      select d.classid, d.objid from pg_depend d
       where d.refclassid = r.classid and d.refobjid = r.objid
         and ((r.classid = 'pg_class'::regclass and d.classid in ('pg_rewrite'::regclass, 'pg_policy'::regclass))
           or (r.classid = 'pg_type'::regclass
               and d.classid in ('pg_constraint'::regclass, 'pg_cast'::regclass, 'pg_operator'::regclass)))
      union all
      select 'pg_class'::regclass::oid, i.inhrelid from pg_inherits i
       where r.classid = 'pg_class'::regclass and i.inhparent = r.objid
    ) as next
)
select coalesce((select json_agg(json_build_object(
          'oid', p.oid::int8, 'schema', n.nspname, 'name', p.proname, 'language', l.lanname,
          'builtin', p.oid < 16384,
          'source', case when p.oid >= 16384 and l.lanname in ('sql', 'plpgsql') then p.prosrc end,
          'config', coalesce(p.proconfig, '{}')))
          from reach r join pg_proc p on r.classid = 'pg_proc'::regclass and p.oid = r.objid
          join pg_namespace n on n.oid = p.pronamespace
          join pg_language l on l.oid = p.prolang), '[]') as functions,
       coalesce((select json_agg(json_build_object('schema', n.nspname, 'name', c.relname))
          from reach r join pg_class c on r.classid = 'pg_class'::regclass and c.oid = r.objid
          join pg_namespace n on n.oid = c.relnamespace), '[]') as relations,
       $9 and exists (select 1 from pgmcp.resources where sensitive) as sensitive_resources`;

/** One resolution round (see RESOLVE), as the login, outside any request's transaction. */
export async function resolveGuardNames(
  db: DatabaseHandle,
  lookup: GuardLookup,
): Promise<GuardCatalog> {
  const columns = (names: readonly QualifiedName[]) => [
    names.map((entry) => entry.schema),
    names.map((entry) => entry.name),
  ];
  // A connection's failures (a full pool among them) are the server's, as on every request path.
  const { rows } = await db.pool
    .query<{
      functions: ReachedFunction[];
      relations: QualifiedName[];
      sensitive_resources: boolean;
    }>({
      // Named: each pooled connection plans it once.
      name: 'pgmcp_sql_guard_resolve',
      text: RESOLVE,
      values: [
        ...columns(lookup.functions),
        ...columns(lookup.relations),
        ...columns(lookup.types),
        ...columns(lookup.operators),
        lookup.userDefined,
      ],
    })
    .catch((error: unknown) => {
      throw toDatabaseError(error);
    });
  const row = rows[0];
  return {
    functions: row?.functions ?? [],
    relations: row?.relations ?? [],
    sensitiveResources: row?.sensitive_resources ?? true,
  };
}

/** A config file "sensitive" entry, in the main database (database undefined) or a named one. */
export interface SensitiveEntry {
  readonly schema: string;
  readonly table: string;
  readonly columns: readonly string[] | null;
}

/**
 * The entries that name no existing schema, table (or view) or column in `db`, each with what is
 * missing: the server refuses to start with them (fail closed, issue 32 point 2).
 */
export async function missingSensitiveEntries(
  db: DatabaseHandle,
  entries: readonly SensitiveEntry[],
): Promise<{ entry: SensitiveEntry; missing: string }[]> {
  const missing: { entry: SensitiveEntry; missing: string }[] = [];
  for (const entry of entries) {
    const { rows } = await db.pool.query<{
      schema: boolean;
      relation: boolean;
      columns: string[];
    }>(
      `select exists (select 1 from pg_namespace where nspname = $1) as schema,
              exists (select 1 from pg_class c join pg_namespace n on n.oid = c.relnamespace
                       where n.nspname = $1 and c.relname = $2) as relation,
              array(select w.name from unnest($3::text[]) as w(name)
                     where not exists (select 1 from pg_attribute a
                                        join pg_class c on c.oid = a.attrelid
                                        join pg_namespace n on n.oid = c.relnamespace
                                       where n.nspname = $1 and c.relname = $2
                                         and a.attname = w.name and a.attnum > 0
                                         and not a.attisdropped)) as columns`,
      [entry.schema, entry.table, entry.columns ?? []],
    );
    const row = rows[0];
    if (row?.schema !== true)
      missing.push({ entry, missing: `schema ${entry.schema}` });
    else if (row.relation !== true)
      missing.push({ entry, missing: `table ${entry.schema}.${entry.table}` });
    else if (row.columns.length > 0)
      missing.push({
        entry,
        missing: `column ${row.columns.join(', ')} of ${entry.schema}.${entry.table}`,
      });
  }
  return missing;
}
