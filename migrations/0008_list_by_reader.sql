-- resources/list for a role that sees few of the rows (docs/architecture.md "List entries").
--
-- A role's rows are spread over the whole table: a role that reads 1 row in 10 makes a keyset
-- page of 100 touch about ten times as many heap pages as a role that reads everything, and on a
-- table larger than shared_buffers each of those pages is a read. pgmcp.resource_listing keeps
-- the listing columns once per (reader, resource) in its primary key, so one role's rows sit
-- together in id order: a page is an index-only walk per member role, a few index pages.
--
-- Kept by the triggers below in the writing transaction, so a snapshot sees the two tables
-- agree. Only its owner writes it (the triggers run as the owner); request roles read it under
-- row-level security: a row is visible when its reader is one of the request role's member roles,
-- which is the resources policy (readers && member_roles()) applied one reader at a time.
-- Writes that skip triggers (session_replication_role = replica) must be followed by the
-- backfill statement at the end of this file.

create table pgmcp.resource_listing (
  reader text collate "C" not null,
  resource_id bigint not null,
  -- true when uri, name, title, description, mime_type and audience together exceed
  -- LISTING_COPY_LIMIT bytes: those columns are then not copied (a btree entry holds at most about
  -- 2.7 kB) and resources/list reads them from pgmcp.resources.
  stub boolean not null,
  uri text collate "C",
  name text,
  title text,
  description text,
  mime_type text,
  size bigint,
  audience text[],
  priority double precision,
  updated_at timestamptz not null,
  constraint resource_listing_pkey primary key (reader, resource_id)
    include (stub, uri, name, title, description, mime_type, size, audience, priority, updated_at)
);

comment on table pgmcp.resource_listing is 'Listing columns of pgmcp.resources, one row per reader; kept by triggers, read by resources/list.';

-- Enabled, not forced: the owner (the triggers) writes it, request roles only read.
alter table pgmcp.resource_listing enable row level security;
create policy resource_listing_readable_by_reader on pgmcp.resource_listing
  for select using (reader = any ((select pgmcp.member_roles())::text[]));
revoke all on pgmcp.resource_listing from public;
grant select on pgmcp.resource_listing to public;

-- One resource's entry for one of its readers. Variable-length columns over 2,000 bytes in all
-- make a stub, which keeps an entry well under the btree limit.
create function pgmcp.resource_listing_entry(r pgmcp.resources, reader text)
returns pgmcp.resource_listing
language sql stable parallel safe
as $$
  select reader, r.id, s.stub,
         case when not s.stub then r.uri end, case when not s.stub then r.name end,
         case when not s.stub then r.title end, case when not s.stub then r.description end,
         case when not s.stub then r.mime_type end, r.size,
         case when not s.stub then r.audience end, r.priority, r.updated_at
    from (select octet_length(r.uri) + octet_length(r.name) + coalesce(octet_length(r.title), 0)
                 + coalesce(octet_length(r.description), 0) + coalesce(octet_length(r.mime_type), 0)
                 + coalesce(octet_length(r.audience::text), 0) > 2000 as stub) s
$$;

-- Statement-level with transition tables, like the capture triggers (migration 0004): one
-- statement per write statement whatever its number of rows. An update that changes nothing
-- (every column equal) leaves the listing alone, as it leaves updated_at and the change log.
create function pgmcp.keep_resource_listing() returns trigger
language plpgsql security definer set search_path = pg_catalog, pgmcp
as $$
begin
  if TG_OP = 'INSERT' then
    insert into pgmcp.resource_listing
    select e.*
      from new_rows n
      cross join lateral (select distinct unnest(n.readers)) u(reader)
      cross join lateral pgmcp.resource_listing_entry(n, u.reader) e;
  elsif TG_OP = 'UPDATE' then
    delete from pgmcp.resource_listing l
     using old_rows o join new_rows n on n.id = o.id
     where l.reader = any (o.readers) and l.resource_id = o.id
       and not (l.reader = any (n.readers));
    insert into pgmcp.resource_listing
    select e.*
      from old_rows o join new_rows n on n.id = o.id
      cross join lateral (select distinct unnest(n.readers)) u(reader)
      cross join lateral pgmcp.resource_listing_entry(n, u.reader) e
     where o is distinct from n
    on conflict (reader, resource_id) do update
       set stub = excluded.stub, uri = excluded.uri, name = excluded.name, title = excluded.title,
           description = excluded.description, mime_type = excluded.mime_type, size = excluded.size,
           audience = excluded.audience, priority = excluded.priority, updated_at = excluded.updated_at;
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

revoke all on function pgmcp.keep_resource_listing() from public;
revoke all on function pgmcp.resource_listing_entry(pgmcp.resources, text) from public;

create trigger resources_keep_listing_inserts
  after insert on pgmcp.resources referencing new table as new_rows
  for each statement execute function pgmcp.keep_resource_listing();
create trigger resources_keep_listing_updates
  after update on pgmcp.resources referencing old table as old_rows new table as new_rows
  for each statement execute function pgmcp.keep_resource_listing();
create trigger resources_keep_listing_deletes
  after delete on pgmcp.resources referencing old table as old_rows
  for each statement execute function pgmcp.keep_resource_listing();
create trigger resources_keep_listing_truncates
  after truncate on pgmcp.resources
  for each statement execute function pgmcp.keep_resource_listing();

-- Backfill (also the statement to run after writes that skipped triggers, with the listing
-- truncated first). The owner is subject to the resources policy (it is forced), so the policy
-- is lifted for this transaction only.
alter table pgmcp.resources no force row level security;
insert into pgmcp.resource_listing
select e.*
  from pgmcp.resources r
  cross join lateral (select distinct unnest(r.readers)) u(reader)
  cross join lateral pgmcp.resource_listing_entry(r, u.reader) e;
alter table pgmcp.resources force row level security;
