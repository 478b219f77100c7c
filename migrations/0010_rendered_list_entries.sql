-- resources/list without rendering: each stored resource's MCP `Resource` object is written as
-- JSON text when the resource is, and a list page is a walk that hands those texts on.
--
-- Rendering a page from the rows' columns on every request cost about as much as the query, and
-- printing timestamptz, float8 and text[] was a large part of the query. So the entry is rendered
-- once, by pgmcp.list_entry(), in SQL, by the triggers that already keep pgmcp.resource_listing
-- (migrations 0008, 0009), in the writing transaction, so a snapshot sees the entries and the rows
-- agree:
-- - pgmcp.resource_entries holds one entry per resource, for roles that row-level security does
--   not apply to (superusers, BYPASSRLS), which walk every row;
-- - pgmcp.resource_listing holds the entry once per reader instead of the listing columns, except
--   entries too large for its index (over 2,000 bytes), which a list page renders with the same
--   function from pgmcp.resources.
-- test/db/resource-listing.test.ts checks entries against the columns they come from.
--
-- Writes that skip triggers (session_replication_role = replica) must be followed by
-- `select pgmcp.rebuild_resource_listings()`.

-- The MCP Resource object of a stored resource, as JSON text: uri, name, then title, description
-- and mimeType when set, size, and annotations (audience and priority when set, lastModified
-- always, in UTC to the millisecond). A SQL function with plain arguments, so it is inlined into
-- the statements that call it. float8 prints in its shortest exact form only while
-- extra_float_digits > 0 (the default): the triggers set it.
create function pgmcp.list_entry(
  uri text, name text, title text, description text, mime_type text, size bigint,
  audience text[], priority double precision, updated_at timestamptz)
returns text
language sql stable parallel safe
as $$
  select concat(
    '{"uri":', to_json(uri), ',"name":', to_json(name),
    ',"title":' || to_json(title),
    ',"description":' || to_json(description),
    ',"mimeType":' || to_json(mime_type),
    ',"size":', size,
    ',"annotations":{', '"audience":' || to_json(audience) || ',',
    '"priority":' || priority || ',',
    '"lastModified":"', to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    '"}}')
$$;

create table pgmcp.resource_entries (
  resource_id bigint primary key,
  entry text not null
);

comment on table pgmcp.resource_entries is 'Each stored resource''s MCP Resource object as JSON (pgmcp.list_entry); kept by triggers, read by resources/list for roles row-level security does not apply to.';

-- Enabled with no policy: a role that the policy of pgmcp.resources applies to sees no entry
-- here; superusers and BYPASSRLS roles, which read every resource anyway, see them all. The
-- owner writes it through the triggers.
alter table pgmcp.resource_entries enable row level security;
revoke all on pgmcp.resource_entries from public;
grant select on pgmcp.resource_entries to public;

-- Plans are pinned as for the listing (0009): the transition tables are compared with EXCEPT,
-- which hashes or sorts (an anti join of the two would be a nested loop with hash and merge joins
-- off, quadratic for a bulk update), and the entries are reached by their primary key only,
-- whatever the first call's row counts.
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
    insert into pgmcp.resource_entries
    select n.id, pgmcp.list_entry(n.uri, n.name, n.title, n.description, n.mime_type, n.size,
                                  n.audience, n.priority, n.updated_at)
      from new_rows n;
  elsif TG_OP = 'UPDATE' then
    -- Ids that no row has any more (an update that gave a row a new id).
    delete from pgmcp.resource_entries e
     using (select id from old_rows except select id from new_rows) gone
     where e.resource_id = gone.id;
    -- An upsert: a row with a new id gets its entry, and an entry left behind by writes that
    -- skipped the triggers is overwritten. An unchanged entry is not written again.
    insert into pgmcp.resource_entries as e
    select n.id, pgmcp.list_entry(n.uri, n.name, n.title, n.description, n.mime_type, n.size,
                                  n.audience, n.priority, n.updated_at)
      from new_rows n
    on conflict (resource_id) do update set entry = excluded.entry
     where e.entry is distinct from excluded.entry;
  elsif TG_OP = 'DELETE' then
    delete from pgmcp.resource_entries e using old_rows o where e.resource_id = o.id;
  else
    truncate pgmcp.resource_entries;
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

-- The listing keeps the entry instead of the listing columns. Rebuilt below.
drop function pgmcp.resource_listing_entry(pgmcp.resources, text);
drop table pgmcp.resource_listing;

create table pgmcp.resource_listing (
  reader text collate "C" not null,
  resource_id bigint not null,
  -- The resource's entry (pgmcp.list_entry), or null when it is over 2,000 bytes: a btree entry
  -- holds at most about 2.7 kB, and resources/list renders those from pgmcp.resources.
  entry text,
  constraint resource_listing_pkey primary key (reader, resource_id) include (entry)
);

