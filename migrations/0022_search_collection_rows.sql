-- Full-text search over the rows of exposed tables (issue 15 point 1): a collection of the config
-- file names its `searchable` columns, and search matches them as the request role, so the
-- table's GRANTs and row-level security decide which rows match, show a snippet and are counted.
-- A row's document is pgmcp.search_document (migration 0014) of its searchable columns in order:
-- the first weighs like a title, the second like a description, the rest like a body, so row and
-- stored-resource ranks compare. pgmcp creates no index on company tables: the operator creates
-- the GIN index pgmcp.row_search_index prints (docs/tools.md); without it a search reads the
-- whole table, within the statement timeout.

-- The document expression of `columns` (identifiers, in order), as an index and a search write it.
create function pgmcp.row_search_document(columns text[]) returns text
language sql immutable parallel safe
set search_path = pg_catalog as $$
  select format('pgmcp.search_document(%s, %s, %s)',
                format('%I::text', columns[1]),
                case when cardinality(columns) >= 2 then format('%I::text', columns[2]) else 'null::text' end,
                case when cardinality(columns) >= 3
                     then (select string_agg(format('coalesce(%I::text, %L)', c, ''), ' || '' '' || ' order by o)
                             from unnest(columns[3:]) with ordinality as u(c, o))
                     else 'null::text' end)
  where cardinality(columns) >= 1
$$;

