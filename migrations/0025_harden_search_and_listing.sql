-- Three corrections to 0022–0024, each found by review:
--
-- 1. The policy that lets the owner read every row (0022, for pgmcp.search_resources and the
--    rebuild functions, which run as the owner) applied to every role that inherits the owner's
--    privileges: a deployment that granted the migrating role to another role let that role read
--    every row. It now holds only while the owner itself is current_user, which is the case
--    inside the owner's SECURITY DEFINER functions and nowhere else.
-- 2. pgmcp.member_roles() decides what every policy shows; its body named functions and
--    operators through the caller's search_path, so a caller that can create functions in a
--    schema it puts ahead of pg_catalog could answer for pg_get_userbyid(). It now runs with
--    pg_catalog alone.
-- 3. The readers' keys trigger (0023) fired only for UPDATEs naming id or readers; a BEFORE
--    trigger of the deployment's own that derives readers from another column changed readers
--    without naming them, and the keys went stale. It now fires for every UPDATE whose id or
--    readers changed, whatever the statement named.
do $$
begin
  execute format(
    'alter policy resources_readable_by_owner on pgmcp.resources using (current_user = %L)',
    current_user);
end $$;

alter function pgmcp.member_roles() set search_path = pg_catalog, pg_temp;

drop trigger resources_keep_listing_updates on pgmcp.resources;
create trigger resources_keep_listing_updates
  after update on pgmcp.resources
  for each row when (new.id <> old.id or new.readers is distinct from old.readers)
  execute function pgmcp.keep_resource_listing_keys();
