-- resources/list reads pgmcp.resources itself; beside it pgmcp keeps only which reader reads
-- which resource (docs/benchmarks.md "Storage beside the table").
--
-- 0017 kept each resource's rendered entry once, in pgmcp.resource_entries (about 400 bytes a
-- resource with its index), and a trigger wrote it again on every write of the row: an update of
-- text or priority read and rewrote a row of a second table as large as half the first. Now no
-- entry is stored: a list page reads its rows' listing columns from pgmcp.resources and pgmcp
-- renders them when the page is read (the row's size, lastModified and annotations as they are
-- then), and pgmcp.resource_listing keeps its keys, (reader, resource_id), for the request roles'
-- walks. pgmcp.list_entry() (0010) stays, the same object rendered in SQL.
--
-- The keys change only when a row is inserted or deleted, or its readers or id change, so the
-- trigger that keeps them fires only then (its WHEN clause): any other update runs no pgmcp
-- trigger but updated_at and change capture, and writes nothing beside the table but the log.
--
-- Kept in the writing transaction, so a snapshot sees the keys and the rows agree. Writes that
-- skip triggers (session_replication_role = replica) must be followed by
-- `select pgmcp.rebuild_resource_listings()`.

drop trigger resources_keep_entries on pgmcp.resources;
drop trigger resources_keep_entries_truncates on pgmcp.resources;
drop function pgmcp.keep_resource_entry();
drop function pgmcp.empty_resource_entries();
drop function pgmcp.rebuild_resource_listings();
drop table pgmcp.resource_entries;

comment on table pgmcp.resource_listing is 'Which reader reads which stored resource, in id order per reader; kept by triggers, walked by resources/list for request roles, which then read the rows themselves.';

-- One row-level function: a single-row write is what most writers send, and each statement here
-- is a primary-key lookup with a plan PL/pgSQL keeps for the session, whatever the size of the
-- first write. Called for inserts, deletes, and updates that change readers or id (the triggers'
-- WHEN clause).
create function pgmcp.keep_resource_listing_keys() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pgmcp
set jit = off
as $$
begin
  if TG_OP = 'DELETE' or (TG_OP = 'UPDATE' and new.id <> old.id) then
    -- A deleted row, or the old id of a row given a new one: all its keys go.
    delete from pgmcp.resource_listing where reader = any (old.readers) and resource_id = old.id;
    if TG_OP = 'DELETE' then
      return null;
    end if;
  end if;
  if TG_OP = 'INSERT' or new.id <> old.id then
    insert into pgmcp.resource_listing
    select distinct u.reader, new.id from unnest(new.readers) u(reader)
    on conflict do nothing;
  else
    -- Readers changed: the keys of readers lost go, those of readers gained come; each statement
    -- only when there are some (a reader added or removed is the common change).
    if not old.readers <@ new.readers then
      delete from pgmcp.resource_listing
       where reader = any (old.readers) and resource_id = new.id
         and (reader = any (new.readers)) is not true;
    end if;
    if not new.readers <@ old.readers then
      insert into pgmcp.resource_listing
      select distinct u.reader, new.id from unnest(new.readers) u(reader)
       where (u.reader = any (old.readers)) is not true
      on conflict do nothing;
    end if;
  end if;
  return null;
end;
$$;

create function pgmcp.empty_resource_listing() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pgmcp
as $$
begin
  truncate pgmcp.resource_listing;
  return null;
end;
$$;

revoke all on function pgmcp.keep_resource_listing_keys() from public;
revoke all on function pgmcp.empty_resource_listing() from public;

create trigger resources_keep_listing_inserts
  after insert on pgmcp.resources
  for each row execute function pgmcp.keep_resource_listing_keys();
create trigger resources_keep_listing_updates
  after update of id, readers on pgmcp.resources
  for each row when (new.id <> old.id or new.readers is distinct from old.readers)
  execute function pgmcp.keep_resource_listing_keys();
create trigger resources_keep_listing_deletes
  after delete on pgmcp.resources
  for each row execute function pgmcp.keep_resource_listing_keys();
create trigger resources_keep_listing_truncates
  after truncate on pgmcp.resources
  for each statement execute function pgmcp.empty_resource_listing();

-- The listing from pgmcp.resources as it is: the repair after writes that skipped the trigger.
-- The owner is subject to the resources policy (it is forced), so the policy is lifted for the
-- calling transaction only.
create function pgmcp.rebuild_resource_listings() returns void
language plpgsql security definer
set search_path = pg_catalog, pgmcp
as $$
begin
  truncate pgmcp.resource_listing;
  alter table pgmcp.resources no force row level security;
  -- In key order, so the index is built densely.
  insert into pgmcp.resource_listing
  select distinct u.reader, r.id
    from pgmcp.resources r cross join lateral unnest(r.readers) u(reader)
   order by 1, 2;
  alter table pgmcp.resources force row level security;
end;
$$;

revoke all on function pgmcp.rebuild_resource_listings() from public;
