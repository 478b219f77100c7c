-- What pgmcp keeps beside pgmcp.resources for resources/list, bounded (docs/benchmarks.md
-- "Storage beside the table").
--
-- 0010 kept each resource's rendered entry once per resource (pgmcp.resource_entries) and again
-- once per reader (pgmcp.resource_listing), in the listing's heap and again in its primary key,
-- so that a request role's page was an index-only walk. Per reader, that is the whole entry three
-- times over: the listing alone was one and a half times the size of the table it lists, and
-- every update of a row rewrote each of its readers' entries.
--
-- Now the rendered entry is kept once, in pgmcp.resource_entries, with the row's readers beside it
-- so that it carries the resources policy itself; pgmcp.resource_listing keeps only which reader
-- reads which resource, (reader, resource_id), its primary key. A request role's page walks its
-- member roles' keys in the listing, index-only, then fetches those entries by primary key.
-- An update that keeps a row's readers and id leaves the listing alone: only the entry is
-- written again.
--
-- Where the entries lie decides what a page reads: a role that reads 1 row in 10 fetches its
-- page's entries from ten times the id range of a role that reads every row, so with entries in
-- id order it would read ten times the heap pages. pgmcp.rebuild_resource_listings() (and so this
-- migration) writes the entries in the order of their readers, then id: the rows of one set of
-- readers lie together, in id order, and a page of either role reads a few heap pages. Entries
-- written later go where there is room (an update in place when its page has some) until the
-- next rebuild.
--
-- Kept by one row-level trigger function for both tables, in the writing transaction, so a
-- snapshot sees the entries and the rows agree. Writes that skip triggers
-- (session_replication_role = replica) must be followed by
-- `select pgmcp.rebuild_resource_listings()`.

drop trigger resources_keep_listing_inserts on pgmcp.resources;
drop trigger resources_keep_listing_updates on pgmcp.resources;
drop trigger resources_keep_listing_deletes on pgmcp.resources;
drop trigger resources_keep_listing_truncates on pgmcp.resources;
drop trigger resources_keep_entries_inserts on pgmcp.resources;
drop trigger resources_keep_entries_updates on pgmcp.resources;
drop trigger resources_keep_entries_deletes on pgmcp.resources;
drop trigger resources_keep_entries_truncates on pgmcp.resources;
drop function pgmcp.keep_resource_listing();
drop function pgmcp.keep_resource_entries();
drop function pgmcp.rebuild_resource_listings();
drop table pgmcp.resource_listing;
drop table pgmcp.resource_entries;

create table pgmcp.resource_entries (
  resource_id bigint primary key,
  -- The row's readers, so that the entry is visible exactly when the row is (the policy below).
  readers text[] not null,
  entry text not null
);

comment on table pgmcp.resource_entries is 'Each stored resource''s MCP Resource object as JSON (pgmcp.list_entry) and its readers; kept by triggers, read by resources/list.';

-- The resources policy on the row's own readers: a request role sees the entries of the rows it
-- may read; superusers and BYPASSRLS roles see them all. Enabled, not forced: the owner writes it
-- through the trigger.
alter table pgmcp.resource_entries enable row level security;
create policy resource_entries_readable_by_readers on pgmcp.resource_entries
  for select using (readers && (select pgmcp.member_roles()));
revoke all on pgmcp.resource_entries from public;
grant select on pgmcp.resource_entries to public;

create table pgmcp.resource_listing (
  reader text collate "C" not null,
  resource_id bigint not null,
  constraint resource_listing_pkey primary key (reader, resource_id)
);

comment on table pgmcp.resource_listing is 'Which reader reads which stored resource, in id order per reader; kept by triggers, walked by resources/list for request roles.';

-- As in 0008: the owner (the trigger) writes it; request roles read their readers' keys.
alter table pgmcp.resource_listing enable row level security;
create policy resource_listing_readable_by_reader on pgmcp.resource_listing
  for select using (reader = any ((select pgmcp.member_roles())::text[]));
revoke all on pgmcp.resource_listing from public;
grant select on pgmcp.resource_listing to public;

