-- Change capture for live updates (README "Live updates").
--
-- Every committed change to a captured table becomes a row of pgmcp.changes, written by the same
-- transaction, so a change is logged exactly when it commits. NOTIFY on channel pgmcp_changes
-- carries only a small JSON wake-up ({"seq":…,"uri":…} or {"seq":…,"rows":…}); listeners read the
-- log itself, so a lost notification (listener reconnecting, server restarting) loses nothing.
--
-- Ordering: seq is assigned when a row is written, not when its transaction commits, so a reader
-- that only remembered "the last seq I saw" could skip a row whose transaction committed late.
-- Readers instead remember an xid horizon: every transaction older than the horizon has finished
-- and its rows were read (pgmcp.read_changes, src/db/changes.ts).

create table pgmcp.changes (
  seq bigint generated always as identity primary key,
  txid xid8 not null default pg_current_xact_id(),
  -- the captured table (schema.table), or the object a schema change touched
  relation text not null,
  uri text collate "C",
  kind text not null,
  readers_before text[],
  readers_after text[],
  detail jsonb,
  changed_at timestamptz not null default now(),
  constraint changes_kind_valid check (kind in ('created', 'updated', 'deleted', 'schema'))
);

comment on table pgmcp.changes is 'Change log read by pgmcp listeners; pruned after the retention period (PGMCP_CHANGE_RETENTION_SECONDS).';
comment on column pgmcp.changes.txid is 'Writing transaction; listeners read the log by xid horizon so that late commits are not skipped.';
comment on column pgmcp.changes.readers_before is 'readers of the row before the change (null for created); deletes are authorized against it.';
comment on column pgmcp.changes.readers_after is 'readers of the row after the change (null for deleted); creates and updates are authorized against it.';

create index changes_txid_seq_idx on pgmcp.changes (txid, seq);

-- A role sees a log row when it could read the resource before or after the change: the same
-- membership test as the resources policy. Listeners check deliveries by selecting log rows as
-- each subscriber's role, so Postgres, not pgmcp's code, decides who hears of what. Not forced:
-- the owner reads the whole log through pgmcp.read_changes.
alter table pgmcp.changes enable row level security;
create policy changes_readable_by_readers on pgmcp.changes
  for select using (
    (readers_before || readers_after) && (select pgmcp.member_roles())
  );
grant select on pgmcp.changes to public;

-- An update that changes nothing must not move lastModified or wake subscribers. The generated
-- column `size` is null in a BEFORE trigger, so comparing whole rows (as 0001 did) always saw a
-- change; compare everything but generated columns.
create or replace function pgmcp.touch_updated_at() returns trigger
language plpgsql as $$
begin
  if to_jsonb(new) - 'size' is distinct from to_jsonb(old) - 'size' then
    new.updated_at := now();
  end if;
  return new;
end;
$$;

-- The capture trigger function, for pgmcp.resources and for any table a later feature exposes.
-- Statement-level with transition tables: one INSERT into the log and one NOTIFY per statement,
-- whatever the number of rows. Arguments: key column, URI column, readers column (optional).
-- An update that changes the URI is logged as a delete of the old URI and a create of the new.
-- The pgmcp.resources layout (id, uri, readers) runs static SQL, planned once per session; any
-- other layout is built with format() on each statement, planned every time, which costs writers
-- far more.
create function pgmcp.capture_changes() returns trigger
language plpgsql security definer set search_path = pg_catalog, pgmcp
as $$
declare
  key_column text := TG_ARGV[0];
  uri_column text := TG_ARGV[1];
  readers_column text := case when TG_NARGS > 2 then TG_ARGV[2] end;
  relation text := format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME);
  resources_layout boolean :=
    key_column = 'id' and uri_column = 'uri' and readers_column = 'readers';
  new_readers text := case when readers_column is null then 'null::text[]' else format('n.%I', readers_column) end;
  old_readers text := case when readers_column is null then 'null::text[]' else format('o.%I', readers_column) end;
  last_seq bigint;
  logged bigint;
  single_uri text;
