// The hostile corpus of issue 32 (points 1, 2, 8): statements that try to forge the caller's
// claims, to read sensitive data without consent, or to reach what pgmcp cannot gate, each with
// the defect class it stands for. It grows with every class found; hostile-sql.test.ts runs it.

/** What the forged claims would show: bob's row of secclaims.docs (seeds/demo/80_claims_policy.sql). */
export const BOB_ROW = "bob's salary review";

const FORGE = `set_config('request.jwt.claims', '{"sub":"bob"}', true)`;

/** Fixtures in the test database (run by the login); hostile_probe is dropped afterwards. */
export const CLAIMS_FIXTURES = `
  drop schema if exists hostile_probe cascade;
  create schema hostile_probe;
  create function hostile_probe.forge_sql(sub text) returns text language sql
    as $$ select set_config('request.jwt.claims', json_build_object('sub', sub)::text, true) $$;
  create function hostile_probe.forge_plpgsql(sub text) returns text language plpgsql as $$
    begin perform set_config('request.jwt.claims', json_build_object('sub', sub)::text, true);
    return sub; end $$;
  create function hostile_probe.forge_nested() returns text language sql
    as $$ select hostile_probe.forge_plpgsql('bob') $$;
  create function hostile_probe.forge_folded() returns text immutable language plpgsql as $$
    begin return set_config('request.jwt.claims', '{"sub":"bob"}', true); end $$;
  create function hostile_probe.forge_dynamic() returns text language plpgsql as $$
    declare r text;
    begin execute format('select set_config(%L, %L, true)', 'request.jwt.claims', '{"sub":"bob"}') into r;
    return r; end $$;
  create function hostile_probe.read_as_bob() returns text language sql
    set "request.jwt.claims" = '{"sub":"bob"}'
    as $$ select string_agg(body, ', ') from secclaims.docs $$;
  create view hostile_probe.forging_view as select hostile_probe.forge_plpgsql('bob') as x;
  create domain hostile_probe.forged as text check (hostile_probe.forge_plpgsql(value) is not null);
  create type hostile_probe.token as (sub text);
  create function hostile_probe.token_text(hostile_probe.token) returns text language plpgsql as $$
    begin perform set_config('request.jwt.claims', json_build_object('sub', $1.sub)::text, true);
    return $1.sub; end $$;
  create cast (hostile_probe.token as text) with function hostile_probe.token_text(hostile_probe.token);
  create function hostile_probe.op_forge(text, text) returns boolean language plpgsql as $$
    begin perform set_config('request.jwt.claims', json_build_object('sub', $1)::text, true);
    return true; end $$;
  create operator hostile_probe.=== (leftarg = text, rightarg = text, function = hostile_probe.op_forge);
  create function hostile_probe.shout(x text) returns text language sql immutable as $$ select upper(x) $$;
  create function hostile_probe.count_docs() returns bigint language plpgsql as $$
    begin return (select count(*) from secclaims.docs); end $$;
  create view hostile_probe.plain_view as select 1 as one, lower('ABC') as word;
  grant usage on schema hostile_probe to claims_reader;
  grant execute on all functions in schema hostile_probe to claims_reader;
  grant select on all tables in schema hostile_probe to claims_reader;
`;