-- The CREATE INDEX statement search over `columns` of `relid` uses (run it, e.g. with psql's \gexec).
create function pgmcp.row_search_index(relid regclass, columns text[]) returns text
language sql stable
set search_path = pg_catalog as $$
  select format('create index concurrently if not exists %I on %s using gin (%s)',
                left(c.relname, 49) || '_pgmcp_search', relid, pgmcp.row_search_document(columns))
  from pg_class c where c.oid = relid
$$;

-- Up to max_rows rows of schema.table whose searchable `columns` match `query` (websearch syntax),
-- best first: each row's key, the text of `title_column` (null when not given), a highlighted
-- snippet, its rank, and how many rows matched in all. SECURITY INVOKER: only rows the role can
-- read match, and nothing when it may not select the key or every searchable column.
create function pgmcp.search_collection_rows(
  schema_name text, table_name text, columns text[], query text, max_rows integer, title_column text default null)
returns table (row_key text[], title text, snippet text, rank real, total bigint)
language plpgsql stable
set search_path = pg_catalog
as $$
declare
  relid regclass := pgmcp.find_relation(schema_name, table_name);
  key_count integer;
  key_text text;
  key_columns text;
  source text;
  title text;
  document text;
begin
  if relid is null or coalesce(cardinality(columns), 0) = 0
     or not has_schema_privilege((select relnamespace from pg_class where oid = relid), 'USAGE') then
    return;
  end if;
  select count(*),
         string_agg(format('t.%I::text', k.column_name), ', ' order by k.ordinality),
         string_agg(format('t.%I', k.column_name), ', ' order by k.ordinality)
    into key_count, key_text, key_columns
    from pgmcp.primary_key_columns(relid) with ordinality as k
   where has_column_privilege(relid, k.attnum, 'SELECT');
  if key_count = 0 or key_count <> (select count(*) from pgmcp.primary_key_columns(relid)) then
    return;
  end if;
  if exists (select from unnest(columns) as c(name)
              where not exists (select from pg_attribute a
                                 where a.attrelid = relid and a.attname = c.name and a.attnum > 0
                                   and not a.attisdropped and has_column_privilege(relid, a.attnum, 'SELECT'))) then
    return;
  end if;
  select string_agg(format('t.%I::text', c), ', ' order by o) into source
    from unnest(columns) with ordinality as u(c, o);
  title := case
    when title_column is not null
     and exists (select from pg_attribute a
                  where a.attrelid = relid and a.attname = title_column and a.attnum > 0
                    and not a.attisdropped and has_column_privilege(relid, a.attnum, 'SELECT'))
    then format('t.%I::text', title_column) else 'null::text' end;
  document := pgmcp.row_search_document(columns);
  return query execute format(
    'select m.row_key, m.title,
            ts_headline(''english''::regconfig, m.source, $1,
                        ''MaxFragments=1, MaxWords=24, MinWords=8, StartSel=**, StopSel=**''),
            m.rank, m.total
       from (select array[%1$s] as row_key, %2$s as title, concat_ws('' — '', %3$s) as source,
                    ts_rank(%4$s, $1) as rank, count(*) over () as total
               from %5$s t
              where %4$s @@ $1
              order by 4 desc, %6$s
              limit $2) m
      order by m.rank desc',
    key_text, title, source, document, relid, key_columns)
    using websearch_to_tsquery('english'::regconfig, query), max_rows;
end;
$$;

grant execute on function pgmcp.row_search_document(text[]) to public;
grant execute on function pgmcp.row_search_index(regclass, text[]) to public;
grant execute on function pgmcp.search_collection_rows(text, text, text[], text, integer, text) to public;

-- Search over stored resources as a request role, served by the GIN index of migration 0014.
-- Under row-level security PostgreSQL evaluates a policy before any condition that is not
-- leakproof, and neither @@ nor pgmcp.search_document is: so as the request role, the index can
-- never serve the match, and a search computed the document of every row the role may read (a
-- role that reads 100,000 rows waited seconds). This function runs as the table's owner, for
-- whom the policy below makes every row visible, lets the index find the matches, and keeps
-- exactly those the resources policy shows the caller: rows one of whose readers is one of the
-- caller's member roles (pgmcp.member_roles() of the caller), or every row for a caller that
-- row-level security does not apply to (a superuser or BYPASSRLS role). The caller is the role
-- the transaction runs as (SET ROLE, which only a member may set), else the session user.
create function pgmcp.search_resources(query text, max_rows integer)
returns table (uri text, title text, mime_type text, rank real, snippet text, total bigint)
language plpgsql stable security definer
set search_path = pg_catalog
as $$
declare
  caller text := coalesce(nullif(current_setting('role'), 'none'), session_user);
  bypass boolean;
  roles text[];
  q tsquery := websearch_to_tsquery('english'::regconfig, query);
begin
  select r.rolsuper or r.rolbypassrls into bypass from pg_roles r where r.rolname = caller;
  -- pgmcp.member_roles()'s rules (0011, 0024) for the caller rather than current_user (the owner,
  -- here): the roles whose privileges the caller holds, so a NOINHERIT role or login gets none of
  -- the roles granted to it.
  roles := array(
    with recursive candidates(roleid) as (
      select unnest(array[to_regrole(quote_ident(caller))::oid,
                          to_regrole('pg_database_owner')::oid])
      union
      select m.roleid from pg_auth_members m join candidates c on m.member = c.roleid
    )
    select pg_get_userbyid(roleid)::text from candidates
     where pg_has_role(caller::name, roleid, 'USAGE')
  ) || array['public'];
  return query
  with matches as (
    select r.uri, coalesce(r.title, r.name) as title, r.mime_type, r.description, r.text,
           ts_rank(pgmcp.search_document(r.title, r.description, r.text), q) as rank
      from pgmcp.resources r
     where pgmcp.search_document(r.title, r.description, r.text) @@ q
       -- An expression, not the column: the readers index must not join the match (a role's
       -- readers select 100,000 rows where the words select a handful).
       and (bypass or coalesce(r.readers, '{}') && roles)
       and not r.sensitive -- never a snippet of what needs a person's consent
  ),
  ranked as (
    select m.*, count(*) over () as total from matches m order by m.rank desc, m.uri limit max_rows
  )
  select k.uri, k.title, k.mime_type, k.rank,
         ts_headline('english'::regconfig, concat_ws(' — ', k.title, k.description, left(k.text, 20000)), q,
                     'MaxFragments=1, MaxWords=24, MinWords=8, StartSel=**, StopSel=**'),
         k.total
    from ranked k
   order by k.rank desc, k.uri;
end;
$$;

-- The owner (this function, the rebuild functions) reads every row; request roles' policies are
-- unchanged (a policy applies only to the roles it names).
do $$
begin
  execute format('create policy resources_readable_by_owner on pgmcp.resources for select to %I using (true)',
                 current_user);
end $$;

revoke all on function pgmcp.search_resources(text, integer) from public;
grant execute on function pgmcp.search_resources(text, integer) to public;
