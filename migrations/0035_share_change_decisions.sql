-- Issue 34 point 3: who may hear each change is decided once per database, by one replica (the
-- feed leader, holding a session advisory lock), and shared with the others through these tables,
-- so delivery costs PostgreSQL about the same with one replica as with many.
--
-- pgmcp.feed_replicas: each replica's listening principals (role and claims), refreshed while it
-- runs; the leader decides for every principal listed here. pgmcp.feed_batches: each batch of the
-- change log the leader read, with its decisions per principal; the other replicas deliver from
-- them instead of asking PostgreSQL again. Only the login reads or writes either: claims stay out
-- of request roles' reach.
create table pgmcp.feed_replicas (
  replica text primary key,
  principals jsonb not null default '[]',
  seen_at timestamptz not null default now()
);
comment on table pgmcp.feed_replicas is 'Live replicas and the principals their listen streams run as; the feed leader decides for these.';

create table pgmcp.feed_batches (
  id bigint generated always as identity primary key,
  published_at timestamptz not null default now(),
  -- JSON text, read only by replicas (text: neither parsed nor printed by PostgreSQL)
  -- the change log rows of the batch, as the leader read them
  changes text not null,
  -- role -> [[seq, before, after, sensitive], ...]
  decisions text not null
);
comment on table pgmcp.feed_batches is 'Batches of the change log with who may hear each change, published by the feed leader; pruned after a minute.';

revoke all on pgmcp.feed_replicas, pgmcp.feed_batches from public;

-- The newest change a follower's batches should have brought by now (a follower listens for the
-- leader's batches, not for every change; this asks every few hundred milliseconds instead).
create function pgmcp.latest_change()
returns table (seq bigint, txid xid8)
language sql stable security definer set search_path = pg_catalog, pgmcp, pg_temp
as $$ select c.seq, c.txid from pgmcp.changes c order by c.seq desc limit 1 $$;
revoke all on function pgmcp.latest_change() from public;

do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant select, insert, update, delete on pgmcp.feed_replicas, pgmcp.feed_batches to pgmcp_authenticator;
    grant execute on function pgmcp.latest_change() to pgmcp_authenticator;
  end if;
end $$;
