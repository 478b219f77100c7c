-- Legacy (MCP 2025-11-25) sessions: the check every request of a session makes, in PL/pgSQL. A SQL
-- function that cannot be inlined (SECURITY DEFINER, SET search_path) is planned again at every
-- call; a PL/pgSQL function keeps its plan for the session. legacy_session_check answers only
-- what a request of a session held by this process needs: null when the session is not live (or
-- not this principal's), else whether its expiry is due to be pushed back.
create or replace function pgmcp.find_legacy_session(
  p_id_hash bytea, p_principal_hash bytea, p_renew_below_seconds integer
) returns table (protocol_version text, client_info jsonb, client_capabilities jsonb,
                 log_level text, renew_due boolean)
language plpgsql stable security definer set search_path = pg_catalog, pgmcp as $$
begin
  return query
  select s.protocol_version, s.client_info, s.client_capabilities, s.log_level,
         s.expires_at < now() + make_interval(secs => p_renew_below_seconds)
    from pgmcp.legacy_sessions s
   where s.id_hash = p_id_hash and s.principal_hash = p_principal_hash and s.expires_at > now();
end $$;

create function pgmcp.legacy_session_check(
  p_id_hash bytea, p_principal_hash bytea, p_renew_below_seconds integer
) returns boolean
language plpgsql stable security definer set search_path = pg_catalog, pgmcp as $$
declare
  due boolean;
begin
  select s.expires_at < now() + make_interval(secs => p_renew_below_seconds) into due
    from pgmcp.legacy_sessions s
   where s.id_hash = p_id_hash and s.principal_hash = p_principal_hash and s.expires_at > now();
  return due;
end $$;

revoke all on function pgmcp.legacy_session_check(bytea, bytea, integer) from public;

do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant execute on function pgmcp.legacy_session_check(bytea, bytea, integer)
      to pgmcp_authenticator;
  end if;
end $$;
