-- Legacy (MCP 2025-11-25) HTTP sessions (issue 14): a read-only lookup for each request of a
-- session. Every request still checks in this table that its session is live and the caller's (so a
-- DELETE or expiry through any replica is seen by the next request on every other one), but writes
-- only when the idle expiry is due to be pushed back (renew_due), not once per request.
create function pgmcp.find_legacy_session(
  p_id_hash bytea, p_principal_hash bytea, p_renew_below_seconds integer
) returns table (protocol_version text, client_info jsonb, client_capabilities jsonb,
                 log_level text, renew_due boolean)
language sql stable security definer set search_path = pg_catalog, pgmcp as $$
  select s.protocol_version, s.client_info, s.client_capabilities, s.log_level,
         s.expires_at < now() + make_interval(secs => p_renew_below_seconds)
    from pgmcp.legacy_sessions s
   where s.id_hash = p_id_hash and s.principal_hash = p_principal_hash and s.expires_at > now()
$$;

revoke all on function pgmcp.find_legacy_session(bytea, bytea, integer) from public;

do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant execute on function pgmcp.find_legacy_session(bytea, bytea, integer)
      to pgmcp_authenticator;
  end if;
end $$;
