// The navigator's statement (pg://{database}, docs/databases.md "The navigator"): what the request
// role may see of a whole database, summarized in one pass over pg_class, so its cost does not grow
// with round trips as the catalog grows.
import {
  HIDDEN_SCHEMAS,
  IN_SCOPE,
  RELATION_PRIVILEGE,
  type PreparedQuery,
} from '../../db/index.js';

/** One group of look-alike relations (one relation when its name has no look-alikes) in a schema. */
export interface NavigatorGroup {
  /** The group's first name in C order: its representative. */
  readonly name: string;
  /** The name with each digit replaced by "#": the group's pattern. */
  readonly pattern: string;
  readonly members: number;
  readonly kind: string;
  /** Foreign keys from and to the group's members, between relations the role can see. */
  readonly degree: number;
  /** Approximate rows of the members the role reads without row-level security; null if none known. */
  readonly approximateRows: number | null;
  readonly comment: string | null;
  /** The representative's primary-key columns, in key order. */
  readonly key: string[] | null;
}

/** One schema the role may use, its totals and its most important groups. */
export interface NavigatorSchema {
  readonly name: string;
  readonly comment: string | null;
  readonly relations: number;
  readonly groups: NavigatorGroup[];
}

export interface NavigatorFacts {
  /** Every schema the role may use that holds a relation it can see, and those relations. */
  readonly schemaCount: number;
  readonly relationCount: number;
  /** The most important schemas, at most `maxSchemas`, most important first. */
  readonly schemas: NavigatorSchema[];
}

// Look-alike names (t_000001 … t_099999, events_2024_01 …) share their name with digits masked:
// translate() is a plain character map, far cheaper per name than a regular expression. Rows of
// a table under row-level security for the role are left out of every figure (they would count
// rows it cannot see). Partitions are left out: their partitioned table stands for them.
const TEXT = `with rel as (
  select c.oid, c.relnamespace, c.relname, c.relkind,
         case when c.reltuples < 0 or (c.relrowsecurity and row_security_active(c.oid)) then null
              else c.reltuples::float8 end as rows
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where current_database() = $1
     and c.relkind in ('r', 'p', 'v', 'm', 'f') and not c.relispartition and ${HIDDEN_SCHEMAS}
     and ${IN_SCOPE(2, 3)} and has_schema_privilege(n.oid, 'USAGE') and ${RELATION_PRIVILEGE('c.oid')}
),
degree as (
  select oid, count(*) as degree
    from (select k.conrelid as oid, k.confrelid as other from pg_constraint k
           where k.contype = 'f' and k.conparentid = 0
          union all
          select k.confrelid, k.conrelid from pg_constraint k
           where k.contype = 'f' and k.conparentid = 0) k
   where exists (select from rel o where o.oid = k.other)
   group by oid
),
grp as (
  select r.relnamespace, translate(r.relname, '0123456789', '##########') as pattern,
         count(*)::int as members, min(r.relname collate "C") as first,
         sum(coalesce(d.degree, 0))::int as degree, sum(r.rows) as rows
    from rel r left join degree d on d.oid = r.oid
   group by 1, 2
),
schemas as (
  select g.relnamespace, n.nspname, sum(g.members)::int as relations,
         row_number() over (order by sum(g.degree) desc, sum(g.members) desc, n.nspname collate "C") as rank,
         count(*) over () as schema_count, sum(sum(g.members)) over () as relation_count
    from grp g join pg_namespace n on n.oid = g.relnamespace
   group by g.relnamespace, n.nspname
),
shown as (select * from schemas where rank <= $4),
top as (
  select g.*, row_number() over (partition by g.relnamespace
                                 order by g.degree desc, g.rows desc nulls last, g.first) as rank
    from grp g join shown s on s.relnamespace = g.relnamespace
)
select json_build_object(
  'schemaCount', coalesce((select max(schema_count) from schemas), 0),
  'relationCount', coalesce((select max(relation_count) from schemas), 0),
  'schemas', coalesce((select json_agg(json_build_object(
      'name', s.nspname,
      'comment', obj_description(s.relnamespace, 'pg_namespace'),
      'relations', s.relations,
      'groups', (select coalesce(json_agg(json_build_object(
          'name', t.first, 'pattern', t.pattern, 'members', t.members, 'degree', t.degree,
          'approximateRows', t.rows::bigint,
          'kind', case c.relkind when 'r' then 'table' when 'p' then 'partitioned table' when 'v' then 'view'
                                 when 'm' then 'materialized view' else 'foreign table' end,
          'comment', obj_description(c.oid, 'pg_class'),
          'key', (select json_agg(a.attname order by k.ord)
                    from pg_index i cross join unnest(i.indkey) with ordinality k(attnum, ord)
                    join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
                   where i.indrelid = c.oid and i.indisprimary)) order by t.rank), '[]')
        from top t join pg_class c on c.relnamespace = t.relnamespace and c.relname = t.first
       where t.relnamespace = s.relnamespace
         and t.rank <= greatest(3, $5 / least(s.schema_count, $4)))
    ) order by s.rank) from shown s), '[]')
)::text as facts`;

/**
 * The navigator's facts for the request role: totals, then the `maxSchemas` most important schemas
 * (most foreign keys, then most relations) with their most important groups of look-alike
 * relations (most foreign keys, then most rows), about `maxLines` groups in all.
 */
export const NAVIGATOR: PreparedQuery<
  {
    database: string;
    include: readonly string[] | null;
    exclude: readonly string[];
    maxSchemas: number;
    maxLines: number;
  },
  { facts: string }
> = {
  name: 'pgmcp_navigator',
  text: TEXT,
  values: (args) => [
    args.database,
    args.include,
    args.exclude,
    args.maxSchemas,
    args.maxLines,
  ],
};
