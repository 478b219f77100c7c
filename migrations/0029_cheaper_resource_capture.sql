-- What pgmcp's triggers cost a single-row write of pgmcp.resources, made smaller (issue 13, point
-- 5: single-row writes with every pgmcp trigger at ≥ 0.8 of the same writes with none).
--
-- 1. Change capture on pgmcp.resources gets its own function. pgmcp.capture_changes() (0004)
--    serves any layout: it decides the layout from its arguments on every call, logs through one
--    statement that aggregates what it inserted, and carries enable_nestloop and jit settings
--    (0009) that PostgreSQL sets and restores around every call, because its cached plans must
--    also suit bulk writes. pgmcp.capture_resource_changes() logs a single-row write, which is
--    what most writers send, with one INSERT whose plan PL/pgSQL keeps for the session and whose
--    RETURNING gives the notification its seq and URI. That INSERT is gated by a one-time test
--    that the statement wrote one row, so a bulk write skips it without reading its rows; a bulk
--    write of more than 100 rows is then logged by a statement planned for that write's own row
--    counts (EXECUTE), so no plan made for one row is ever run on a million, and no setting is
--    needed; smaller writes run static statements whose plans the session keeps.
--    The rows logged and the notification sent are the same as before
--    (test/notifications/capture.test.ts).
-- 2. The readers' keys trigger (0023) loses its `jit = off` setting: its statements are
--    primary-key lookups whose cost is far below any JIT threshold, and each setting a function
--    carries is set and restored on every call.
--
-- pgmcp.capture_changes() stays, for tables a deployment captures with another layout.

create function pgmcp.capture_resource_changes() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pgmcp, pg_temp
as $$
declare
  last_seq bigint;
  logged bigint;
  single_uri text;
  written bigint;
  rows_sql text;
