-- The WAL source's log takes a batch as parallel arrays, one element per row of pgmcp.changes, named
-- and ordered by pgmcp (src/db/wal/logged-rows.ts: each table's key is looked up once per
-- description the server sends of it), so PostgreSQL inserts them without parsing a document,
-- looking up tables or building keys for every row. Same rows, same replay rule, same NOTIFY (one
-- per batch). pgmcp.log_wal_changes stays for replicas still running the version before.
create function pgmcp.log_wal_rows(
  commit_lsn pg_lsn, lsns pg_lsn[], relations text[], kinds text[], details jsonb[]
) returns integer
language plpgsql security definer set search_path = pg_catalog, pgmcp, pg_temp
as $$
declare
  done pg_lsn;
  last_seq bigint;
  logged integer;
begin
  select applied_lsn into done from pgmcp.change_capture for update;
  if commit_lsn <= done then
    return -1;
  end if;
  with logged as (
    insert into pgmcp.changes (relation, kind, detail)
    select r.relation, r.kind, r.detail
      from unnest(lsns, relations, kinds, details) with ordinality
           as r(lsn, relation, kind, detail, position)
     -- A batch read again after a crash may hold transactions logged before it.
     where r.lsn > done
     order by r.position
    returning seq)
  select max(seq), count(*) into last_seq, logged from logged;
  update pgmcp.change_capture set applied_lsn = commit_lsn;
  if logged > 0 then
    perform pg_notify('pgmcp_changes', json_build_object('seq', last_seq, 'rows', logged)::text);
  end if;
  return logged;
end;
$$;
revoke all on function pgmcp.log_wal_rows(pg_lsn, pg_lsn[], text[], text[], jsonb[]) from public;
