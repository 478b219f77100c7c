-- The WAL source's log (migration 0037) looked up each change's table and primary key once per row,
-- through pgmcp.find_relation and pgmcp.primary_key_columns: SQL functions with their own
-- search_path are never inlined, so each call planned and ran its catalog query anew, which cost
-- more than inserting the rows. A batch names few tables: each is looked up once per batch, by a
-- catalog join inside this function's statement (planned once per session, as plpgsql caches it),
-- and each row's key is read from its table's key columns. Same arguments, same rows logged, same
-- NOTIFY (one per batch).
create or replace function pgmcp.log_wal_changes(commit_lsn pg_lsn, changes jsonb) returns integer
language plpgsql security definer set search_path = pg_catalog, pgmcp, pg_temp
as $$
declare
  done pg_lsn;
  last_seq bigint;
  logged integer;
begin
  select applied_lsn into done from pgmcp.change_capture for update;
  if commit_lsn <= done then
    return -1;
  end if;
  with entries as (
    select c.position, c.value->>'schema' as schema_name, c.value->>'table' as table_name,
           c.value->>'kind' as kind, c.value->'key' as key_values, c.value->'old' as old_values
      from jsonb_array_elements(changes) with ordinality as c(value, position)
     -- A batch read again after a crash may hold transactions logged before it.
     where coalesce((c.value->>'lsn')::pg_lsn, commit_lsn) > done),
  -- Each table the batch names, once: its primary key's columns in key order (none when the table
  -- is gone or has no key, and then its rows are not logged, as before).
  tables as materialized (
    select t.schema_name, t.table_name,
           array(select a.attname::text
                   from pg_namespace n
                   join pg_class c on c.relnamespace = n.oid
                   join pg_index i on i.indrelid = c.oid and i.indisprimary
                  cross join lateral unnest(i.indkey::smallint[]) with ordinality as k(attnum, position)
                   join pg_attribute a on a.attrelid = c.oid and a.attnum = k.attnum
                  where n.nspname = t.schema_name and c.relname = t.table_name
                  order by k.position) as key_columns
      from (select distinct e.schema_name, e.table_name from entries e) t),
  keyed as (
    select e.position, e.schema_name, e.table_name, e.kind,
           array(select e.key_values->>k.name
                   from unnest(t.key_columns) with ordinality as k(name, ordinality)
                  order by k.ordinality) as new_key,
           case when e.old_values is not null then
             array(select e.old_values->>k.name
                     from unnest(t.key_columns) with ordinality as k(name, ordinality)
                    order by k.ordinality) end as old_key
      from entries e
      join tables t on t.schema_name = e.schema_name and t.table_name = e.table_name),
  -- An update that changed the key is a delete of the old key and a create of the new, as the
  -- capture triggers log it.
  named as (
    select position, 0 as part, schema_name, table_name,
           case when old_key is distinct from new_key and old_key is not null then 'deleted' else kind end as kind,
           coalesce(old_key, new_key) as key
      from keyed
    union all
    select position, 1, schema_name, table_name, 'created', new_key
      from keyed where old_key is not null and old_key is distinct from new_key),
  logged as (
    insert into pgmcp.changes (relation, kind, detail)
    select format('%I.%I', n.schema_name, n.table_name), n.kind,
           jsonb_build_object('schema', n.schema_name, 'table', n.table_name, 'key', n.key)
      from named n
     where cardinality(n.key) > 0 and array_position(n.key, null) is null
     order by n.position, n.part
    returning seq)
  select max(seq), count(*) into last_seq, logged from logged;
  update pgmcp.change_capture set applied_lsn = commit_lsn;
  if logged > 0 then
    perform pg_notify('pgmcp_changes', json_build_object('seq', last_seq, 'rows', logged)::text);
  end if;
  return logged;
end;
$$;
revoke all on function pgmcp.log_wal_changes(pg_lsn, jsonb) from public;