begin
  -- One row written: logged by one statement, or by none when the one-time filter (the statement
  -- wrote more than one row) fails. An update that kept its id and URI and changed something is
  -- one 'updated' row; any other single-row update falls through to the general path below.
  if TG_OP = 'INSERT' then
    insert into pgmcp.changes (relation, uri, kind, readers_after)
    select 'pgmcp.resources', n.uri, 'created', n.readers
      from new_rows n
     where not exists (select from new_rows offset 1)
    returning seq, uri into last_seq, single_uri;
  elsif TG_OP = 'DELETE' then
    insert into pgmcp.changes (relation, uri, kind, readers_before)
    select 'pgmcp.resources', o.uri, 'deleted', o.readers
      from old_rows o
     where not exists (select from old_rows offset 1)
    returning seq, uri into last_seq, single_uri;
  else
    insert into pgmcp.changes (relation, uri, kind, readers_before, readers_after)
    select 'pgmcp.resources', n.uri, 'updated', o.readers, n.readers
      from old_rows o cross join new_rows n
     where o.id = n.id and o.uri = n.uri and o is distinct from n
       and not exists (select from new_rows offset 1)
    returning seq, uri into last_seq, single_uri;
  end if;
  if found then
    perform pg_notify('pgmcp_changes', json_build_object('seq', last_seq, 'uri', single_uri)::text);
    return null;
  end if;
  -- Every other write. No row: nothing to log. Up to 100 rows: static statements, whose plans the
  -- session keeps (whatever sizes the plan was made for, it compares at most 100 × 100 rows), so a
  -- writer of small batches plans nothing. More: planned for this statement's row counts. An
  -- update that changes a row's URI is logged as a delete of the old URI and a create of the new;
  -- an update that changes nothing is not logged.
  if TG_OP = 'DELETE' then
    select count(*) into written from (select from old_rows limit 101) s;
  else
    select count(*) into written from (select from new_rows limit 101) s;
  end if;
  if written = 0 then
    return null;
  elsif written > 100 then
    rows_sql := case TG_OP
      when 'INSERT' then
        $sql$insert into pgmcp.changes (relation, uri, kind, readers_after)
             select 'pgmcp.resources', n.uri, 'created', n.readers from new_rows n
             returning seq, uri$sql$
      when 'DELETE' then
        $sql$insert into pgmcp.changes (relation, uri, kind, readers_before)
             select 'pgmcp.resources', o.uri, 'deleted', o.readers from old_rows o
             returning seq, uri$sql$
      else
        $sql$with pairs as (
               select o.uri as old_uri, n.uri as new_uri, o.readers as readers_before,
                      n.readers as readers_after
                 from old_rows o join new_rows n on o.id = n.id
                where o is distinct from n)
             insert into pgmcp.changes (relation, uri, kind, readers_before, readers_after)
             select 'pgmcp.resources', new_uri, 'updated', readers_before, readers_after
               from pairs where old_uri = new_uri
             union all
             select 'pgmcp.resources', old_uri, 'deleted', readers_before, null
               from pairs where old_uri <> new_uri
             union all
             select 'pgmcp.resources', new_uri, 'created', null, readers_after
               from pairs where old_uri <> new_uri
             returning seq, uri$sql$
    end;
    execute format('with inserted as (%s) select max(seq), count(*), min(uri) from inserted', rows_sql)
      into last_seq, logged, single_uri;
  elsif TG_OP = 'INSERT' then
    with inserted as (
      insert into pgmcp.changes (relation, uri, kind, readers_after)
      select 'pgmcp.resources', n.uri, 'created', n.readers from new_rows n
      returning seq, uri)
    select max(seq), count(*), min(uri) into last_seq, logged, single_uri from inserted;
  elsif TG_OP = 'DELETE' then
    with inserted as (
      insert into pgmcp.changes (relation, uri, kind, readers_before)
      select 'pgmcp.resources', o.uri, 'deleted', o.readers from old_rows o
      returning seq, uri)
    select max(seq), count(*), min(uri) into last_seq, logged, single_uri from inserted;
  else
    with pairs as (
      select o.uri as old_uri, n.uri as new_uri, o.readers as readers_before,
             n.readers as readers_after
        from old_rows o join new_rows n on o.id = n.id
       where o is distinct from n),
    inserted as (
      insert into pgmcp.changes (relation, uri, kind, readers_before, readers_after)
      select 'pgmcp.resources', new_uri, 'updated', readers_before, readers_after
        from pairs where old_uri = new_uri
      union all
      select 'pgmcp.resources', old_uri, 'deleted', readers_before, null
        from pairs where old_uri <> new_uri
      union all
      select 'pgmcp.resources', new_uri, 'created', null, readers_after
        from pairs where old_uri <> new_uri
      returning seq, uri)
    select max(seq), count(*), min(uri) into last_seq, logged, single_uri from inserted;
  end if;
  if logged > 0 then
    perform pg_notify('pgmcp_changes',
      case when logged = 1 then json_build_object('seq', last_seq, 'uri', single_uri)::text
           else json_build_object('seq', last_seq, 'rows', logged)::text end);
  end if;
  return null;
end;
$$;

revoke all on function pgmcp.capture_resource_changes() from public;

drop trigger resources_capture_inserts on pgmcp.resources;
drop trigger resources_capture_updates on pgmcp.resources;
drop trigger resources_capture_deletes on pgmcp.resources;
create trigger resources_capture_inserts
  after insert on pgmcp.resources referencing new table as new_rows
  for each statement execute function pgmcp.capture_resource_changes();
create trigger resources_capture_updates
  after update on pgmcp.resources referencing old table as old_rows new table as new_rows
  for each statement execute function pgmcp.capture_resource_changes();
create trigger resources_capture_deletes
  after delete on pgmcp.resources referencing old table as old_rows
  for each statement execute function pgmcp.capture_resource_changes();

alter function pgmcp.keep_resource_listing_keys() reset jit;
