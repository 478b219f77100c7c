-- pgmcp.member_roles() follows PostgreSQL's own inheritance rules: the roles whose privileges
-- current_user holds, as has_table_privilege() and friends see them. 0002 walked every membership,
-- so a NOINHERIT role (pgmcp_authenticator above all) read the rows of every role granted to it.
--
-- The walk up pg_auth_members still finds the candidates (a few rows, not every role in the
-- cluster); pg_has_role(..., 'USAGE') then keeps those whose privileges current_user inherits.
-- It implements the rules of the running server: per membership (inherit_option) on PostgreSQL 16
-- and later, per member role (rolinherit) before, and pg_database_owner for the database's owner.
-- It answers from a membership list PostgreSQL caches per role, so each call is cheap.
create or replace function pgmcp.member_roles() returns text[]
language plpgsql stable parallel safe
as $$
declare
  roles text[];
begin
  with recursive memberships(roleid) as (
    select oid from pg_roles
     where rolname = current_user or rolname = 'pg_database_owner'
    union
    select m.roleid from pg_auth_members m join memberships on m.member = memberships.roleid
  )
  select coalesce(array_agg(r.rolname::text), '{}') || array['public']
    into roles
    from memberships join pg_roles r on r.oid = memberships.roleid
   where pg_has_role(memberships.roleid, 'USAGE');
  return roles;
end;
$$;
