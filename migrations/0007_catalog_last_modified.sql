-- When each schema and relation last changed, for `annotations.lastModified` on catalog entries.
-- PostgreSQL keeps no such time itself; the DDL event triggers (0004, 0006) log every schema change
-- to pgmcp.changes, and this keeps the latest time per object after the log is pruned. Objects
-- untouched since pgmcp was installed have no row, and their entries no lastModified.
create table pgmcp.catalog_changes (
  schema_name name not null,
  -- '' for the schema itself (any change in it)
  table_name name not null,
  changed_at timestamptz not null,
  primary key (schema_name, table_name)
);
comment on table pgmcp.catalog_changes is 'Last schema change per schema (table_name '''') and relation, kept from pgmcp.changes.';

create function pgmcp.note_catalog_change() returns trigger
language plpgsql security definer set search_path = pg_catalog, pgmcp
as $$
begin
  insert into pgmcp.catalog_changes (schema_name, table_name, changed_at)
  select new.detail->>'schema', t, new.changed_at
    from unnest(array_remove(array['', new.detail->>'table'], null)) as t
  on conflict (schema_name, table_name) do update set changed_at = excluded.changed_at;
  return null;
end;
$$;
revoke all on function pgmcp.note_catalog_change() from public;

-- Row-level with a WHEN clause: other inserts into the log (resources, rows) call nothing.
create trigger changes_note_catalog_change
  after insert on pgmcp.changes for each row
  when (new.kind = 'schema' and new.detail->>'schema' is not null)
  execute function pgmcp.note_catalog_change();

-- Names and times only; pg_catalog already shows every role the names.
grant select on pgmcp.catalog_changes to public;
