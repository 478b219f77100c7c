-- Row-level security on stored resources and templates: a row is visible to a request role that
-- is a member (directly or through other roles) of any role in `readers`; 'public' means everyone.
-- Request roles get SELECT and nothing else. Owners and superusers bypass RLS in PostgreSQL, which
-- is why requests must run as a dedicated authenticator's granted roles (README "Authorization").

-- Every role the current role is a member of, directly or through other roles, plus 'public':
-- a walk up pg_auth_members from current_user (a few rows), not a pg_has_role() call per role in
-- the cluster. PL/pgSQL, because it keeps its plan for the session, where a SQL function would be
-- planned in every statement. Policies call it through a scalar subquery, so it runs once per
-- statement, not once per row.
create function pgmcp.member_roles() returns text[]
language plpgsql stable parallel safe
as $$
declare
  roles text[];
begin
  with recursive memberships(roleid) as (
    select oid from pg_roles where rolname = current_user
    union
    select m.roleid from pg_auth_members m join memberships on m.member = memberships.roleid
  )
  select coalesce(array_agg(r.rolname::text), '{}') || array['public']
    into roles
    from memberships join pg_roles r on r.oid = memberships.roleid;
  return roles;
end;
$$;

alter table pgmcp.resources enable row level security;
alter table pgmcp.resources force row level security;
create policy resources_readable_by_readers on pgmcp.resources
  for select using (readers && (select pgmcp.member_roles()));

alter table pgmcp.resource_templates enable row level security;
alter table pgmcp.resource_templates force row level security;
create policy resource_templates_readable_by_readers on pgmcp.resource_templates
  for select using (readers && (select pgmcp.member_roles()));

create index resources_readers_idx on pgmcp.resources using gin (readers);

grant usage on schema pgmcp to public;
grant select on pgmcp.resources, pgmcp.resource_templates to public;
grant execute on function pgmcp.member_roles() to public;
revoke all on pgmcp.server_secrets, pgmcp.migrations, pgmcp.seed_runs from public;
