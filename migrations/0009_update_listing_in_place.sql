-- Cheaper upkeep of pgmcp.resource_listing (migration 0008) on writes to pgmcp.resources.
--
-- 0008's trigger called pgmcp.resource_listing_entry() for each entry it wrote. A SQL function
-- that is not inlined (a whole-row argument from a transition table) is planned again on every
-- call, which cost more than the listing's own writes; the entry is now computed inline. An
-- update also rewrote every entry with INSERT … ON CONFLICT DO UPDATE after a separate DELETE;
-- it is now one statement that updates the entries of the readers the row keeps in place,
-- deletes those of readers it lost and inserts those of readers it gained, and it looks for lost
-- readers only when readers changed.
--
-- Every update that changes a row changes updated_at (touch_updated_at), which the listing
-- holds, so each such update still rewrites the row's entries; an update that changes nothing
-- writes none. An update that gives a row a new id (set id = default) moves its entries.
--
-- The entry is the one pgmcp.resource_listing_entry() computes (still used by 0008's backfill):
-- variable-length columns over 2,000 bytes in all make a stub without them.
--
-- Plans: PL/pgSQL plans each statement once per session, with the row counts of the transition
-- tables of that first call, and keeps the plan for every later call. Planned for one row, a join
-- of two transition tables is a nested loop (quadratic for a later bulk update); planned for many,
-- it probes the listing with a hash join over the whole table and is JIT-compiled, which every
-- later single-row write then pays. So the two transition tables are joined with a full
-- join (hash or merge, never a nested loop), and the listing is only ever reached through its
-- primary key, one lookup per changed row, whatever the first call's size: hash and merge joins
-- are off for the function (the full join still gets one of them) and so is JIT.
create or replace function pgmcp.keep_resource_listing() returns trigger
language plpgsql security definer
set search_path = pg_catalog, pgmcp
set enable_hashjoin = off
set enable_mergejoin = off
set jit = off
as $$
begin
  if TG_OP = 'INSERT' then
    insert into pgmcp.resource_listing
    select u.reader, n.id, s.stub, case when not s.stub then n.uri end,
           case when not s.stub then n.name end, case when not s.stub then n.title end,
           case when not s.stub then n.description end,
           case when not s.stub then n.mime_type end, n.size,
           case when not s.stub then n.audience end, n.priority, n.updated_at
      from new_rows n
      cross join lateral (
        select octet_length(n.uri) + octet_length(n.name) + coalesce(octet_length(n.title), 0)
               + coalesce(octet_length(n.description), 0) + coalesce(octet_length(n.mime_type), 0)
               + coalesce(octet_length(n.audience::text), 0) > 2000) s(stub)
      cross join lateral (select distinct unnest(n.readers)) u(reader);
  elsif TG_OP = 'UPDATE' then
    -- One row per changed row; a full join, so that a row whose id changed is its old id's
    -- entries deleted and its new id's inserted.
    with changed as materialized (
      select o.id as old_id, o.readers as old_readers, n.id, n.readers, s.stub,
             case when not s.stub then n.uri end as uri,
             case when not s.stub then n.name end as name,
             case when not s.stub then n.title end as title,
             case when not s.stub then n.description end as description,
             case when not s.stub then n.mime_type end as mime_type, n.size,
             case when not s.stub then n.audience end as audience, n.priority, n.updated_at
        from old_rows o
        full join new_rows n on n.id = o.id
        cross join lateral (
          select octet_length(n.uri) + octet_length(n.name) + coalesce(octet_length(n.title), 0)
                 + coalesce(octet_length(n.description), 0) + coalesce(octet_length(n.mime_type), 0)
                 + coalesce(octet_length(n.audience::text), 0) > 2000) s(stub)
       where o is distinct from n),
    lost as (
      delete from pgmcp.resource_listing l
       using changed c
       where (c.readers is distinct from c.old_readers or c.id is distinct from c.old_id)
         and l.reader = any (c.old_readers) and l.resource_id = c.old_id
         and (c.id is distinct from c.old_id or not (l.reader = any (c.readers)))),
    kept as (
      update pgmcp.resource_listing l
         set stub = c.stub, uri = c.uri, name = c.name, title = c.title,
             description = c.description, mime_type = c.mime_type, size = c.size,
             audience = c.audience, priority = c.priority, updated_at = c.updated_at
        from changed c
       where c.id = c.old_id
         and l.reader = any (c.readers) and l.reader = any (c.old_readers) and l.resource_id = c.id)
    -- Gained readers (all readers of a row with a new id). An upsert, as in 0008, so that an entry
    -- left behind by writes that skipped the triggers is overwritten rather than an error.
    insert into pgmcp.resource_listing
    select u.reader, c.id, c.stub, c.uri, c.name, c.title, c.description, c.mime_type, c.size,
           c.audience, c.priority, c.updated_at
      from changed c
      cross join lateral (select distinct unnest(c.readers)) u(reader)
     where (c.readers is distinct from c.old_readers or c.id is distinct from c.old_id)
       and (c.id is distinct from c.old_id or (u.reader = any (c.old_readers)) is not true)
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

-- The capture trigger (0004) plans its join of the two transition tables the same way: after a
-- single-row update, a session's next bulk update would be quadratic, and after a bulk update each
-- single-row write would pay a JIT compilation. Hash or merge join only, and no JIT.
alter function pgmcp.capture_changes() set enable_nestloop = off set jit = off;
