-- Changes from the WAL (docs/operations.md "Choosing a change source"): instead of capture
-- triggers on exposed company tables, a publication that pgmcp manages (pgmcp_changes) names them,
-- and pgmcp reads its logical replication slot (pgoutput) and logs each committed transaction's
-- row changes to pgmcp.changes in the shape the triggers log them, so listeners see no difference.
-- pgmcp.resources and pgmcp.prompts keep their triggers, and DDL its event triggers.

-- Which source this database's exposed tables use, where the WAL reader got to, and how many times
-- its slot was (re)created: each new slot may have missed changes, so listeners resync.
create table pgmcp.change_capture (
  singleton boolean primary key default true check (singleton),
  source text not null default 'triggers' check (source in ('triggers', 'wal')),
  -- The commit LSN of the last transaction the WAL reader logged: a replay of it is skipped.
  applied_lsn pg_lsn not null default '0/0',
  epoch bigint not null default 0
);
insert into pgmcp.change_capture default values;
revoke all on pgmcp.change_capture from public;
comment on table pgmcp.change_capture is 'Change source of exposed tables (triggers or wal), the WAL reader''s last logged commit and its slot''s epoch.';

-- The slot epoch, which listeners read with every page of the log (part of the database's history).
create function pgmcp.capture_epoch() returns bigint
language sql stable security definer set search_path = pg_catalog, pg_temp
as $$ select epoch from pgmcp.change_capture $$;
grant execute on function pgmcp.capture_epoch() to public;

-- The source this database's exposed tables use now.
create function pgmcp.change_source() returns text
language sql stable security definer set search_path = pg_catalog, pg_temp
as $$ select source from pgmcp.change_capture $$;
grant execute on function pgmcp.change_source() to public;

-- Whether a table's row changes are captured: by the three triggers, or by the publication.
create function pgmcp.table_exposed(relid regclass) returns boolean
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select (select count(*) = 3 from pg_trigger t
           where t.tgrelid = relid
             and t.tgname in ('pgmcp_capture_inserts', 'pgmcp_capture_updates', 'pgmcp_capture_deletes'))
      or exists (select from pg_publication_rel r join pg_publication p on p.oid = r.prpubid
                  where p.pubname = 'pgmcp_changes' and r.prrelid = relid)
$$;
grant execute on function pgmcp.table_exposed(regclass) to public;

-- Tables whose row changes are captured, either way.
create function pgmcp.exposed_tables() returns setof regclass
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select distinct t.tgrelid::regclass from pg_trigger t
   where t.tgname in ('pgmcp_capture_inserts', 'pgmcp_capture_updates', 'pgmcp_capture_deletes')
  union
  select r.prrelid::regclass from pg_publication_rel r join pg_publication p on p.oid = r.prpubid
   where p.pubname = 'pgmcp_changes'
$$;

-- The publication exists whatever the source (empty until a table is exposed under wal).
create function pgmcp.ensure_change_publication() returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  if not exists (select from pg_publication where pubname = 'pgmcp_changes') then
    create publication pgmcp_changes with (publish = 'insert, update, delete');
  end if;
end;
$$;

create or replace function pgmcp.unexpose_table(relid regclass) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  name text;
begin
  for name in select t.tgname from pg_trigger t
               where t.tgrelid = relid
                 and t.tgname in ('pgmcp_capture_inserts', 'pgmcp_capture_updates', 'pgmcp_capture_deletes')
  loop
    execute format('drop trigger %I on %s', name, relid);
  end loop;
  if exists (select from pg_publication_rel r join pg_publication p on p.oid = r.prpubid
              where p.pubname = 'pgmcp_changes' and r.prrelid = relid) then
    execute format('alter publication pgmcp_changes drop table %s', relid);
  end if;
end;
$$;

-- Under 'triggers', the three capture triggers; under 'wal', membership of the publication (the
-- table's replica identity must name the old row's key: DEFAULT, with the primary key, does).
create or replace function pgmcp.expose_table(relid regclass) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  if not exists (select from pgmcp.primary_key_columns(relid)) then
    raise exception 'table % has no primary key: row resources are named by it', relid
      using errcode = 'invalid_table_definition',
            hint = 'Add a primary key (ALTER TABLE … ADD PRIMARY KEY), then expose the table again.';
  end if;
  perform pgmcp.unexpose_table(relid);
  if (select source from pgmcp.change_capture) = 'wal' then
    if (select relreplident from pg_class where oid = relid) = 'n' then
      raise exception 'table % has REPLICA IDENTITY NOTHING: the WAL would not name deleted rows', relid
        using errcode = 'invalid_table_definition',
              hint = 'ALTER TABLE … REPLICA IDENTITY DEFAULT, then expose the table again.';
    end if;
    perform pgmcp.ensure_change_publication();
    execute format('alter publication pgmcp_changes add table only %s', relid);
    return;
  end if;
  execute format('create trigger pgmcp_capture_inserts after insert on %s referencing new table as new_rows
                  for each statement execute function pgmcp.capture_row_changes()', relid);
  execute format('create trigger pgmcp_capture_updates after update on %s
                  referencing old table as old_rows new table as new_rows
                  for each statement execute function pgmcp.capture_row_changes()', relid);
  execute format('create trigger pgmcp_capture_deletes after delete on %s referencing old table as old_rows
                  for each statement execute function pgmcp.capture_row_changes()', relid);
end;
$$;

-- Switch this database's exposed tables to `new_source`, each in this one transaction (run by
-- pgmcp at start as its administrative login, per PGMCP_CHANGE_SOURCE). Returns how many moved.
create function pgmcp.use_change_source(new_source text) returns integer
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  relid regclass;
  moved integer := 0;
begin
  if new_source not in ('triggers', 'wal') then
    raise exception 'unknown change source %', new_source using errcode = 'invalid_parameter_value';
  end if;
  if (select source from pgmcp.change_capture for update) = new_source then
    return 0;
  end if;
  if new_source = 'wal' then
    perform pgmcp.ensure_change_publication();
  end if;
  update pgmcp.change_capture set source = new_source;
  for relid in select * from pgmcp.exposed_tables() loop
    perform pgmcp.expose_table(relid);
    moved := moved + 1;
  end loop;
  return moved;
end;
$$;
revoke all on function pgmcp.exposed_tables(), pgmcp.ensure_change_publication(),
  pgmcp.unexpose_table(regclass), pgmcp.expose_table(regclass), pgmcp.use_change_source(text) from public;

-- Decoded transactions' row changes, logged once: `changes` is a JSON array, in commit order, of
-- {lsn, schema, table, kind, key: {column: text form}, old?: {column: text form}} (`lsn`: its
-- transaction's commit; `old`: the old row's key when an update changed it, or the whole old row
-- under REPLICA IDENTITY FULL); each row is named by its primary key's values, in key order.
-- `commit_lsn` is the last transaction's commit. Transactions at or before the last one logged
-- are replays (the reader crashed between logging and acknowledging them): they log nothing.
-- Returns the rows logged, or -1 when every transaction was a replay.
create function pgmcp.log_wal_changes(commit_lsn pg_lsn, changes jsonb) returns integer
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
           c.value->>'kind' as kind, c.value->'key' as key_values, c.value->'old' as old_values,
           pgmcp.find_relation(c.value->>'schema', c.value->>'table') as relid
      from jsonb_array_elements(changes) with ordinality as c(value, position)
     -- A batch read again after a crash may hold transactions logged before it.
     where coalesce((c.value->>'lsn')::pg_lsn, commit_lsn) > done),
  keyed as (
    select e.position, e.schema_name, e.table_name, e.kind,
           array(select e.key_values->>k.column_name
                   from pgmcp.primary_key_columns(e.relid) with ordinality as k
                  order by k.ordinality) as new_key,
           case when e.old_values is not null then
             array(select e.old_values->>k.column_name
                     from pgmcp.primary_key_columns(e.relid) with ordinality as k
                    order by k.ordinality) end as old_key
      from entries e
     where e.relid is not null),
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

-- A new slot (the first, or one after the old was dropped or lost): listeners resync.
create function pgmcp.begin_capture_epoch() returns bigint
language sql
set search_path = pg_catalog, pg_temp
as $$ update pgmcp.change_capture set epoch = epoch + 1, applied_lsn = '0/0' returning epoch $$;
revoke all on function pgmcp.begin_capture_epoch() from public;