begin
  if TG_OP = 'INSERT' and resources_layout then
    with inserted as (
      insert into pgmcp.changes (relation, uri, kind, readers_after)
      select relation, n.uri, 'created', n.readers from new_rows n
      returning seq, uri)
    select max(seq), count(*), min(uri) into last_seq, logged, single_uri from inserted;
  elsif TG_OP = 'DELETE' and resources_layout then
    with inserted as (
      insert into pgmcp.changes (relation, uri, kind, readers_before)
      select relation, o.uri, 'deleted', o.readers from old_rows o
      returning seq, uri)
    select max(seq), count(*), min(uri) into last_seq, logged, single_uri from inserted;
  elsif TG_OP = 'UPDATE' and resources_layout then
    with pairs as (
      select o.uri as old_uri, n.uri as new_uri, o.readers as readers_before, n.readers as readers_after
        from old_rows o join new_rows n on o.id = n.id
       where o is distinct from n),
    inserted as (
      insert into pgmcp.changes (relation, uri, kind, readers_before, readers_after)
      select relation, new_uri, 'updated', readers_before, readers_after from pairs where old_uri = new_uri
      union all
      select relation, old_uri, 'deleted', readers_before, null from pairs where old_uri <> new_uri
      union all
      select relation, new_uri, 'created', null, readers_after from pairs where old_uri <> new_uri
      returning seq, uri)
    select max(seq), count(*), min(uri) into last_seq, logged, single_uri from inserted;
  elsif TG_OP = 'INSERT' then
    execute format(
      'with inserted as (insert into pgmcp.changes (relation, uri, kind, readers_after)
         select $1, n.%1$I, ''created'', %2$s from new_rows n returning seq, uri)
       select max(seq), count(*), min(uri) from inserted',
      uri_column, new_readers)
      into last_seq, logged, single_uri using relation;
  elsif TG_OP = 'DELETE' then
    execute format(
      'with inserted as (insert into pgmcp.changes (relation, uri, kind, readers_before)
         select $1, o.%1$I, ''deleted'', %2$s from old_rows o returning seq, uri)
       select max(seq), count(*), min(uri) from inserted',
      uri_column, old_readers)
      into last_seq, logged, single_uri using relation;
  else
    execute format(
      'with pairs as (
         select o.%2$I as old_uri, n.%2$I as new_uri, %3$s as readers_before, %4$s as readers_after
           from old_rows o join new_rows n on o.%1$I = n.%1$I
          where o is distinct from n),
       inserted as (insert into pgmcp.changes (relation, uri, kind, readers_before, readers_after)
         select $1, new_uri, ''updated'', readers_before, readers_after from pairs where old_uri = new_uri
         union all
         select $1, old_uri, ''deleted'', readers_before, null from pairs where old_uri <> new_uri
         union all
         select $1, new_uri, ''created'', null, readers_after from pairs where old_uri <> new_uri
         returning seq, uri)
       select max(seq), count(*), min(uri) from inserted',
      key_column, uri_column, old_readers, new_readers)
      into last_seq, logged, single_uri using relation;
  end if;
  if logged > 0 then
    perform pg_notify('pgmcp_changes',
      case when logged = 1 then json_build_object('seq', last_seq, 'uri', single_uri)::text
           else json_build_object('seq', last_seq, 'rows', logged)::text end);
  end if;
  return null;
end;
$$;

-- Transition tables allow one event per trigger, hence three triggers.
create trigger resources_capture_inserts
  after insert on pgmcp.resources referencing new table as new_rows
  for each statement execute function pgmcp.capture_changes('id', 'uri', 'readers');
create trigger resources_capture_updates
  after update on pgmcp.resources referencing old table as old_rows new table as new_rows
  for each statement execute function pgmcp.capture_changes('id', 'uri', 'readers');
create trigger resources_capture_deletes
  after delete on pgmcp.resources referencing old table as old_rows
  for each statement execute function pgmcp.capture_changes('id', 'uri', 'readers');

