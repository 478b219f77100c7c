// A schema read's entries (pg://{database}/{schema}, docs/databases.md "Schema reads"): the
// relations the request role can see, look-alikes grouped, partitions under their table.
import {
  HIDDEN_SCHEMAS,
  RELATION_PRIVILEGE,
  type PreparedQuery,
} from '../../db/index.js';

/** One entry of a schema read: a relation, or a group of look-alike relations. */
export interface DirectoryEntry {
  /** The entry's first name in C order (its representative, described in full). */
  readonly name: string;
  readonly kind: string;
  readonly comment: string | null;
  /** How many relations the entry stands for (1: no look-alikes). */
  readonly members: number;
  /** The members' name with each digit replaced by "#". */
  readonly pattern: string;
  /** A partitioned table's partitions: how many, and their first name and pattern. */
  readonly partitions: number;
  readonly partitionPattern: string | null;
}

// Look-alikes share their name with digits masked (translate(): a character map, cheap per name)
// and their columns (names and types in order, as one md5); a partitioned table's partitions are
// never entries of their own, its entry counts them.
const TEXT = `with rel as (
  select c.oid, c.relname, c.relkind,
         translate(c.relname, '0123456789', '##########') as pattern,
         (select md5(string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ',' order by a.attnum))
            from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped) as columns
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where current_database() = $1 and n.nspname = $2
     and c.relkind in ('r', 'p', 'v', 'm', 'f') and not c.relispartition
     and ${HIDDEN_SCHEMAS} and ${RELATION_PRIVILEGE('c.oid')}
),
grp as (
  select min(relname collate "C") as first, count(*)::int as members, pattern
    from rel group by pattern, columns, relkind
)
select g.first as name, g.members, g.pattern,
       case c.relkind when 'r' then 'table' when 'p' then 'partitioned table' when 'v' then 'view'
                      when 'm' then 'materialized view' else 'foreign table' end as kind,
       obj_description(c.oid, 'pg_class') as comment,
       coalesce(p.partitions, 0) as partitions, p.pattern as "partitionPattern"
  from grp g
  join pg_class c on c.relname = g.first
   and c.relnamespace = (select oid from pg_namespace where nspname = $2)
  left join lateral (
    select count(*)::int as partitions,
           min(translate(pc.relname, '0123456789', '##########')) as pattern
      from pg_inherits i join pg_class pc on pc.oid = i.inhrelid
     where i.inhparent = c.oid and c.relkind = 'p') p on true
 where g.first > $3::text collate "C"
 order by g.first collate "C"
 limit $4`;

/**
 * Up to `limit` entries of `schema` after the name `after` ('' from the start), in C order of
 * their representative's name.
 */
export const DIRECTORY_ENTRIES: PreparedQuery<
  { database: string; schema: string; after: string; limit: number },
  DirectoryEntry
> = {
  name: 'pgmcp_directory_entries',
  text: TEXT,
  values: (args) => [args.database, args.schema, args.after, args.limit],
};
