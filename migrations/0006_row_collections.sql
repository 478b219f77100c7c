-- Row collections and live schema (docs/databases.md "Row collections", README "Live updates").
--
-- Rows of chosen company tables are resources pg://{database}/{schema}/{table}/rows/{key}. They
-- are read by SECURITY INVOKER functions that build their statement from pg_catalog (identifiers
-- quoted with %I, key values bound as parameters, never spliced), so each read runs as the
-- caller's role: the table's own GRANTs and row-level security decide what it returns.
-- `pgmcp expose` installs change capture on such a table; its changes, and schema changes, are
-- logged in pgmcp.changes with a key (rows) or the touched schema and table (DDL) in `detail`,
-- and a role hears of a change exactly when these functions say it can see it.

-- The primary key columns of a table in key order, with their types; none without a primary key.
create function pgmcp.primary_key_columns(relid regclass)
returns table (attnum smallint, column_name name, column_type text)
language sql stable
set search_path = pg_catalog
as $$
  select a.attnum, a.attname, format_type(a.atttypid, a.atttypmod)
    from pg_index i
   cross join lateral unnest(i.indkey::smallint[]) with ordinality as k(attnum, position)
    join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
   where i.indrelid = relid and i.indisprimary
   order by k.position
$$;

-- A table by schema and name, looked up in pg_catalog (to_regclass would fail on a schema the role
-- may not use); null when there is none.
create function pgmcp.find_relation(schema_name text, table_name text) returns regclass
language sql stable
set search_path = pg_catalog
as $$
  select c.oid::regclass from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where n.nspname = schema_name and c.relname = table_name
$$;
grant execute on function pgmcp.find_relation(text, text) to public;

