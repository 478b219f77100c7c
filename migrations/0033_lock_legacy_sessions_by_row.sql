-- Issue 32 point 8: opening a legacy session took pg_advisory_xact_lock on a key any session can
-- compute and take (advisory locks have no privileges), so a caller holding it, through the query
-- tool or any client connected as a company role, stalled every initialize of that role. The
-- per-role lock is now a row lock on a table only pgmcp's own functions touch: request roles have
-- no privilege on it, so they can neither lock its rows (FOR UPDATE/SHARE need UPDATE) nor the
-- table (LOCK TABLE needs a privilege). The pooled sessions' lock_timeout (PGMCP_LOCK_TIMEOUT_MS)
-- bounds any wait that remains.
create table pgmcp.legacy_session_locks (
  -- The session's role; '' for the login itself.
  role text primary key
);
revoke all on pgmcp.legacy_session_locks from public;

create or replace function pgmcp.open_legacy_session(
  p_id_hash bytea, p_principal_hash bytea, p_role text, p_protocol_version text,
  p_client_info jsonb, p_client_capabilities jsonb, p_idle_seconds integer, p_max_per_role integer
) returns boolean
language plpgsql security definer set search_path = pg_catalog, pgmcp, pg_temp as $$
begin
  -- Two first sessions of a role: the second insert waits for the first to commit, then finds the
  -- row; either way the row is then locked until this transaction ends.
  insert into pgmcp.legacy_session_locks (role) values (coalesce(p_role, ''))
    on conflict do nothing;
  perform from pgmcp.legacy_session_locks where role = coalesce(p_role, '') for update;
  delete from pgmcp.legacy_sessions where expires_at <= now();
  if (select count(*) from pgmcp.legacy_sessions
      where role is not distinct from p_role) >= p_max_per_role then
    return false;
  end if;
  insert into pgmcp.legacy_sessions (id_hash, principal_hash, role, protocol_version, client_info,
                                     client_capabilities, expires_at)
  values (p_id_hash, p_principal_hash, p_role, p_protocol_version, p_client_info,
          p_client_capabilities, now() + make_interval(secs => p_idle_seconds));
  return true;
end $$;
