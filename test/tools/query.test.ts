// The query tool: one read-only statement as the caller's role. Every attack issue 15 lists is
// refused or stopped by PostgreSQL, changes nothing, and leaves the connection clean.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';

/** One pool connection, so the request after an attack runs on the very connection it used. */
let support: TestServer;
let login: TestServer;
let sql: pg.Client;

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await sql.query(`
    create schema if not exists tool_probe;
    create table if not exists tool_probe.writes (id int);
    create or replace function tool_probe.write_one() returns int volatile language sql
      as 'insert into tool_probe.writes values (1) returning 1';
    create schema if not exists tool_probe_prepare;
    create or replace function tool_probe_prepare.prepare_one() returns int language plpgsql
      as $$ begin execute 'PREPARE tool_probe_left AS select 1'; return 1; end $$;
    create or replace function tool_probe_prepare.hijack() returns int language plpgsql as $$
    begin
      begin execute 'DEALLOCATE pgmcp_tool_rollback'; exception when others then null; end;
      execute 'PREPARE pgmcp_tool_rollback AS select 1 / 0';
      return 1;
    end $$;
    grant usage on schema tool_probe_prepare to support;
  `);
  support = await startTestServer({
    principal: { role: 'support', claims: { sub: 'query-test' } },
    poolSize: 1,
    statementTimeoutMs: 1500,
  });
  login = await startTestServer({ poolSize: 1, statementTimeoutMs: 1500 });
});

afterAll(async () => {
  await support.close();
  await login.close();
  await sql.query(
    'drop schema tool_probe cascade; drop schema tool_probe_prepare cascade',
  );
  await sql.end();
});

async function query(
  server: TestServer,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const { result, error } = await call(server.url, 'tools/call', {
    name: 'query',
    arguments: args,
  });
  expect(error).toBeUndefined();
  return result ?? {};
}

function text(result: Record<string, unknown>): string {
  return (result['content'] as { text: string }[])[0]?.text ?? '';
}

/** The state an attack must not change: the probe table, the resources, and the roles. */
async function state(): Promise<string> {
  const { rows } = await sql.query<{ state: string }>(`
    select format('%s/%s/%s', (select count(*) from tool_probe.writes),
      (select count(*) from pgmcp.resources), (select count(*) from pg_roles)) as state`);
  return rows[0]?.state ?? '';
}

/** The next request on the connection runs as support, read-only, with the default search_path. */
async function expectCleanConnection(): Promise<void> {
  const result = await query(support, {
    sql: "select current_user::text, current_setting('transaction_read_only'), session_user::text = current_user::text as escaped",
  });
  expect(result['structuredContent']).toMatchObject({
    rows: [['support', 'on', 'false']],
  });
}

/** 24 calls at once through `server`, each with its own row count; their audit rows. */
async function auditedBurst(
  server: TestServer,
  marker: string,
): Promise<{ parameter_count: number; row_count: string; batches: string }[]> {
  await Promise.all(
    Array.from({ length: 24 }, (_, n) =>
      query(server, {
        sql: `select g from generate_series(1, $1::int) g where '${marker}' <> ''`,
        params: [n + 1],
        max_rows: 30,
      }),
    ),
  );
  const { rows } = await sql.query<{
    parameter_count: number;
    row_count: string;
    batches: string;
  }>(
    `select parameter_count, row_count::text, count(*) over (partition by at)::text as batches
       from pgmcp.audit where target like $1`,
    [`%${marker}%`],
  );
  return rows;
}