/** [class, statement]: each must be refused (isError, "pgmcp refuses") and never show bob's row. */
export const CLAIMS_FORGERIES: readonly (readonly [string, string])[] = [
  [
    'set_config in the select list',
    `select ${FORGE}, d.* from secclaims.docs d`,
  ],
  [
    'set_config in a materialized CTE (issue 32)',
    `with c as materialized (select ${FORGE} x) select d.* from c, secclaims.docs d`,
  ],
  [
    'set_config in a CTE that is not materialized',
    `with c as (select ${FORGE} x) select d.* from c, secclaims.docs d`,
  ],
  [
    'set_config in a FROM subquery',
    `select d.* from (select ${FORGE} x offset 0) c, secclaims.docs d`,
  ],
  [
    'set_config in a scalar subquery',
    `select * from secclaims.docs where (select ${FORGE}) is not null`,
  ],
  [
    'set_config in VALUES',
    `select d.* from (values (${FORGE})) v(x), secclaims.docs d`,
  ],
  [
    'set_config in a LATERAL call',
    `select d.* from secclaims.docs d0, lateral (select ${FORGE} where d0.owner is not null) l, secclaims.docs d`,
  ],
  [
    'set_config under a cast',
    `select d.* from (select (${FORGE})::text x offset 0) c, secclaims.docs d`,
  ],
  [
    'pg_catalog.set_config',
    `select d.* from (select pg_catalog.${FORGE} x offset 0) c, secclaims.docs d`,
  ],
  [
    'a quoted "set_config"',
    `select d.* from (select "pg_catalog"."set_config"('request.jwt.claims', '{"sub":"bob"}', true) x offset 0) c, secclaims.docs d`,
  ],
  [
    'set_config of the role',
    "select set_config('role', 'finance', true), count(*) from secclaims.docs",
  ],
  [
    'set_config of search_path',
    "select set_config('search_path', 'secclaims', true), count(*) from secclaims.docs",
  ],
  [
    'an SQL function the caller may execute',
    "select d.* from (select hostile_probe.forge_sql('bob') x offset 0) c, secclaims.docs d",
  ],
  [
    'a PL/pgSQL function the caller may execute',
    "select d.* from (select hostile_probe.forge_plpgsql('bob') x offset 0) c, secclaims.docs d",
  ],
  [
    'an SQL function calling a PL/pgSQL one',
    'select d.* from (select hostile_probe.forge_nested() x offset 0) c, secclaims.docs d',
  ],
  [
    'an IMMUTABLE PL/pgSQL function folded at plan time',
    'select d.* from secclaims.docs d where hostile_probe.forge_folded() is not null',
  ],
  [
    'a function running dynamic SQL',
    'select d.* from (select hostile_probe.forge_dynamic() x offset 0) c, secclaims.docs d',
  ],
  [
    'a function whose SET clause sets the claims',
    'select hostile_probe.read_as_bob()',
  ],
  [
    'a view over a forging function',
    'select d.* from hostile_probe.forging_view v, secclaims.docs d',
  ],
  [
    'a domain whose check forges',
    "select d.* from (select 'bob'::hostile_probe.forged x offset 0) c, secclaims.docs d",
  ],
  [
    'a user-defined cast whose function forges',
    "select d.* from (select row('bob')::hostile_probe.token::text x offset 0) c, secclaims.docs d",
  ],
  [
    'a user-defined operator whose function forges',
    "select d.* from (select 'bob' operator(hostile_probe.===) 'x' as x offset 0) c, secclaims.docs d",
  ],
];

/** [class, statement]: functions pgmcp cannot gate, refused whatever they would read. */
export const UNGATEABLE: readonly (readonly [string, string])[] = [
  [
    'query_to_xml',
    "select query_to_xml('select * from secclaims.docs', true, false, '')",
  ],
  [
    'query_to_xmlschema',
    "select query_to_xmlschema('select 1', true, false, '')",
  ],
  ['table_to_xml', "select table_to_xml('secclaims.docs', true, false, '')"],
  ['schema_to_xml', "select schema_to_xml('secclaims', true, false, '')"],
  ['database_to_xml', "select database_to_xml(true, false, '')"],
  [
    'cursor_to_xml',
    "select cursor_to_xml('pgmcp_tool_query', 1, true, false, '')",
  ],
  [
    'ts_stat',
    "select * from ts_stat('select to_tsvector(body) from secclaims.docs')",
  ],
  [
    'ts_rewrite',
    "select ts_rewrite('a'::tsquery, 'select ''a''::tsquery, ''b''::tsquery')",
  ],
  [
    "pgmcp's own advisory lock (point 8)",
    "select pg_advisory_xact_lock(hashtext('pgmcp.legacy_sessions'), hashtext('admin'))",
  ],
  ['pg_try_advisory_lock', 'select pg_try_advisory_lock(1)'],
  ['pg_read_file', "select pg_read_file('PG_VERSION')"],
  ['pg_ls_dir', "select pg_ls_dir('.')"],
  ['lo_get', 'select lo_get(1)'],
];

