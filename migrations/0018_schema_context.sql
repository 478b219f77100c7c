-- Value hints for tables the caller reads under row-level security
-- (docs/databases.md "Value hints"): pg_stats hides such tables, so pgmcp samples them AS THE
-- CALLER (SECURITY INVOKER), a bounded TABLESAMPLE with a LIMIT, within the request's statement
-- timeout. Policies and column privileges apply as to any query the caller runs, so no value they hide can appear.
create function pgmcp.sample_values(target regclass, column_names text[], max_rows integer)
returns jsonb
language plpgsql
stable
security invoker
set search_path = pg_catalog
as $$
declare
  percent float8;
  selected text;
  result jsonb;
begin
  -- About max_rows rows: SYSTEM sampling reads whole pages, so small tables are read whole.
  select least(100, greatest(0.001, 100.0 * max_rows / greatest(c.reltuples, 1))) into percent
    from pg_class c where c.oid = target;
  select string_agg(quote_ident(a.attname), ', ' order by a.attnum) into selected
    from pg_attribute a
   where a.attrelid = target and a.attnum > 0 and not a.attisdropped
     and a.attname = any(column_names)
     and has_column_privilege(target, a.attnum, 'SELECT');
  if selected is null then
    return '{}';
  end if;
  execute format(
    $sample$
    with sample as (
      select to_jsonb(s) as row from (select %s from %s tablesample system (%s) limit %s) s
    ), cells as (
      select e.key, e.value from sample, jsonb_each(sample.row) e
    ), common as (
      select key, jsonb_agg(jsonb_build_object('value', value #>> '{}', 'count', n) order by n desc, value) as common
        from (select key, value, count(*) as n,
                     row_number() over (partition by key order by count(*) desc, value) as rank
                from cells where value <> 'null' group by key, value) v
       where rank <= 5
       group by key
    )
    select jsonb_object_agg(x.key, jsonb_build_object(
             'sampled', x.sampled, 'nulls', x.nulls, 'distinct', x.distinct_values,
             'common', c.common, 'min', x.min_value, 'max', x.max_value))
      from (select key, count(*) as sampled,
                   count(*) filter (where value = 'null') as nulls,
                   count(distinct value) filter (where value <> 'null') as distinct_values,
                   (array_agg(value #>> '{}' order by value) filter (where value <> 'null'))[1] as min_value,
                   (array_agg(value #>> '{}' order by value desc) filter (where value <> 'null'))[1] as max_value
              from cells group by key) x
      left join common c on c.key = x.key
    $sample$,
    selected, target, percent, max_rows)
  into result;
  return coalesce(result, '{}');
end
$$;

comment on function pgmcp.sample_values(regclass, text[], integer) is
  'Value hints from a bounded sample, read as the caller: per column the sampled rows, nulls, distinct values, the five most common and min/max.';
grant execute on function pgmcp.sample_values(regclass, text[], integer) to public;

-- The navigator and the pull path for changes (docs/databases.md), listed beside the catalog's
-- other templates; "changes" in the name so clients and agents find it.
insert into pgmcp.resource_templates (uri_template, name, title, description, mime_type, readers)
values
  ('pg://{database}', 'database', 'Database navigator',
   'A compact overview of a company database: each schema you can use and its most important tables, under a byte budget, saying what it left out.',
   'text/markdown', array['public']),
  ('pg://{database}{?changes_since}', 'changes', 'Changes since a token',
   'The URIs you can read that changed since a token (empty: the current token), and the next token. For hosts without live notifications.',
   'application/json', array['public'])
on conflict (uri_template) do nothing;
