-- The authenticator: the role pgmcp logs in as to serve requests. NOINHERIT, so it has no
-- privileges of its own beyond reading pgmcp's shared secrets; each request switches to the
-- caller's role (granted to it) for its transaction. Created only where the migrating role may
-- create roles; otherwise README "Authorization" shows the two statements to run.
do $$
begin
  if not exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    if (select rolsuper or rolcreaterole from pg_roles where rolname = current_user) then
      create role pgmcp_authenticator nologin noinherit;
    else
      raise notice 'pgmcp: could not create role pgmcp_authenticator (no CREATEROLE); create it as described in README "Authorization"';
    end if;
  end if;
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant usage on schema pgmcp to pgmcp_authenticator;
    grant select on pgmcp.server_secrets, pgmcp.migrations, pgmcp.seed_runs to pgmcp_authenticator;
  end if;
end $$;