-- Rows of schema_name.table_name as the current role, in primary-key order:
--   mode 'read': the row whose key is `key` (its values' text forms, in key order);
--   mode 'list': up to max_rows rows after `key` (from the start when null).
-- Each row comes back as its key (text forms) and, for reads, its content: a JSON object of the
-- columns the role may select, bytea as base64; for lists, the text of title_column when given.
-- Nothing when the table does not exist, has no primary key, the role may not select its key
-- columns, or the key has the wrong number of values. A value that does not convert to its
-- column's type raises the usual data exception (SQLSTATE class 22).
create function pgmcp.collection_rows(
  schema_name text, table_name text, mode text, key text[], max_rows integer, title_column text default null)
returns table (row_key text[], content text)
language plpgsql stable
set search_path = pg_catalog
as $$
declare
  relid regclass := pgmcp.find_relation(schema_name, table_name);
  key_count integer;
  key_text text;
  key_values text;
  key_columns text;
  content_columns text;
  title text;
begin
  if relid is null or mode not in ('read', 'list')
     or not has_schema_privilege((select relnamespace from pg_class where oid = relid), 'USAGE') then
    return;
  end if;
  select count(*),
         string_agg(format('t.%I::text', k.column_name), ', ' order by k.ordinality),
         string_agg(format('$1[%s]::%s', k.ordinality, k.column_type), ', ' order by k.ordinality),
         string_agg(format('t.%I', k.column_name), ', ' order by k.ordinality)
    into key_count, key_text, key_values, key_columns
    from pgmcp.primary_key_columns(relid) with ordinality as k
   where has_column_privilege(relid, k.attnum, 'SELECT');
  if key_count = 0 or key_count <> (select count(*) from pgmcp.primary_key_columns(relid)) then
    return;
  end if;
  if mode = 'read' then
    if key is null or cardinality(key) <> key_count then
      return;
    end if;
    select string_agg(
             case when a.atttypid = 'bytea'::regtype
                  then format('translate(encode(t.%1$I, ''base64''), E''\n'', '''') as %1$I', a.attname)
                  else format('t.%I', a.attname) end,
             ', ' order by a.attnum)
      into content_columns
      from pg_attribute a
     where a.attrelid = relid and a.attnum > 0 and not a.attisdropped
       and has_column_privilege(relid, a.attnum, 'SELECT');
    return query execute format(
      'select array[%s], (select row_to_json(r)::text from (select %s) r)
         from %s t where (%s) = (%s)',
      key_text, content_columns, relid, key_columns, key_values)
      using key;
  else
    if key is not null and cardinality(key) <> key_count then
      return;
    end if;
    title := case
      when title_column is not null
       and exists (select from pg_attribute a
                    where a.attrelid = relid and a.attname = title_column and a.attnum > 0
                      and not a.attisdropped and has_column_privilege(relid, a.attnum, 'SELECT'))
      then format('t.%I::text', title_column) else 'null::text' end;
    return query execute format(
      'select array[%s], %s from %s t %s order by %s limit $2',
      key_text, title, relid,
      case when key is null then '' else format('where (%s) > (%s)', key_columns, key_values) end,
      key_columns)
      using key, max_rows;
  end if;
end;
$$;

grant execute on function pgmcp.primary_key_columns(regclass) to public;
grant execute on function pgmcp.collection_rows(text, text, text, text[], integer, text) to public;

-- Change capture for an exposed company table: like pgmcp.capture_changes, one log insert and one
-- NOTIFY per statement, but rows are named by their primary key: detail = {schema, table, key}
-- (the key's text forms), uri null; pgmcp turns that into pg://{database}/{schema}/{table}/rows/{key}
-- with the database name it was configured with. No readers: who hears of a change is decided by
-- pgmcp.change_visible, as the listening role.
create function pgmcp.capture_row_changes() returns trigger
language plpgsql security definer set search_path = pg_catalog, pgmcp
as $$
declare
  relation text := format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME);
  key_new text;
  key_old text;
  join_on text;
  last_seq bigint;
  logged bigint;
begin
  select string_agg(format('n.%I::text', k.column_name), ', ' order by k.ordinality),
         string_agg(format('o.%I::text', k.column_name), ', ' order by k.ordinality),
         string_agg(format('o.%1$I = n.%1$I', k.column_name), ' and ' order by k.ordinality)
    into key_new, key_old, join_on
    from pgmcp.primary_key_columns(TG_RELID) with ordinality as k;
  if key_new is null then
    return null; -- the primary key was dropped after the table was exposed: nothing to name rows by
  end if;
  if TG_OP = 'INSERT' then
    execute format(
      'with logged as (insert into pgmcp.changes (relation, kind, detail)
         select $1, ''created'', jsonb_build_object(''schema'', $2, ''table'', $3, ''key'', array[%s])
           from new_rows n returning seq)
       select max(seq), count(*) from logged', key_new)
      into last_seq, logged using relation, TG_TABLE_SCHEMA, TG_TABLE_NAME;
  elsif TG_OP = 'DELETE' then
    execute format(
      'with logged as (insert into pgmcp.changes (relation, kind, detail)
         select $1, ''deleted'', jsonb_build_object(''schema'', $2, ''table'', $3, ''key'', array[%s])
           from old_rows o returning seq)
       select max(seq), count(*) from logged', key_old)
      into last_seq, logged using relation, TG_TABLE_SCHEMA, TG_TABLE_NAME;
  else
    -- Rows pair up by key (a key that changed is a delete and a create). Compared as jsonb: some
    -- column types (json, point) have no equality operator for a row comparison.
    execute format(
      'with changed as (
         select array[%1$s] as old_key, array[%2$s] as new_key
           from old_rows o join new_rows n on %3$s where to_jsonb(o) is distinct from to_jsonb(n)
         union all
         select array[%1$s], null from old_rows o where not exists (select from new_rows n where %3$s)
         union all
         select null, array[%2$s] from new_rows n where not exists (select from old_rows o where %3$s)),
       logged as (insert into pgmcp.changes (relation, kind, detail)
         select $1, case when old_key is null then ''created'' when new_key is null then ''deleted''
                         else ''updated'' end,
                jsonb_build_object(''schema'', $2, ''table'', $3, ''key'', coalesce(new_key, old_key))
           from changed returning seq)
       select max(seq), count(*) from logged', key_old, key_new, join_on)
      into last_seq, logged using relation, TG_TABLE_SCHEMA, TG_TABLE_NAME;
  end if;
  if logged > 0 then
    perform pg_notify('pgmcp_changes', json_build_object('seq', last_seq, 'rows', logged)::text);
  end if;
  return null;
end;
$$;
revoke all on function pgmcp.capture_row_changes() from public;

-- pgmcp expose / unexpose: install or remove the three capture triggers on a company table. Run by
-- a role that may create triggers on it (its owner or a superuser).
create function pgmcp.expose_table(relid regclass) returns void
language plpgsql
set search_path = pg_catalog
as $$
begin
  if not exists (select from pgmcp.primary_key_columns(relid)) then
    raise exception 'table % has no primary key: row resources are named by it', relid
      using errcode = 'invalid_table_definition',
            hint = 'Add a primary key (ALTER TABLE … ADD PRIMARY KEY), then expose the table again.';
  end if;
  perform pgmcp.unexpose_table(relid);
  execute format('create trigger pgmcp_capture_inserts after insert on %s referencing new table as new_rows
                  for each statement execute function pgmcp.capture_row_changes()', relid);
  execute format('create trigger pgmcp_capture_updates after update on %s
                  referencing old table as old_rows new table as new_rows
                  for each statement execute function pgmcp.capture_row_changes()', relid);
  execute format('create trigger pgmcp_capture_deletes after delete on %s referencing old table as old_rows
                  for each statement execute function pgmcp.capture_row_changes()', relid);
end;
$$;

create function pgmcp.unexpose_table(relid regclass) returns void
language plpgsql
set search_path = pg_catalog
as $$
declare
  name text;
begin
  for name in select t.tgname from pg_trigger t
               where t.tgrelid = relid
                 and t.tgname in ('pgmcp_capture_inserts', 'pgmcp_capture_updates', 'pgmcp_capture_deletes')
  loop
    execute format('drop trigger %I on %s', name, relid);
  end loop;
end;
$$;
revoke all on function pgmcp.expose_table(regclass), pgmcp.unexpose_table(regclass) from public;

-- Whether the current role may hear of a row or schema change (the resources' own changes are
-- decided by their readers, in the changes_readable_by_readers policy):
--   a row created or updated: the role can read the row now (as resources/read would);
--   a row deleted: the role may select from the table (the row itself is gone);
--   a schema change: the role holds a privilege on the table it touched, or, for a schema-level
--   change or a dropped object, may use the schema; GRANT and REVOKE name no object, so everyone
--   hears that the list may have changed.
create function pgmcp.change_visible(kind text, detail jsonb) returns boolean
language plpgsql stable
set search_path = pg_catalog
as $$
declare
  schema_name text := detail->>'schema';
  table_name text := detail->>'table';
  relid regclass;
begin
  if schema_name is null then
    return kind = 'schema';
  end if;
  relid := case when table_name is not null then pgmcp.find_relation(schema_name, table_name) end;
  if kind = 'schema' then
    if relid is not null then
      return has_table_privilege(relid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
          or has_any_column_privilege(relid, 'SELECT, INSERT, UPDATE, REFERENCES');
    end if;
    return coalesce((select has_schema_privilege(oid, 'USAGE') from pg_namespace where nspname = schema_name), true);
  end if;
  if relid is null then
    return false;
  end if;
  if kind = 'deleted' then
    return has_table_privilege(relid, 'SELECT')
       and has_schema_privilege((select relnamespace from pg_class where oid = relid), 'USAGE');
  end if;
  return exists (
    select from pgmcp.collection_rows(schema_name, table_name, 'read',
                                      array(select jsonb_array_elements_text(detail->'key')), 1));
end;
$$;
grant execute on function pgmcp.change_visible(text, jsonb) to public;

create policy changes_visible_rows_and_schema on pgmcp.changes
  for select using (
    (kind = 'schema' or detail ? 'key') and pgmcp.change_visible(kind, detail)
  );

-- Listeners need `detail` to name what a row or schema change touched.
drop function pgmcp.read_changes(xid8, xid8, bigint, integer);
create function pgmcp.read_changes(horizon xid8, after_txid xid8, after_seq bigint, max_rows integer)
returns table (snapshot_xmin xid8, seq bigint, txid xid8, relation text, uri text, kind text, detail jsonb)
language plpgsql stable security definer set search_path = pg_catalog, pgmcp
as $$
begin
  return query
  select s.xmin, c.seq, c.txid, c.relation, c.uri, c.kind, c.detail
    from (select pg_snapshot_xmin(pg_current_snapshot()) as xmin) s
    left join lateral (
      select c.seq, c.txid, c.relation, c.uri, c.kind, c.detail
        from pgmcp.changes c
       where (c.txid, c.seq) > (greatest(after_txid, horizon),
                                case when after_txid < horizon then 0 else after_seq end)
       order by c.txid, c.seq
       limit max_rows
    ) c on true;
end;
$$;
revoke all on function pgmcp.read_changes(xid8, xid8, bigint, integer) from public;
do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant execute on function pgmcp.read_changes(xid8, xid8, bigint, integer) to pgmcp_authenticator;
  end if;
end $$;

-- Schema changes now name the table they touched (detail.table; an index or constraint counts as
-- its table's, a column as its table's), so pgmcp can notify pg://{database}/{schema}/{table}.
-- Objects that are not part of a description (types, rules, TOAST, sequences) are not logged.
create or replace function pgmcp.capture_schema_changes() returns event_trigger
language plpgsql security definer set search_path = pg_catalog, pgmcp
as $$
declare
  last_seq bigint;
begin
  if TG_EVENT = 'sql_drop' then
    with logged as (
      insert into pgmcp.changes (relation, kind, detail)
      select coalesce(d.object_identity, d.object_type), 'schema',
             jsonb_build_object(
               'command', TG_TAG, 'objectType', d.object_type, 'schema', d.schema_name, 'dropped', true,
               'table', case when d.object_type in ('table', 'view', 'materialized view', 'foreign table',
                                                    'table column', 'table constraint')
                             then d.address_names[2] end)
        from pg_event_trigger_dropped_objects() d
       where d.schema_name is distinct from 'pgmcp' and not d.is_temporary
         and d.object_type in ('schema', 'table', 'view', 'materialized view', 'foreign table',
                               'table column', 'table constraint', 'index')
      returning seq)
    select max(seq) into last_seq from logged;
  else
    with logged as (
      insert into pgmcp.changes (relation, kind, detail)
      select coalesce(d.object_identity, d.object_type), 'schema',
             jsonb_build_object(
               'command', d.command_tag, 'objectType', d.object_type, 'schema', d.schema_name,
               'table', (select t.relname from pg_class c
                           left join pg_index i on c.relkind in ('i', 'I') and i.indexrelid = c.oid
                           join pg_class t on t.oid = coalesce(i.indrelid, c.oid)
                          where d.classid = 'pg_class'::regclass and c.oid = d.objid
                            and t.relkind in ('r', 'p', 'v', 'm', 'f')))
        from pg_event_trigger_ddl_commands() d
       where d.schema_name is distinct from 'pgmcp' and not d.in_extension
         and coalesce(d.schema_name, '') !~ '^pg_temp'
         and d.object_type not in ('type', 'rule', 'sequence', 'toast table', 'trigger')
      returning seq)
    select max(seq) into last_seq from logged;
  end if;
  if last_seq is not null then
    perform pg_notify('pgmcp_changes', json_build_object('seq', last_seq, 'schema', true)::text);
  end if;
end;
$$;

-- The row template (docs/databases.md "Row collections"), listed with the catalog's.
insert into pgmcp.resource_templates (uri_template, name, title, description, mime_type, readers)
values
  ('pg://{database}/{schema}/{table}/rows/{key}', 'row', 'Table row',
   'A row of a table the server exposes, as JSON (bytea as base64), keyed by its primary key: the values in key order, each percent-encoded, joined with ",".',
   'application/json', array['public'])
on conflict (uri_template) do nothing;
