-- pgmcp.member_roles() is called once per statement that reads a table under the resources policy
-- (every resources/read and list page, twice for a role's list page), so its cost is paid on every
-- request. 0011 found the candidates with a recursive walk joined to the pg_roles view twice (hash
-- joins built on every call); the walk now starts from the role's oid, follows pg_auth_members
-- alone, and names the roles kept through the syscache (pg_get_userbyid). The rules are 0011's:
-- candidates are current_user, pg_database_owner and every role they are members of, directly or
-- not; pg_has_role(..., 'USAGE') keeps those whose privileges current_user holds.
-- to_regrole answers NULL for a role that does not exist (pg_database_owner before PostgreSQL 14),
-- and every step below drops a NULL.
create or replace function pgmcp.member_roles() returns text[]
language plpgsql stable parallel safe
as $$
begin
  return array(
    with recursive candidates(roleid) as (
      select unnest(array[to_regrole(quote_ident(current_user::text))::oid,
                          to_regrole('pg_database_owner')::oid])
      union
      select m.roleid from pg_auth_members m join candidates c on m.member = c.roleid
    )
    select pg_get_userbyid(roleid)::text from candidates
     where pg_has_role(roleid, 'USAGE')
  ) || array['public'];
end;
$$;