describe('query', () => {
  it('returns columns with PostgreSQL types, rows as text, and a compact table', async () => {
    const result = await query(support, {
      sql: 'select $1::int + 1 as n, $2::text as word, null::date as d',
      params: [41, 'hi'],
    });
    expect(result['isError']).toBeUndefined();
    expect(result['structuredContent']).toEqual({
      columns: [
        { name: 'n', type: 'integer' },
        { name: 'word', type: 'text' },
        { name: 'd', type: 'date' },
      ],
      rows: [['42', 'hi', null]],
      row_count: 1,
      truncated: false,
    });
    expect(text(result)).toBe(
      'n (integer)\tword (text)\td (date)\n42\thi\tNULL\n(1 row)',
    );
  });

  it('reads only what the role may: RLS hides the rows of other teams', async () => {
    const result = await query(support, {
      sql: "select count(*) from pgmcp.resources where not (readers && array['support', 'public'])",
    });
    expect(result['structuredContent']).toMatchObject({ rows: [['0']] });
  });

  it('cuts a 10-million-row result at max_rows and says so, without computing the rest', async () => {
    const result = await query(support, {
      sql: 'select generate_series(1, 10000000) as g',
      max_rows: 3,
    });
    expect(result['structuredContent']).toMatchObject({
      rows: [['1'], ['2'], ['3']],
      row_count: 3,
      truncated: true,
    });
    expect(text(result)).toContain('truncated');
  });

  it('refuses max_rows above 10000 as an argument error', async () => {
    const result = await query(support, { sql: 'select 1', max_rows: 10_001 });
    expect(result['isError']).toBe(true);
  });

  const attacks: [string, string, string][] = [
    ['INSERT', 'insert into tool_probe.writes values (1)', '42601'],
    ['UPDATE', 'update tool_probe.writes set id = 2', '42601'],
    ['DELETE', 'delete from pgmcp.resources', '42601'],
    ['DDL', 'create table tool_probe.evil (id int)', '42601'],
    ['COMMIT; DROP', 'commit; drop schema tool_probe cascade', '42601'],
    ['BEGIN; …', 'begin; select 1', '42601'],
    [
      'a second statement after a SELECT',
      'select 1; set role postgres',
      '42601',
    ],
    ['SET ROLE postgres', 'set role postgres', '42601'],
    ['RESET ROLE', 'reset role', '42601'],
    [
      "set_config('role', …) with a query run under the new role",
      "select set_config('role', 'postgres', true), query_to_xml('select count(*) from pg_authid', true, false, '')",
      '42501',
    ],
    [
      'COPY … TO PROGRAM',
      "copy (select 1) to program 'touch /tmp/pgmcp-pwned'",
      '42601',
    ],
    [
      'DO',
      "do $$ begin perform set_config('role', 'postgres', false); end $$",
      '42601',
    ],
    ['CALL', 'call tool_probe.nothing()', '42601'],
    ['LISTEN', 'listen pgmcp_changes', '42601'],
    [
      'SELECT … FOR UPDATE',
      'select * from pgmcp.resources for update',
      '25006',
    ],
    [
      'a VOLATILE function that writes',
      'select tool_probe.write_one()',
      '42501',
    ],
  ];

  it.each(attacks)(
    'refuses %s, changes nothing, and leaves the connection clean',
    async (_name, statement, sqlstate) => {
      const before = await state();
      const result = await query(support, { sql: statement });
      expect(result['isError']).toBe(true);
      expect(text(result)).toContain(`ERROR ${sqlstate}:`);
      expect(await state()).toBe(before);
      await expectCleanConnection();
    },
  );

  it("refuses pg_terminate_backend on another session's backend", async () => {
    const { rows } = await sql.query<{ pid: number }>(
      'select pg_backend_pid() as pid',
    );
    const result = await query(support, {
      sql: 'select pg_terminate_backend($1)',
      params: [rows[0]?.pid ?? 0],
    });
    expect(text(result)).toContain('ERROR 42501:');
    expect((await sql.query('select 1 as alive')).rows).toEqual([{ alive: 1 }]);
    await expectCleanConnection();
  });

  it('stops pg_sleep(60) at the statement timeout', async () => {
    const result = await query(support, { sql: 'select pg_sleep(60)' });
    expect(result['isError']).toBe(true);
    expect(text(result)).toContain('ERROR 57014:');
    await expectCleanConnection();
  });

  it('refuses a writing VOLATILE function even to a superuser login: the transaction is read-only', async () => {
    const before = await state();
    const result = await query(login, { sql: 'select tool_probe.write_one()' });
    expect(text(result)).toContain('ERROR 25006:');
    expect(await state()).toBe(before);
  });

  it('refuses session advisory locks (pgmcp uses them), so no lock outlives the call', async () => {
    const result = await query(support, {
      sql: 'select pg_advisory_lock(4242) is null as locked',
    });
    expect(text(result)).toContain('ERROR 42501: pgmcp refuses');
    const { rows } = await sql.query<{ held: string }>(
      "select count(*)::text as held from pg_locks where locktype = 'advisory' and objid = 4242",
    );
    expect(rows[0]?.held).toBe('0');
    await expectCleanConnection();
  });

  it('writes every call to pgmcp.audit, failed ones with their SQLSTATE', async () => {
    const marker = `select 'audit-${Date.now()}' as m`;
    await query(support, { sql: marker, params: [] });
    await query(support, { sql: `${marker} from nowhere` });
    const { rows } = await sql.query<{
      role: string;
      subject: string;
      row_count: string | null;
      sqlstate: string | null;
    }>(
      `select role, subject, row_count::text, sqlstate from pgmcp.audit where target like $1 order by id`,
      [`${marker}%`],
    );
    expect(rows).toEqual([
      {
        role: 'support',
        subject: 'query-test',
        row_count: '1',
        sqlstate: null,
      },
      {
        role: 'support',
        subject: 'query-test',
        row_count: null,
        sqlstate: '42P01',
      },
    ]);
  });

  it('writes each of many calls that end together once, with its own fields, in batches', async () => {
    // Calls that end while an audit transaction runs go together in the next one, their columns
    // sent as arrays (db/own-tables/audit-log.ts): each row must keep its own values.
    // Several request connections: calls end together while the audit's one connection writes.
    const wide = await startTestServer({
      principal: { role: 'support', claims: { sub: 'query-test' } },
      poolSize: 4,
    });
    let batched = false;
    try {
      // Whether calls end together is the scheduler's to say: bursts until one did (at most 5).
      for (let burst = 0; burst < 5 && !batched; burst++) {
        const rows = await auditedBurst(
          wide,
          `audit-batch-${Date.now()}-${burst}`,
        );
        const counts = rows.map((row) => Number(row.row_count));
        expect(counts.sort((a, b) => a - b)).toEqual(
          Array.from({ length: 24 }, (_, n) => n + 1),
        );
        expect(rows.every((row) => row.parameter_count === 1)).toBe(true);
        // Rows of one transaction share `at`.
        batched = rows.some((row) => Number(row.batches) > 1);
      }
    } finally {
      await wide.close();
    }
    expect(batched).toBe(true);
  });

  it('lets only the login write or prune audit rows', async () => {
    for (const write of [
      "select pgmcp.write_audit('support', null, 'query', 'forged', null, null, null, null, null, null)",
      "select pgmcp.prune_audit(interval '0 seconds')",
    ]) {
      await sql.query('begin');
      try {
        await sql.query('set local role support');
        await expect(sql.query(write)).rejects.toMatchObject({
          code: '42501',
        });
      } finally {
        await sql.query('rollback');
      }
    }
  });

  it('does not let a statement leave a prepared statement on the connection for the next call', async () => {
    // PREPARE through a function's dynamic SQL is allowed read-only and outlives ROLLBACK; such a
    // statement could take the name of one pgmcp runs on that connection next. The statement
    // guard refuses functions that run dynamic SQL before anything runs.
    const prepared = await query(support, {
      sql: 'select tool_probe_prepare.prepare_one()',
    });
    expect(text(prepared)).toContain('ERROR 42501: pgmcp refuses');
    const after = await query(support, {
      sql: 'select count(*) from pg_prepared_statements where from_sql',
    });
    expect(after['structuredContent']).toMatchObject({ rows: [['0']] });
  });

  it('runs nothing a statement prepared under a name pgmcp uses after it in the same call', async () => {
    // The caller's code runs while the cursor is planned and fetched; what pgmcp sends after that
    // is parsed as it is sent, so a PREPAREd look-alike (here: one that fails) is never bound.
    await query(support, { sql: 'select 1' });
    const result = await query(support, {
      sql: 'select tool_probe_prepare.hijack()',
    });
    // The statement guard refuses a function that runs dynamic SQL before anything runs.
    expect(text(result)).toContain('ERROR 42501: pgmcp refuses');
    await expectCleanConnection();
  });

  it("explain's function reads what it is given as values, never as SQL", async () => {
    const found = await query(support, {
      sql: `select p.proname::text from pg_proc p
             where p.pronamespace = pg_my_temp_schema() and p.proname like 'pgmcp_tool_explain_%'
               and pg_get_userbyid(p.proowner) = 'support'`,
    });
    const name = (found['structuredContent'] as { rows: string[][] })
      .rows[0]?.[0];
    expect(name).toMatch(/^pgmcp_tool_explain_\d+$/);
    const injected = await query(support, {
      sql: `select pg_temp.${name ?? 'missing'}(array['1); PREPARE tool_probe_injected AS select 1; select (''[]''']) `,
    });
    // The statement guard refuses a call of pgmcp's own function (it runs dynamic SQL); nothing is
    // prepared.
    expect(text(injected)).toContain('ERROR 42501: pgmcp refuses');
    const after = await query(support, {
      sql: "select count(*) from pg_prepared_statements where name = 'tool_probe_injected'",
    });
    expect(after['structuredContent']).toMatchObject({ rows: [['0']] });
  });

  it('keeps pgmcp.audit from request roles', async () => {
    const result = await query(support, {
      sql: 'select count(*) from pgmcp.audit',
    });
    expect(text(result)).toContain('ERROR 42501:');
  });
});

