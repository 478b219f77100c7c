-- Legacy (MCP 2025-11-25) HTTP sessions (issue 14), shared by every replica on this database, so
-- a session created through one process is accepted by another. The Mcp-Session-Id itself is never
-- stored: only its SHA-256. A session is bound to who created it (principal_hash: SHA-256 of the
-- role and the token's issuer and subject); the same id from anyone else is unknown (404).
-- Subscriptions and the GET stream are not here: they live on the process holding the stream.
create table pgmcp.legacy_sessions (
  id_hash bytea primary key,
  principal_hash bytea not null,
  role text,
  protocol_version text not null,
  client_info jsonb not null,
  client_capabilities jsonb not null,
  log_level text,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index legacy_sessions_role on pgmcp.legacy_sessions (role, expires_at);
create index legacy_sessions_expiry on pgmcp.legacy_sessions (expires_at);
revoke all on pgmcp.legacy_sessions from public;

-- Request roles get nothing here; the server's login writes sessions only through these functions.
-- Creating one checks the per-role cap under a per-role lock, so replicas cannot overshoot it.
create function pgmcp.open_legacy_session(
  p_id_hash bytea, p_principal_hash bytea, p_role text, p_protocol_version text,
  p_client_info jsonb, p_client_capabilities jsonb, p_idle_seconds integer, p_max_per_role integer
) returns boolean
language plpgsql security definer set search_path = pg_catalog, pgmcp as $$
begin
  perform pg_advisory_xact_lock(hashtext('pgmcp.legacy_sessions'), hashtext(coalesce(p_role, '')));
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

-- A live session of this principal, its idle expiry pushed back; no row when unknown, expired or
-- another principal's.
create function pgmcp.touch_legacy_session(
  p_id_hash bytea, p_principal_hash bytea, p_idle_seconds integer
) returns table (protocol_version text, client_info jsonb, client_capabilities jsonb, log_level text)
language sql security definer set search_path = pg_catalog, pgmcp as $$
  update pgmcp.legacy_sessions s
     set last_seen_at = now(), expires_at = now() + make_interval(secs => p_idle_seconds)
   where s.id_hash = p_id_hash and s.principal_hash = p_principal_hash and s.expires_at > now()
  returning s.protocol_version, s.client_info, s.client_capabilities, s.log_level
$$;

create function pgmcp.set_legacy_session_level(
  p_id_hash bytea, p_principal_hash bytea, p_level text
) returns boolean
language sql security definer set search_path = pg_catalog, pgmcp as $$
  with updated as (
    update pgmcp.legacy_sessions set log_level = p_level
     where id_hash = p_id_hash and principal_hash = p_principal_hash and expires_at > now()
    returning 1)
  select exists (select from updated)
$$;

create function pgmcp.close_legacy_session(p_id_hash bytea, p_principal_hash bytea)
returns boolean
language sql security definer set search_path = pg_catalog, pgmcp as $$
  with deleted as (
    delete from pgmcp.legacy_sessions
     where id_hash = p_id_hash and principal_hash = p_principal_hash and expires_at > now()
    returning 1)
  select exists (select from deleted)
$$;

revoke all on function pgmcp.open_legacy_session(bytea, bytea, text, text, jsonb, jsonb, integer, integer),
  pgmcp.touch_legacy_session(bytea, bytea, integer),
  pgmcp.set_legacy_session_level(bytea, bytea, text),
  pgmcp.close_legacy_session(bytea, bytea) from public;

do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant execute on function
      pgmcp.open_legacy_session(bytea, bytea, text, text, jsonb, jsonb, integer, integer),
      pgmcp.touch_legacy_session(bytea, bytea, integer),
      pgmcp.set_legacy_session_level(bytea, bytea, text),
      pgmcp.close_legacy_session(bytea, bytea)
      to pgmcp_authenticator;
  end if;
end $$;
