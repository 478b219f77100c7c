-- Issue 32 points 7, 9 and 10.
--
-- 1. DDL on temporary objects is never a catalog change. The schema-change capture (0004, 0006)
--    skipped objects in pg_temp schemas by their schema, but a policy is in no schema, so a policy
--    on a temporary table was logged, and every listener heard list_changed. It is now the
--    table's. GRANT and REVOKE name no object to an event trigger (pg_event_trigger_ddl_commands
--    gives only the object type), so they are logged whatever they touch: pgmcp itself runs none
--    per request (src/db/ad-hoc-sql.ts checks who calls its temporary functions in their body).
create or replace function pgmcp.capture_schema_changes() returns event_trigger
language plpgsql security definer set search_path = pg_catalog, pgmcp, pg_temp
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
         -- A policy is in no schema: it is its table's (a temporary table's policy is temporary).
         and not exists (select from pg_policy p join pg_class c on c.oid = p.polrelid
                                                 join pg_namespace n on n.oid = c.relnamespace
                          where d.classid = 'pg_policy'::regclass and p.oid = d.objid
                            and n.nspname ~ '^pg_(toast_)?temp_')
         and d.object_type not in ('type', 'rule', 'sequence', 'toast table', 'trigger')
      returning seq)
    select max(seq) into last_seq from logged;
  end if;
  if last_seq is not null then
    perform pg_notify('pgmcp_changes', json_build_object('seq', last_seq, 'schema', true)::text);
  end if;
end;
$$;

-- 2. A consent answer is used once (docs/consent.md): the digest of each requestState answered is
--    kept until the state expires, across replicas, and a second answer with it is refused.
--    Expired digests are pruned by the next answer. Only the server's login writes it, through
--    pgmcp.use_consent_state.
create table pgmcp.consent_states_used (
  state_digest bytea primary key,
  expires_at timestamptz not null
);
create index consent_states_used_expires_at on pgmcp.consent_states_used (expires_at);
alter table pgmcp.consent_states_used enable row level security;
revoke all on pgmcp.consent_states_used from public;
comment on table pgmcp.consent_states_used is 'Digests of consent requestStates already answered (pgmcp), kept until they expire.';

-- True the first time a state's digest is given, false ever after (until it expires).
create function pgmcp.use_consent_state(p_digest bytea, p_expires_at timestamptz) returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pgmcp, pg_temp as $$
begin
  delete from pgmcp.consent_states_used where expires_at < now();
  insert into pgmcp.consent_states_used (state_digest, expires_at)
  values (p_digest, p_expires_at)
  on conflict (state_digest) do nothing;
  return found;
end;
$$;
revoke all on function pgmcp.use_consent_state(bytea, timestamptz) from public;

do $$
begin
  if exists (select from pg_roles where rolname = 'pgmcp_authenticator') then
    grant execute on function pgmcp.use_consent_state(bytea, timestamptz) to pgmcp_authenticator;
  end if;
end $$;

-- 3. A deleted row's key is shown only to roles that could have read the row (issue 32 point 10).
--    The row is gone, so its row-level security cannot be asked: where row-level security applies
--    to the role (row_security_active), a deletion is not shown at all, neither through the pull
--    path (changes_since) nor to listeners; the role may select from the table is enough only
--    where it does not.
create or replace function pgmcp.change_visible(kind text, detail jsonb) returns boolean
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
       and has_schema_privilege((select relnamespace from pg_class where oid = relid), 'USAGE')
       and not row_security_active(relid);
  end if;
  return exists (
    select from pgmcp.collection_rows(schema_name, table_name, 'read',
                                      array(select jsonb_array_elements_text(detail->'key')), 1));
end;
$$;
