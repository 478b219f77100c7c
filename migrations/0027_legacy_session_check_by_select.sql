-- Legacy (MCP 2025-11-25) sessions: the check every request of a session makes becomes a plain
-- SELECT by primary key, run as the server's login first in the request's own transaction (before
-- the request role is set). A call of pgmcp.legacy_session_check (SECURITY DEFINER with its own
-- search_path, so PostgreSQL switches user and settings around every call) made a 2025-11-25 read
-- cost PostgreSQL more CPU than the plain SELECT (docs/benchmarks.md, History).
-- The login may read only what that check needs: the digests and the expiry, never the client's
-- info or capabilities. The function stays for replicas that still run the previous release.
do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant select (id_hash, principal_hash, expires_at) on pgmcp.legacy_sessions
      to pgmcp_authenticator;
  end if;
end $$;
