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
-- Kept by one trigger function for both tables, in the writing transaction, so a snapshot sees
-- the entries and the rows agree. Writes that skip triggers (session_replication_role = replica)
-- must be followed by `select pgmcp.rebuild_resource_listings()`.

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

-- One function for both tables, one trigger per kind of statement (each trigger call costs a
-- writer as much as a small statement). Plans are pinned as in 0009 and 0010: transition tables
-- are compared with EXCEPT, which hashes or sorts, never with a join that a plan made for one row
-- would turn into a nested loop over a bulk update; the two tables are reached by primary key
-- only, whatever the first call's row counts.
create function pgmcp.keep_resource_entries() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pgmcp
set extra_float_digits = 1
set enable_hashjoin = off
set enable_mergejoin = off
set jit = off
as $$
begin
  if TG_OP = 'INSERT' then
    with entries as (
      insert into pgmcp.resource_entries
      select n.id, n.readers,
             pgmcp.list_entry(n.uri, n.name, n.title, n.description, n.mime_type, n.size,
                              n.audience, n.priority, n.updated_at)
        from new_rows n)
    insert into pgmcp.resource_listing
    select distinct u.reader, n.id
      from new_rows n cross join lateral unnest(n.readers) u(reader);
  elsif TG_OP = 'UPDATE' then
    -- Entries: those of ids no row has any more (an update that gave a row a new id) go; every
    -- other row's is upserted, and written only when it differs (an update that changes nothing
    -- writes nothing; one left behind by writes that skipped the trigger is overwritten).
    -- Listing: the (reader, id) keys the old rows had and the new ones lack go, and the reverse
    -- come; a row that keeps its readers and id has none of either.
    with gone as (
      delete from pgmcp.resource_entries e
       using (select id from old_rows except select id from new_rows) g
       where e.resource_id = g.id),
    entries as (
      insert into pgmcp.resource_entries as e
      select n.id, n.readers,
             pgmcp.list_entry(n.uri, n.name, n.title, n.description, n.mime_type, n.size,
                              n.audience, n.priority, n.updated_at)
        from new_rows n
      on conflict (resource_id) do update set readers = excluded.readers, entry = excluded.entry
       where (e.readers, e.entry) is distinct from (excluded.readers, excluded.entry)),
    lost as (
      delete from pgmcp.resource_listing l
       using (select u.reader, o.id from old_rows o cross join lateral unnest(o.readers) u(reader)
              except
              select u.reader, n.id from new_rows n cross join lateral unnest(n.readers) u(reader)) k
       where l.reader = k.reader and l.resource_id = k.id)
    insert into pgmcp.resource_listing
    select k.reader, k.id
      from (select u.reader, n.id from new_rows n cross join lateral unnest(n.readers) u(reader)
            except
            select u.reader, o.id from old_rows o cross join lateral unnest(o.readers) u(reader)) k
    on conflict do nothing;
  elsif TG_OP = 'DELETE' then
    with gone as (
      delete from pgmcp.resource_entries e using old_rows o where e.resource_id = o.id)
    delete from pgmcp.resource_listing l
     using (select distinct u.reader, o.id from old_rows o cross join lateral unnest(o.readers) u(reader)) k
     where l.reader = k.reader and l.resource_id = k.id;
  else
    truncate pgmcp.resource_entries, pgmcp.resource_listing;
  end if;
  return null;
end;
$$;

revoke all on function pgmcp.keep_resource_entries() from public;

create trigger resources_keep_entries_inserts
  after insert on pgmcp.resources referencing new table as new_rows
  for each statement execute function pgmcp.keep_resource_entries();
create trigger resources_keep_entries_updates
  after update on pgmcp.resources referencing old table as old_rows new table as new_rows
  for each statement execute function pgmcp.keep_resource_entries();
create trigger resources_keep_entries_deletes
  after delete on pgmcp.resources referencing old table as old_rows
  for each statement execute function pgmcp.keep_resource_entries();
create trigger resources_keep_entries_truncates
  after truncate on pgmcp.resources
  for each statement execute function pgmcp.keep_resource_entries();

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
