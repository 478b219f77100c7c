-- Demo request roles with overlapping access (cluster-wide; created once, never altered here):
-- support, engineering and finance each read their team's notes and files plus the company-wide
-- ones; admin inherits all three. Granted to pgmcp_authenticator when that role exists.
do $$
declare
  team text;
begin
  foreach team in array array['support', 'engineering', 'finance', 'admin'] loop
    if not exists (select from pg_roles where rolname = team) then
      execute format('create role %I nologin', team);
    end if;
  end loop;
  grant support, engineering, finance to admin;
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant support, engineering, finance, admin to pgmcp_authenticator;
  end if;
end $$;