/** [class, statement, expected rows]: what the guard must keep allowing, as claims_reader (sub alice). */
export const HARMLESS: readonly (readonly [string, string, string[][]])[] = [
  [
    'the policy reads the true claims',
    'select owner, body from secclaims.docs',
    [['alice', "alice's draft"]],
  ],
  [
    'current_setting of the claims',
    "select current_setting('request.jwt.claims', true)::json->>'sub' as sub",
    [['alice']],
  ],
  [
    'ordinary builtins',
    "select lower('ABC') as l, count(*) as n, now() is not null as t from secclaims.docs",
    [['abc', '1', 'true']],
  ],
  [
    'a materialized CTE without set_config',
    'with c as materialized (select 1 x) select d.owner from c, secclaims.docs d',
    [['alice']],
  ],
  [
    'an ordinary view',
    'select one, word from hostile_probe.plain_view',
    [['1', 'abc']],
  ],
  ['an SQL function', "select hostile_probe.shout('x') as s", [['X']]],
  ['a PL/pgSQL function', 'select hostile_probe.count_docs() as n', [['1']]],
  [
    'VALUES, LATERAL and casts',
    "select v.x::text, l.y from (values (1)) v(x), lateral (select 'y'::text as y) l",
    [['1', 'y']],
  ],
  ['a user-defined operator name in a string', "select '===' as op", [['===']]],
];

/** Fixtures of the consent database (payroll-fixture.ts), run by its owner. */
export function consentFixtures(role: string): string {
  return `
    create function payroll.total() returns bigint language sql stable security definer
      as $$ select sum(amount) from payroll.pay $$;
    create function payroll.total_plpgsql() returns bigint language plpgsql stable
      as $$ begin return (select sum(amount) from payroll.pay); end $$;
    create function payroll.folded() returns bigint language plpgsql immutable
      as $$ begin return (select sum(amount) from payroll.pay); end $$;
    create view payroll.via_function as select payroll.total() as total;
    create view payroll.notes as select uri, text from pgmcp.resources;
    grant execute on all functions in schema payroll to ${role};
    grant select on payroll.via_function, payroll.notes to ${role};
    analyze payroll.pay;
    analyze pgmcp.resources;
  `;
}

/** [tool, class, statement]: each asks for consent (input_required) before anything is read. */
export const CONSENT_PATHS: readonly (readonly [
  'query' | 'explain',
  string,
  string,
])[] = [
  [
    'query',
    'sensitive stored resources',
    'select uri, text from pgmcp.resources where sensitive',
  ],
  [
    'query',
    'stored resources through a view',
    'select uri, text from payroll.notes',
  ],
  [
    'query',
    'pg_stats on a sensitive column',
    "select attname, most_common_vals::text from pg_stats where tablename = 'pay'",
  ],
  [
    'query',
    'a SECURITY DEFINER SQL function over a sensitive table',
    'select payroll.total()',
  ],
  [
    'query',
    'a PL/pgSQL function over a sensitive table',
    'select payroll.total_plpgsql()',
  ],
  [
    'query',
    'a view over such a function',
    'select total from payroll.via_function',
  ],
  [
    'explain',
    'a plan that prints a folded constant',
    'select payroll.folded()',
  ],
  [
    'explain',
    'a plan of a sensitive table',
    'select amount from payroll.pay where amount > 1',
  ],
  [
    'explain',
    'a plan over sensitive stored resources',
    'select text from pgmcp.resources',
  ],
];
