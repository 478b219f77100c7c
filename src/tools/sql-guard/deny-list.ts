// The functions a caller's statement may not reach, by name in any schema (issue 32 points 1, 2,
// 8): they change per-request settings, run SQL text pgmcp never sees, take pgmcp's advisory
// locks, or reach files, large objects and other sessions.

/** Exact names (lower case, as PostgreSQL folds them). */
const DENIED_NAMES = new Map<string, string>([
  [
    'set_config',
    'changes a setting (the caller’s claims, role or search path)',
  ],
  ['query_to_xml', 'runs SQL text'],
  ['query_to_xmlschema', 'runs SQL text'],
  ['query_to_xml_and_xmlschema', 'runs SQL text'],
  ['table_to_xml', 'reads a table named by text'],
  ['table_to_xmlschema', 'reads a table named by text'],
  ['table_to_xml_and_xmlschema', 'reads a table named by text'],
  ['schema_to_xml', 'reads every table of a schema'],
  ['schema_to_xmlschema', 'reads every table of a schema'],
  ['schema_to_xml_and_xmlschema', 'reads every table of a schema'],
  ['database_to_xml', 'reads every table of the database'],
  ['database_to_xmlschema', 'reads every table of the database'],
  ['database_to_xml_and_xmlschema', 'reads every table of the database'],
  ['cursor_to_xml', 'reads an open cursor'],
  ['cursor_to_xmlschema', 'reads an open cursor'],
  ['ts_stat', 'runs SQL text'],
  ['ts_rewrite', 'runs SQL text'],
  ['pg_read_file', 'reads server files'],
  ['pg_read_binary_file', 'reads server files'],
  ['pg_stat_file', 'reads server files'],
  ['pg_file_write', 'writes server files'],
  ['pg_terminate_backend', 'signals other sessions'],
  ['pg_cancel_backend', 'signals other sessions'],
  ['pg_signal_backend', 'signals other sessions'],
  ['pg_reload_conf', 'signals the server'],
  ['pg_rotate_logfile', 'signals the server'],
  ['pg_log_backend_memory_contexts', 'signals other sessions'],
  ['loread', 'reads large objects'],
  ['lowrite', 'writes large objects'],
]);

/** Name prefixes: families of functions. */
const DENIED_PREFIXES: readonly (readonly [string, string])[] = [
  ['dblink', 'runs SQL text on another connection'],
  ['pg_advisory', 'takes advisory locks pgmcp uses'],
  ['pg_try_advisory', 'takes advisory locks pgmcp uses'],
  ['pg_ls_', 'lists server files'],
  ['lo_', 'reads or writes large objects'],
];

/** Why a function of this name may not be reached, or undefined when it may. */
export function deniedFunction(name: string): string | undefined {
  const exact = DENIED_NAMES.get(name);
  if (exact !== undefined) return exact;
  return DENIED_PREFIXES.find(([prefix]) => name.startsWith(prefix))?.[1];
}

/** Relations that hold statistics: their most common values are values of the tables. */
export const STATISTICS_RELATIONS: ReadonlySet<string> = new Set([
  'pg_catalog.pg_statistic',
  'pg_catalog.pg_statistic_ext',
  'pg_catalog.pg_statistic_ext_data',
  'pg_catalog.pg_stats',
  'pg_catalog.pg_stats_ext',
  'pg_catalog.pg_stats_ext_exprs',
]);