-- One page of the log for a listener: rows of transactions at or after `horizon`, in (txid, seq)
-- order after (after_txid, after_seq), plus the xmin of the statement's snapshot (on every row,
-- and on a row of nulls when there is no change), which becomes the next horizon.
create function pgmcp.read_changes(horizon xid8, after_txid xid8, after_seq bigint, max_rows integer)
returns table (snapshot_xmin xid8, seq bigint, txid xid8, relation text, uri text, kind text)
-- PL/pgSQL, so the plan is kept for the session (this runs after every commit that logs a change).
language plpgsql stable security definer set search_path = pg_catalog, pgmcp
as $$
begin
  return query
  select s.xmin, c.seq, c.txid, c.relation, c.uri, c.kind
    from (select pg_snapshot_xmin(pg_current_snapshot()) as xmin) s
    left join lateral (
      select c.seq, c.txid, c.relation, c.uri, c.kind
        from pgmcp.changes c
       -- One row-comparison bound, so the index scan starts at the page and not at the oldest
       -- row: (txid, seq) > (horizon, 0) is txid >= horizon, as seq starts at 1.
       where (c.txid, c.seq) > (greatest(after_txid, horizon),
                                case when after_txid < horizon then 0 else after_seq end)
       order by c.txid, c.seq
       limit max_rows
    ) c on true;
end;
$$;

-- Delete log rows older than the retention period; returns how many. Run by listeners on a schedule.
create function pgmcp.prune_changes(retention interval) returns bigint
language sql volatile security definer set search_path = pg_catalog, pgmcp
as $$
  -- seq order is close to time order: delete up to the first row young enough to keep, found by
  -- walking the primary key from the oldest (no index on changed_at for writers to maintain).
  with pruned as (
    delete from pgmcp.changes
     where seq < coalesce(
       (select seq from pgmcp.changes where changed_at >= now() - retention order by seq limit 1),
       (select max(seq) + 1 from pgmcp.changes))
    returning 1)
  select count(*) from pruned
$$;

revoke all on function pgmcp.read_changes(xid8, xid8, bigint, integer) from public;
revoke all on function pgmcp.prune_changes(interval) from public;
revoke all on function pgmcp.capture_changes() from public;

do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant execute on function pgmcp.read_changes(xid8, xid8, bigint, integer) to pgmcp_authenticator;
    grant execute on function pgmcp.prune_changes(interval) to pgmcp_authenticator;
  end if;
end $$;

-- Schema changes (DDL, comments, grants) are logged for the catalog resources: one row per object
-- a command touched, with the command tag in detail. Event triggers need a superuser; without one
-- the migration says so and schema changes are not captured.
create function pgmcp.capture_schema_changes() returns event_trigger
language plpgsql security definer set search_path = pg_catalog, pgmcp
as $$
declare
  last_seq bigint;
begin
  if TG_EVENT = 'sql_drop' then
    with logged as (
      insert into pgmcp.changes (relation, kind, detail)
      select coalesce(d.object_identity, d.object_type), 'schema',
             jsonb_build_object('command', TG_TAG, 'objectType', d.object_type, 'schema', d.schema_name, 'dropped', true)
        from pg_event_trigger_dropped_objects() d
       where d.schema_name is distinct from 'pgmcp' and not d.is_temporary
      returning seq)
    select max(seq) into last_seq from logged;
  else
    with logged as (
      insert into pgmcp.changes (relation, kind, detail)
      select coalesce(d.object_identity, d.object_type), 'schema',
             jsonb_build_object('command', d.command_tag, 'objectType', d.object_type, 'schema', d.schema_name)
        from pg_event_trigger_ddl_commands() d
       where d.schema_name is distinct from 'pgmcp' and not d.in_extension
         and d.schema_name is distinct from 'pg_temp' and d.schema_name !~ '^pg_temp_'
      returning seq)
    select max(seq) into last_seq from logged;
  end if;
  if last_seq is not null then
    perform pg_notify('pgmcp_changes', json_build_object('seq', last_seq, 'schema', true)::text);
  end if;
end;
$$;

do $$
begin
  if (select rolsuper from pg_roles where rolname = current_user) then
    create event trigger pgmcp_capture_ddl on ddl_command_end
      execute function pgmcp.capture_schema_changes();
    create event trigger pgmcp_capture_drops on sql_drop
      execute function pgmcp.capture_schema_changes();
  else
    raise notice 'pgmcp: schema changes are not captured (event triggers need a superuser); see README "Live updates"';
  end if;
end $$;
