-- Under the WAL source a deletion (and the old row of an update) is named by the old key the WAL
-- carries. REPLICA IDENTITY USING INDEX on an index other than the primary key carries that
-- index's columns only: the primary key would decode as nulls and the row could not be named, so
-- such a table is refused as NOTHING is (the index the primary key is built on names it well).
create or replace function pgmcp.expose_table(relid regclass) returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  identity "char";
begin
  if not exists (select from pgmcp.primary_key_columns(relid)) then
    raise exception 'table % has no primary key: row resources are named by it', relid
      using errcode = 'invalid_table_definition',
            hint = 'Add a primary key (ALTER TABLE … ADD PRIMARY KEY), then expose the table again.';
  end if;
  perform pgmcp.unexpose_table(relid);
  if (select source from pgmcp.change_capture) = 'wal' then
    identity := (select relreplident from pg_class where oid = relid);
    if identity = 'n' then
      raise exception 'table % has REPLICA IDENTITY NOTHING: the WAL would not name deleted rows', relid
        using errcode = 'invalid_table_definition',
              hint = 'ALTER TABLE … REPLICA IDENTITY DEFAULT, then expose the table again.';
    end if;
    if identity = 'i' and not exists (select from pg_index
                                       where indrelid = relid and indisreplident and indisprimary) then
      raise exception 'table % has REPLICA IDENTITY USING INDEX on an index other than its primary key: the WAL would not name deleted rows by their key', relid
        using errcode = 'invalid_table_definition',
              hint = 'ALTER TABLE … REPLICA IDENTITY DEFAULT (or FULL), then expose the table again.';
    end if;
    perform pgmcp.ensure_change_publication();
    execute format('alter publication pgmcp_changes add table only %s', relid);
    return;
  end if;
  execute format('create trigger pgmcp_capture_inserts after insert on %s referencing new table as new_rows
                  for each statement execute function pgmcp.capture_row_changes()', relid);
  execute format('create trigger pgmcp_capture_updates after update on %s
                  referencing old table as old_rows new table as new_rows
                  for each statement execute function pgmcp.capture_row_changes()', relid);
  execute format('create trigger pgmcp_capture_deletes after delete on %s referencing old table as old_rows
                  for each statement execute function pgmcp.capture_row_changes()', relid);
end;
$$;
revoke all on function pgmcp.expose_table(regclass) from public;