comment on table pgmcp.resource_listing is 'Each stored resource''s list entry once per reader; kept by triggers, read by resources/list for request roles.';

-- As in 0008: the owner (the triggers) writes it; request roles read their readers' entries.
alter table pgmcp.resource_listing enable row level security;
create policy resource_listing_readable_by_reader on pgmcp.resource_listing
  for select using (reader = any ((select pgmcp.member_roles())::text[]));
revoke all on pgmcp.resource_listing from public;
grant select on pgmcp.resource_listing to public;

-- 0009's function, writing the entry where it wrote the columns: one statement per write
-- statement, kept readers' entries updated in place, the listing reached only by its primary key.
create or replace function pgmcp.keep_resource_listing() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pgmcp
set extra_float_digits = 1
set enable_hashjoin = off
set enable_mergejoin = off
set jit = off
as $$
begin
  if TG_OP = 'INSERT' then
    -- Each row's entry is rendered once, whatever its number of readers.
    with rendered as materialized (
      select n.id, n.readers,
             pgmcp.list_entry(n.uri, n.name, n.title, n.description, n.mime_type, n.size,
                              n.audience, n.priority, n.updated_at) as entry
        from new_rows n)
    insert into pgmcp.resource_listing
    select u.reader, r.id, case when octet_length(r.entry) <= 2000 then r.entry end
      from rendered r
      cross join lateral (select distinct unnest(r.readers)) u(reader);
  elsif TG_OP = 'UPDATE' then
    -- One row per changed row; a full join, so that a row whose id changed is its old id's
    -- entries deleted and its new id's inserted.
    with changed as materialized (
      select o.id as old_id, o.readers as old_readers, n.id, n.readers,
             case when octet_length(x.entry) <= 2000 then x.entry end as entry
        from old_rows o
        full join new_rows n on n.id = o.id
        cross join lateral (
          select pgmcp.list_entry(n.uri, n.name, n.title, n.description, n.mime_type, n.size,
                                  n.audience, n.priority, n.updated_at)) x(entry)
       where o is distinct from n),
    lost as (
      delete from pgmcp.resource_listing l
       using changed c
       where (c.readers is distinct from c.old_readers or c.id is distinct from c.old_id)
         and l.reader = any (c.old_readers) and l.resource_id = c.old_id
         and (c.id is distinct from c.old_id or not (l.reader = any (c.readers)))),
    kept as (
      update pgmcp.resource_listing l
         set entry = c.entry
        from changed c
       where c.id = c.old_id
         and l.reader = any (c.readers) and l.reader = any (c.old_readers) and l.resource_id = c.id)
    insert into pgmcp.resource_listing
    select u.reader, c.id, c.entry
      from changed c
      cross join lateral (select distinct unnest(c.readers)) u(reader)
     where (c.readers is distinct from c.old_readers or c.id is distinct from c.old_id)
       and (c.id is distinct from c.old_id or (u.reader = any (c.old_readers)) is not true)
    on conflict (reader, resource_id) do update set entry = excluded.entry;
  elsif TG_OP = 'DELETE' then
    delete from pgmcp.resource_listing l
     using old_rows o
     where l.reader = any (o.readers) and l.resource_id = o.id;
  else
    truncate pgmcp.resource_listing;
  end if;
  return null;
end;
$$;

-- Both tables from pgmcp.resources as they are: the backfill below, and the repair after writes
-- that skipped the triggers. The owner is subject to the resources policy (it is forced), so the
-- policy is lifted for the calling transaction only.
create function pgmcp.rebuild_resource_listings() returns void
language plpgsql security definer
set search_path = pg_catalog, pgmcp
set extra_float_digits = 1
as $$
begin
  truncate pgmcp.resource_entries, pgmcp.resource_listing;
  alter table pgmcp.resources no force row level security;
  insert into pgmcp.resource_entries
  select r.id, pgmcp.list_entry(r.uri, r.name, r.title, r.description, r.mime_type, r.size,
                                r.audience, r.priority, r.updated_at)
    from pgmcp.resources r;
  insert into pgmcp.resource_listing
  select u.reader, r.id, case when octet_length(e.entry) <= 2000 then e.entry end
    from pgmcp.resources r
    join pgmcp.resource_entries e on e.resource_id = r.id
    cross join lateral (select distinct unnest(r.readers)) u(reader);
  alter table pgmcp.resources force row level security;
end;
$$;

revoke all on function pgmcp.rebuild_resource_listings() from public;

select pgmcp.rebuild_resource_listings();
