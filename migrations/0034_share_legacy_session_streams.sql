-- Issue 34 point 1: a 2025-11-25 HTTP session is one session whatever replica answers. Its
-- subscriptions are kept with the session (any replica writes them, the replica holding its GET
-- stream reads them), and the stream is claimed by generation: the newest GET stream wins, and the
-- replica holding an older one closes it. Every change to what the holder of a session's stream
-- must know (the session ended, its subscriptions or log level changed, its stream was claimed)
-- sends NOTIFY pgmcp_sessions with the session's id digest (hex, a JSON string): a hint to re-read
-- the row, never the row itself. Anyone may NOTIFY any channel, so a holder acts only on what it
-- reads back.
alter table pgmcp.legacy_sessions add column stream_generation bigint not null default 0;

create table pgmcp.legacy_session_subscriptions (
  id_hash bytea not null references pgmcp.legacy_sessions (id_hash) on delete cascade,
  -- As the client named it (unsubscribe names the same), and normalized, as delivery matches it.
  uri text not null,
  key text not null,
  primary key (id_hash, uri)
);
revoke all on pgmcp.legacy_session_subscriptions from public;

-- A session that ends however it ends (DELETE through any replica, expiry swept by an initialize,
-- an operator's delete) tells the holder of its stream.
create function pgmcp.notify_legacy_session_end() returns trigger
language plpgsql security definer set search_path = pg_catalog, pgmcp, pg_temp as $$
begin
  perform pg_notify('pgmcp_sessions', to_json(encode(old.id_hash, 'hex'))::text);
  return null;
end $$;
revoke all on function pgmcp.notify_legacy_session_end() from public;

create trigger legacy_sessions_notify_end after delete on pgmcp.legacy_sessions
  for each row execute function pgmcp.notify_legacy_session_end();

-- Subscribe the live session of this principal to `p_uri` (normalized `p_key`): 'subscribed';
-- 'full' when it already holds `p_max` other URIs; 'gone' when the session is not live. The row
-- lock on the session makes concurrent subscribes through several replicas count one after another.
create function pgmcp.subscribe_legacy_session(
  p_id_hash bytea, p_principal_hash bytea, p_uri text, p_key text, p_max integer
) returns text
language plpgsql security definer set search_path = pg_catalog, pgmcp, pg_temp as $$
begin
  perform from pgmcp.legacy_sessions
   where id_hash = p_id_hash and principal_hash = p_principal_hash and expires_at > now()
     for no key update;
  if not found then
    return 'gone';
  end if;
  if not exists (select from pgmcp.legacy_session_subscriptions
                  where id_hash = p_id_hash and uri = p_uri)
     and (select count(*) from pgmcp.legacy_session_subscriptions
           where id_hash = p_id_hash) >= p_max then
    return 'full';
  end if;
  insert into pgmcp.legacy_session_subscriptions (id_hash, uri, key)
  values (p_id_hash, p_uri, p_key)
  on conflict (id_hash, uri) do update set key = excluded.key;
  perform pg_notify('pgmcp_sessions', to_json(encode(p_id_hash, 'hex'))::text);
  return 'subscribed';
end $$;

-- Unsubscribe; harmless for a URI not subscribed. False when the session is not live.
create function pgmcp.unsubscribe_legacy_session(
  p_id_hash bytea, p_principal_hash bytea, p_uri text
) returns boolean
language plpgsql security definer set search_path = pg_catalog, pgmcp, pg_temp as $$
begin
  perform from pgmcp.legacy_sessions
   where id_hash = p_id_hash and principal_hash = p_principal_hash and expires_at > now();
  if not found then
    return false;
  end if;
  delete from pgmcp.legacy_session_subscriptions where id_hash = p_id_hash and uri = p_uri;
  if found then
    perform pg_notify('pgmcp_sessions', to_json(encode(p_id_hash, 'hex'))::text);
  end if;
  return true;
end $$;

-- A new GET stream claims the session's stream: its generation, or null when the session is not
-- live. The holder of an older generation, told, closes its stream.
create function pgmcp.claim_legacy_session_stream(p_id_hash bytea, p_principal_hash bytea)
returns bigint
language plpgsql security definer set search_path = pg_catalog, pgmcp, pg_temp as $$
declare
  generation bigint;
begin
  update pgmcp.legacy_sessions set stream_generation = stream_generation + 1
   where id_hash = p_id_hash and principal_hash = p_principal_hash and expires_at > now()
  returning stream_generation into generation;
  if generation is not null then
    perform pg_notify('pgmcp_sessions', to_json(encode(p_id_hash, 'hex'))::text);
  end if;
  return generation;
end $$;

-- What the holder of a session's stream re-reads when told (or on reconnect): no row when the
-- session is not live; else its stream's generation, log level and subscriptions {uri: key}.
create function pgmcp.legacy_session_stream_state(p_id_hash bytea, p_principal_hash bytea)
returns table (stream_generation bigint, log_level text, subscriptions jsonb)
language sql stable security definer set search_path = pg_catalog, pgmcp, pg_temp as $$
  select s.stream_generation, s.log_level,
         coalesce((select jsonb_object_agg(u.uri, u.key)
                     from pgmcp.legacy_session_subscriptions u
                    where u.id_hash = s.id_hash), '{}'::jsonb)
    from pgmcp.legacy_sessions s
   where s.id_hash = p_id_hash and s.principal_hash = p_principal_hash and s.expires_at > now()
$$;

-- logging/setLevel through any replica reaches the stream's holder too.
create or replace function pgmcp.set_legacy_session_level(
  p_id_hash bytea, p_principal_hash bytea, p_level text
) returns boolean
language plpgsql security definer set search_path = pg_catalog, pgmcp, pg_temp as $$
begin
  update pgmcp.legacy_sessions set log_level = p_level
   where id_hash = p_id_hash and principal_hash = p_principal_hash and expires_at > now();
  if not found then
    return false;
  end if;
  perform pg_notify('pgmcp_sessions', to_json(encode(p_id_hash, 'hex'))::text);
  return true;
end $$;

revoke all on function
  pgmcp.subscribe_legacy_session(bytea, bytea, text, text, integer),
  pgmcp.unsubscribe_legacy_session(bytea, bytea, text),
  pgmcp.claim_legacy_session_stream(bytea, bytea),
  pgmcp.legacy_session_stream_state(bytea, bytea) from public;

do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant execute on function
      pgmcp.subscribe_legacy_session(bytea, bytea, text, text, integer),
      pgmcp.unsubscribe_legacy_session(bytea, bytea, text),
      pgmcp.claim_legacy_session_stream(bytea, bytea),
      pgmcp.legacy_session_stream_state(bytea, bytea)
      to pgmcp_authenticator;
  end if;
end $$;