-- One row-level function for both tables. A single-row write is what most writers send, and a
-- statement-level trigger with transition tables cost each of them more than its own statement
-- (building the tuplestores, planning a join of them); each statement here is one primary-key
-- lookup with a plan PL/pgSQL keeps for the session, whatever the size of the first write, so a
-- bulk write costs a lookup per row, never a rescan.
create function pgmcp.keep_resource_entry() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pgmcp
set extra_float_digits = 1
set jit = off
as $$
begin
  -- A deleted row, or the old id of a row given a new one: its entry and keys go.
  if TG_OP = 'DELETE' or new.id <> old.id then
    delete from pgmcp.resource_entries where resource_id = old.id;
    delete from pgmcp.resource_listing where reader = any (old.readers) and resource_id = old.id;
    if TG_OP = 'DELETE' then
      return null;
    end if;
  end if;
  -- An upsert written only when it differs: an update that changes nothing writes nothing, and an
  -- entry left behind by writes that skipped the trigger is overwritten.
  insert into pgmcp.resource_entries as e
  values (new.id, new.readers,
          pgmcp.list_entry(new.uri, new.name, new.title, new.description, new.mime_type,
                           new.size, new.audience, new.priority, new.updated_at))
  on conflict (resource_id) do update set readers = excluded.readers, entry = excluded.entry
   where (e.readers, e.entry) is distinct from (excluded.readers, excluded.entry);
  -- Keys: all of a new row's (or a new id's); of an updated row, those of readers lost and gained.
  if TG_OP = 'INSERT' or new.id <> old.id then
    insert into pgmcp.resource_listing
    select distinct u.reader, new.id from unnest(new.readers) u(reader)
    on conflict do nothing;
  elsif new.readers is distinct from old.readers then
    delete from pgmcp.resource_listing
     where reader = any (old.readers) and resource_id = new.id
       and (reader = any (new.readers)) is not true;
    insert into pgmcp.resource_listing
    select distinct u.reader, new.id from unnest(new.readers) u(reader)
     where (u.reader = any (old.readers)) is not true
    on conflict do nothing;
  end if;
  return null;
end;
$$;

create function pgmcp.empty_resource_entries() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pgmcp
as $$
begin
  truncate pgmcp.resource_entries, pgmcp.resource_listing;
  return null;
end;
$$;

revoke all on function pgmcp.keep_resource_entry() from public;
revoke all on function pgmcp.empty_resource_entries() from public;

create trigger resources_keep_entries
  after insert or update or delete on pgmcp.resources
  for each row execute function pgmcp.keep_resource_entry();
create trigger resources_keep_entries_truncates
  after truncate on pgmcp.resources
  for each statement execute function pgmcp.empty_resource_entries();

-- updated_at (0001, 0004) compared the rows as jsonb, building two documents of every column,
-- content included, on every update of any table it is attached to. For pgmcp.resources the
-- columns a writer sets are compared as they are; generated columns (size) are not set yet
-- in a BEFORE trigger and follow the others. A column added to the table later must be added here.
create function pgmcp.touch_resource_updated_at() returns trigger
language plpgsql
as $$
begin
  if (new.id, new.uri, new.name, new.title, new.description, new.mime_type, new.text, new.blob,
      new.tags, new.audience, new.priority, new.readers, new.created_at, new.updated_at)
     is distinct from
     (old.id, old.uri, old.name, old.title, old.description, old.mime_type, old.text, old.blob,
      old.tags, old.audience, old.priority, old.readers, old.created_at, old.updated_at) then
    new.updated_at := now();
  end if;
  return new;
end;
$$;

drop trigger resources_touch_updated_at on pgmcp.resources;
create trigger resources_touch_updated_at
  before update on pgmcp.resources
  for each row execute function pgmcp.touch_resource_updated_at();

-- Both tables from pgmcp.resources as they are: the conversion below, and the repair after writes
-- that skipped the trigger. The owner is subject to the resources policy (it is forced), so the
-- policy is lifted for the calling transaction only.
create function pgmcp.rebuild_resource_listings() returns void
language plpgsql security definer
set search_path = pg_catalog, pgmcp
set extra_float_digits = 1
as $$
begin
  truncate pgmcp.resource_entries, pgmcp.resource_listing;
  alter table pgmcp.resources no force row level security;
  -- The rows of one set of readers together, in id order (see the top of this file).
  insert into pgmcp.resource_entries
  select r.id, r.readers,
         pgmcp.list_entry(r.uri, r.name, r.title, r.description, r.mime_type, r.size,
                          r.audience, r.priority, r.updated_at)
    from pgmcp.resources r
   order by r.readers, r.id;
  -- In key order, so the index is built densely.
  insert into pgmcp.resource_listing
  select distinct u.reader, r.id
    from pgmcp.resources r cross join lateral unnest(r.readers) u(reader)
   order by 1, 2;
  alter table pgmcp.resources force row level security;
end;
$$;

revoke all on function pgmcp.rebuild_resource_listings() from public;

select pgmcp.rebuild_resource_listings();