// A pooled connection keeps each role's fetch function (db/ad-hoc/role-functions.ts): one connection serves
// several roles here, the role named by the Authorization header.
describe('query on a connection several roles share', () => {
  let shared: TestServer;
  const roles = ['qt_alpha', 'qt_beta', 'qt_gamma', 'qt_delta'];

  beforeAll(async () => {
    await dropRoles();
    await sql.query(
      roles.map((role) => `create role ${role} nologin;`).join(' '),
    );
    shared = await startTestServer({
      poolSize: 1,
      authenticate: (request) =>
        Promise.resolve({
          role: request.headers.authorization ?? 'qt_alpha',
          claims: {},
        }),
    });
  });

  afterAll(async () => {
    await shared.close();
    await dropRoles();
  });

  /**
   * The roles own temporary functions on the server's connection, which outlive its close until
   * the backend has exited: DROP OWNED first, as docs/tools.md tells operators.
   */
  async function dropRoles(): Promise<void> {
    await sql.query(`do $$ declare r text; begin
      foreach r in array array['${[...roles, 'qt_gamma_old', 'qt_delta_old'].join("','")}'] loop
        if exists (select from pg_roles where rolname = r) then
          execute format('drop owned by %I', r);
          execute format('drop role %I', r);
        end if;
      end loop;
    end $$`);
  }

  async function queryAs(
    role: string,
    statement: string,
  ): Promise<Record<string, unknown>> {
    const { result, error } = await call(
      shared.url,
      'tools/call',
      { name: 'query', arguments: { sql: statement } },
      { authorization: role },
    );
    expect(error).toBeUndefined();
    return result ?? {};
  }

  it("refuses a statement that calls another role's fetch function", async () => {
    await queryAs('qt_alpha', 'select 1');
    const found = await queryAs(
      'qt_beta',
      `select p.proname::text from pg_proc p
        where p.pronamespace = pg_my_temp_schema() and p.proname like 'pgmcp_tool_fetch_%'
          and pg_get_userbyid(p.proowner) = 'qt_alpha'`,
    );
    const name = (found['structuredContent'] as { rows: string[][] })
      .rows[0]?.[0];
    expect(name).toMatch(/^pgmcp_tool_fetch_\d+$/);
    const result = await queryAs(
      'qt_beta',
      `select * from pg_temp.${name ?? 'missing'}(1, 1000)`,
    );
    expect(text(result)).toContain('ERROR 42501:');
  });

  it('runs as the role now bearing a name, not as a renamed role that made functions under it', async () => {
    const before = await queryAs('qt_gamma', 'select current_user::text');
    expect(before['structuredContent']).toMatchObject({
      rows: [['qt_gamma']],
    });
    await sql.query(
      'alter role qt_gamma rename to qt_gamma_old; create role qt_gamma nologin',
    );
    const after = await queryAs('qt_gamma', 'select current_user::text');
    expect(after['structuredContent']).toMatchObject({
      rows: [['qt_gamma']],
    });
  });

  it('runs as the new role even when it is a member of the renamed one, which could run its functions', async () => {
    await queryAs('qt_delta', 'select 1');
    await sql.query(
      'alter role qt_delta rename to qt_delta_old; create role qt_delta nologin in role qt_delta_old',
    );
    const after = await queryAs('qt_delta', 'select current_user::text');
    expect(after['structuredContent']).toMatchObject({
      rows: [['qt_delta']],
    });
  });
});
