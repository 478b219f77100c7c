-- Every SECURITY DEFINER function of pgmcp's ran with `search_path = pg_catalog, pgmcp` (or
-- pg_catalog alone), without pg_temp. PostgreSQL then searches the session's temporary schema
-- first for relations and types: a writer of pgmcp.resources could create a temporary domain named
-- `text` whose CHECK calls its own function, and the capture trigger's `::text` cast ran that
-- function as the trigger function's owner. Listing pg_temp last makes temporary objects lose to
-- every other schema (PostgreSQL's documentation, "Writing SECURITY DEFINER Functions Safely").
-- The other settings each function has (jit, enable_nestloop) are kept.
do $$
declare
  fn record;
begin
  for fn in
    select p.oid::regprocedure as signature, substr(setting, length('search_path=') + 1) as path
      from pg_proc p
      join pg_namespace n on n.oid = p.pronamespace
      cross join lateral unnest(p.proconfig) as setting
     where n.nspname = 'pgmcp'
       and p.prosecdef
       and setting like 'search_path=%'
       and setting not like '%pg_temp%'
  loop
    execute format('alter function %s set search_path = %s, pg_temp', fn.signature, fn.path);
  end loop;
end $$;
