-- A transaction that changed more rows than the WAL reader keeps of one (PGMCP_WAL_MAX_TRANSACTION_ROWS,
-- docs/operations.md "Choosing a change source") is not logged row by row: its rows were not kept,
-- so that its size cannot exhaust pgmcp's memory. It is logged as a new capture epoch instead, with
-- the same replay rule as the rows (a commit at or before the last logged one is skipped), and the
-- reader's position moves past it: every listener resyncs, which covers its rows and the others of
-- its batch. The NOTIFY wakes the listeners, as a batch of rows does. Returns the new epoch, or -1
-- for a replay.
create function pgmcp.log_wal_resync(commit_lsn pg_lsn) returns bigint
language plpgsql security definer set search_path = pg_catalog, pgmcp, pg_temp
as $$
declare
  done pg_lsn;
  new_epoch bigint;
begin
  select applied_lsn into done from pgmcp.change_capture for update;
  if commit_lsn <= done then
    return -1;
  end if;
  update pgmcp.change_capture set epoch = epoch + 1, applied_lsn = commit_lsn
  returning epoch into new_epoch;
  perform pg_notify('pgmcp_changes', json_build_object('epoch', new_epoch)::text);
  return new_epoch;
end;
$$;
revoke all on function pgmcp.log_wal_resync(pg_lsn) from public;
