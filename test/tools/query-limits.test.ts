// Issue 32 points 3, 5 and 6 for query and explain: every statement that runs leaves an audit row,
// every call has a bounded cost, and a caller's mistakes come back as the caller's errors.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  mcpHeaders,
  META,
  startTestServer,
  testDatabaseUrl,
  until,
  type TestServer,
} from '../setup/harness.js';
import {
  legacyPost,
  openSession,
  sessionHeaders,
} from '../setup/legacy-client.js';

let support: TestServer;
let sql: pg.Client;

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await sql.query(`
    create schema if not exists tool_limits;
    create table if not exists tool_limits.secret (id int);
    create or replace function tool_limits.slow_constant(seconds float8) returns int
      immutable language plpgsql as $$ begin perform pg_sleep(seconds); return 1; end $$;
    grant usage on schema tool_limits to support;
  `);
  support = await startTestServer({
    principal: { role: 'support', claims: { sub: 'limits-test' } },
    poolSize: 1,
    statementTimeoutMs: 1500,
  });
});

afterAll(async () => {
  await support.close();
  await sql.query('drop schema tool_limits cascade');
  await sql.end();
});

async function tool(
  server: TestServer,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const { result, error } = await call(server.url, 'tools/call', {
    name,
    arguments: args,
  });
  expect(error).toBeUndefined();
  return result ?? {};
}

function text(result: Record<string, unknown>): string {
  return (result['content'] as { text: string }[])[0]?.text ?? '';
}

/** The audit rows whose statement text starts with `marker`, oldest first. */
async function auditRows(marker: string) {
  const { rows } = await sql.query<{
    action: string;
    target: string;
    target_length: string | null;
    row_count: string | null;
    sqlstate: string | null;
  }>(
    `select action, target, target_length::text, row_count::text, sqlstate
       from pgmcp.audit where target like $1 order by id`,
    [`${marker}%`],
  );
  return rows;
}

let probes = 0;

/**
 * A one-row table of its own for a slow statement to read: while the statement runs, its session
 * holds a lock on it (pg_locks), which says the statement started. (The query tool refuses
 * advisory locks, which these tests once took to see it.)
 */
async function probeTable(): Promise<string> {
  probes += 1;
  const name = `tool_limits.probe_${probes}`;
  await sql.query(
    `create table ${name} (x int); insert into ${name} values (1); grant select on ${name} to support`,
  );
  return name;
}

/** Whether another session holds a lock on `table`: the statement reading it is running. */
async function reading(table: string): Promise<true | undefined> {
  const { rows } = await sql.query(
    'select 1 from pg_locks where relation = to_regclass($1) and granted and pid <> pg_backend_pid()',
    [table],
  );
  return rows.length > 0 ? true : undefined;
}

describe("a caller's mistakes are the caller's errors (point 6)", () => {
  it('answers a wrong parameter count with isError and its SQLSTATE, and the connection serves on', async () => {
    for (const [statement, params] of [
      ['select $1::int', [1, 2]],
      ['select $1::int + $2::int', [1]],
    ] as const) {
      const result = await tool(support, 'query', {
        sql: statement,
        params,
      });
      expect(result['isError']).toBe(true);
      expect(text(result)).toMatch(/^ERROR 08P01: bind message supplies/);
    }
    const explained = await tool(support, 'explain', {
      sql: 'select $1::int',
      params: [1, 2],
    });
    expect(explained['isError']).toBe(true);
    expect(text(explained)).toMatch(/^ERROR 08P01/);
    // The only pooled connection still answers, as support.
    const after = await tool(support, 'query', {
      sql: 'select current_user::text',
    });
    expect(after['structuredContent']).toMatchObject({ rows: [['support']] });
  });

  it('answers a parameter of the wrong type with isError and its SQLSTATE', async () => {
    const result = await tool(support, 'query', {
      sql: 'select $1::int',
      params: ['one'],
    });
    expect(result['isError']).toBe(true);
    expect(text(result)).toMatch(/^ERROR 22P02: invalid input syntax/);
  });

  it('takes null for an optional argument as absent, in query and explain', async () => {
    const queried = await tool(support, 'query', {
      sql: 'select 1 as one',
      params: null,
      max_rows: null,
    });
    expect(queried['isError']).toBeUndefined();
    expect(queried['structuredContent']).toMatchObject({ rows: [['1']] });
    const explained = await tool(support, 'explain', {
      sql: 'select 1',
      params: null,
    });
    expect(explained['isError']).toBeUndefined();
    // A required argument sent as null is still missing.
    const missing = await tool(support, 'query', { sql: null });
    expect(missing['isError']).toBe(true);
    expect(text(missing)).toMatch(/^Invalid arguments: sql/);
  });

  it('takes null for an optional argument as absent in a 2025-11-25 session too', async () => {
    const session = await openSession(support.url);
    const answer = await legacyPost(
      support.url,
      {
        method: 'tools/call',
        params: {
          name: 'query',
          arguments: { sql: 'select 2 as two', params: null, max_rows: null },
        },
      },
      sessionHeaders(session),
    );
    expect(answer.result?.['isError']).toBeUndefined();
    expect(answer.result?.['structuredContent']).toMatchObject({
      rows: [['2']],
    });
  });
});

describe('every statement that runs leaves an audit row (point 3)', () => {
  it('records calls that succeed and fail with the full length of their text', async () => {
    const marker = `select 'audit-length-${Date.now()}' as m`;
    await tool(support, 'query', { sql: marker });
    await tool(support, 'query', { sql: `${marker} from nowhere` });
    expect(await auditRows(marker)).toEqual([
      expect.objectContaining({
        action: 'query',
        target: marker,
        target_length: String(marker.length),
        row_count: '1',
        sqlstate: null,
      }),
      expect.objectContaining({
        target_length: String(marker.length + ' from nowhere'.length),
        sqlstate: '42P01',
      }),
    ]);
  });

  it('refuses a NUL in the statement or a parameter before anything runs, and audits the refusal', async () => {
    const marker = `select 'audit-nul-${Date.now()}' as m`;
    const cut = await tool(support, 'query', {
      sql: `${marker}\u0000 from nowhere`,
    });
    expect(cut['isError']).toBe(true);
    expect(text(cut)).toMatch(/^ERROR 22021: the statement contains a NUL/);
    const param = await tool(support, 'query', {
      sql: `${marker}, $1::text as p`,
      params: ['a\u0000b'],
    });
    expect(text(param)).toMatch(/^ERROR 22021: a parameter contains a NUL/);
    const explained = await tool(support, 'explain', {
      sql: `${marker}\u0000`,
    });
    expect(text(explained)).toMatch(/^ERROR 22021/);
    const rows = await auditRows(marker);
    expect(rows.map((row) => [row.action, row.sqlstate])).toEqual([
      ['query', '22021'],
      ['query', '22021'],
      ['explain', '22021'],
    ]);
    expect(rows[0]?.target).toBe(`${marker}\\u0000 from nowhere`);
  });

  it('keeps at most PGMCP_AUDIT_TEXT_BYTES of a statement and records its full length', async () => {
    const capped = await startTestServer({
      principal: { role: 'support', claims: { sub: 'limits-test' } },
      poolSize: 1,
      query: { auditTextBytes: 1000 },
    });
    try {
      const marker = `select 'audit-cap-${Date.now()}' as m -- `;
      // A comment of 90,000 characters, most of them 3 bytes in UTF-8.
      const sqlText = marker + 'é€'.repeat(45_000);
      const result = await tool(capped, 'query', { sql: sqlText });
      expect(result['isError']).toBeUndefined();
      const [row] = await auditRows(marker);
      expect(row?.target_length).toBe(String(Buffer.byteLength(sqlText)));
      expect(Buffer.byteLength(row?.target ?? '')).toBeLessThanOrEqual(1000);
      expect(sqlText.startsWith(row?.target ?? 'none')).toBe(true);
    } finally {
      await capped.close();
    }
  });

  it('records a call that gave up waiting for the pool, and one that timed out', async () => {
    const busy = await startTestServer({
      principal: { role: 'support', claims: { sub: 'limits-test' } },
      poolSize: 1,
      poolWaitMs: 100,
      statementTimeoutMs: 1000,
    });
    try {
      const marker = `select 'audit-pool-${Date.now()}' as m`;
      const table = await probeTable();
      const slow = tool(busy, 'query', {
        sql: `${marker}, pg_sleep(30) as slow from ${table}`,
      });
      await until(() => reading(table), 10_000, 'the slow statement to start');
      const { error } = await call(busy.url, 'tools/call', {
        name: 'query',
        arguments: { sql: `${marker}, 'waited' as w` },
      });
      expect(error?.data?.['code']).toBe('POOL_EXHAUSTED');
      const timedOut = await slow;
      expect(text(timedOut)).toMatch(/^ERROR 57014/);
      const { rows } = await sql.query<{
        target: string;
        sqlstate: string | null;
        detail: unknown;
      }>(
        'select target, sqlstate, detail from pgmcp.audit where target like $1 order by id',
        [`${marker}%`],
      );
      expect(rows).toEqual([
        {
          target: `${marker}, 'waited' as w`,
          sqlstate: null,
          detail: { error: 'POOL_EXHAUSTED' },
        },
        {
          target: `${marker}, pg_sleep(30) as slow from ${table}`,
          sqlstate: '57014',
          detail: null,
        },
      ]);
    } finally {
      await busy.close();
    }
  });

  it('records a call cut short by shutdown before the connections close', async () => {
    const stopping = await startTestServer({
      principal: { role: 'support', claims: { sub: 'limits-test' } },
      poolSize: 1,
    });
    const marker = `select 'audit-shutdown-${Date.now()}' as m`;
    const table = await probeTable();
    const running = call(stopping.url, 'tools/call', {
      name: 'query',
      arguments: {
        sql: `${marker}, pg_sleep(5) as s from ${table}`,
      },
    }).catch(() => undefined);
    await until(() => reading(table), 10_000, 'the statement to start');
    // The transport waits a moment for the call, then cuts its connection; the call is cancelled.
    await stopping.close();
    await running;
    expect(await auditRows(marker)).toEqual([
      expect.objectContaining({ sqlstate: '57014' }),
    ]);
  });

  it('records a call the client cancelled by closing its request', async () => {
    const marker = `select 'audit-cancel-${Date.now()}' as m`;
    const table = await probeTable();
    const controller = new AbortController();
    const sent = fetch(support.url, {
      method: 'POST',
      headers: mcpHeaders('tools/call', 'query'),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          _meta: META,
          name: 'query',
          arguments: {
            sql: `${marker}, pg_sleep(30) as s from ${table}`,
          },
        },
      }),
      signal: controller.signal,
    }).catch(() => undefined);
    await until(() => reading(table), 10_000, 'the statement to start');
    controller.abort();
    await sent;
    const [row] = await until(
      async () => {
        const rows = await auditRows(marker);
        return rows.length > 0 ? rows : undefined;
      },
      10_000,
      'the audit row',
    );
    expect(row?.sqlstate).toBe('57014');
  });

  it('withholds the answer when the audit row cannot be written', async () => {
    const value = `audit-refused-${Date.now()}`;
    const marker = `select '${value}' as m`;
    const constraint = `audit_refuses_${Date.now()}`;
    await sql.query(
      `alter table pgmcp.audit add constraint ${constraint} check (target not like 'select ''audit-refused-%') not valid`,
    );
    try {
      const { error, result } = await call(support.url, 'tools/call', {
        name: 'query',
        arguments: { sql: marker },
      });
      expect(result).toBeUndefined();
      expect(error?.data?.['code']).toBe('UNAVAILABLE');
    } finally {
      await sql.query(`alter table pgmcp.audit drop constraint ${constraint}`);
    }
    // The next call is answered and audited again.
    const after = await tool(support, 'query', { sql: `${marker} -- after` });
    expect(after['structuredContent']).toMatchObject({ rows: [[value]] });
  });
});

describe('every call has a bounded cost (point 5)', () => {
  /** The whole HTTP body of a query call, as the client receives it. */
  async function answerBytes(
    server: TestServer,
    args: Record<string, unknown>,
  ): Promise<{ bytes: number; result: Record<string, unknown> }> {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: mcpHeaders('tools/call', 'query'),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { _meta: META, name: 'query', arguments: args },
      }),
    });
    const body = await response.text();
    const parsed = JSON.parse(body) as { result: Record<string, unknown> };
    return { bytes: Buffer.byteLength(body), result: parsed.result };
  }

  it('cuts huge values at the byte cap instead of building them in memory, and says why', async () => {
    // 10 rows of 3 MB: 30 MB before, as rows and again as text.
    const { bytes, result } = await answerBytes(support, {
      sql: "select repeat('x', 3000000) as big from generate_series(1, 10)",
    });
    expect(text(result)).not.toMatch(/^ERROR/);
    // The rows appear twice (text table and structuredContent): about twice the 24 KiB default.
    expect(bytes).toBeLessThan(3 * 24_576);
    expect(result['structuredContent']).toMatchObject({
      row_count: 1,
      truncated: true,
      truncated_reason: 'max_bytes',
    });
    const rows = (result['structuredContent'] as { rows: string[][] }).rows;
    expect(rows[0]?.[0]).toMatch(/^x+\.\.\.$/);
    expect(text(result)).toContain('truncated at the byte cap');
  });

  it('stops fetching many small rows at the byte cap (PGMCP_QUERY_MAX_BYTES)', async () => {
    const small = await startTestServer({
      principal: { role: 'support', claims: { sub: 'limits-test' } },
      poolSize: 1,
      query: { maxBytes: 4096 },
    });
    try {
      const { bytes, result } = await answerBytes(small, {
        sql: "select g, repeat('y', 100) as filler from generate_series(1, 100000) g",
        max_rows: 10_000,
      });
      expect(bytes).toBeLessThan(3 * 4096);
      const content = result['structuredContent'] as {
        rows: string[][];
        row_count: number;
        truncated_reason: string;
      };
      expect(content.truncated_reason).toBe('max_bytes');
      // Whole rows, in order, none cut.
      expect(content.row_count).toBeGreaterThan(0);
      expect(content.rows.map((row) => row[0])).toEqual(
        Array.from({ length: content.row_count }, (_, n) => String(n + 1)),
      );
      expect(content.rows.every((row) => row[1] === 'y'.repeat(100))).toBe(
        true,
      );
      // max_rows is still the reason when it comes first.
      const few = await tool(small, 'query', {
        sql: 'select generate_series(1, 10) as g',
        max_rows: 2,
      });
      expect(few['structuredContent']).toMatchObject({
        truncated_reason: 'max_rows',
      });
    } finally {
      await small.close();
    }
  });

  it('refuses before running a statement whose planned cost passes the ceiling', async () => {
    const capped = await startTestServer({
      principal: { role: 'support', claims: { sub: 'limits-test' } },
      poolSize: 1,
      query: { maxCost: 1000 },
    });
    try {
      const marker = `select 'cost-${Date.now()}' as m`;
      const expensive = `${marker}, count(*) from generate_series(1, 100000) a, generate_series(1, 100000) b`;
      const result = await tool(capped, 'query', { sql: expensive });
      expect(result['isError']).toBe(true);
      expect(text(result)).toMatch(
        /^ERROR 54000: the statement's planned cost [\d.e+]+ exceeds this server's ceiling 1000 \(PGMCP_QUERY_MAX_COST\)/,
      );
      const analyzed = await startTestServer({
        principal: { role: 'support', claims: { sub: 'limits-test' } },
        poolSize: 1,
        query: { maxCost: 1000 },
        tools: { explainAnalyze: true },
      });
      try {
        const explained = await tool(analyzed, 'explain', {
          sql: expensive,
          analyze: true,
        });
        expect(text(explained)).toMatch(/^ERROR 54000/);
        // Without analyze nothing runs: the plan is shown.
        const planned = await tool(analyzed, 'explain', { sql: expensive });
        expect(planned['isError']).toBeUndefined();
      } finally {
        await analyzed.close();
      }
      const cheap = await tool(capped, 'query', { sql: marker });
      expect(cheap['isError']).toBeUndefined();
      expect(
        (await auditRows(marker))
          .filter((row) => row.action === 'query')
          .map((row) => row.sqlstate),
      ).toEqual(['54000', null]);
    } finally {
      await capped.close();
    }
  });

  it('bounds temporary files per call (PGMCP_QUERY_TEMP_FILE_LIMIT_KB) when the login may set temp_file_limit', async () => {
    const bounded = await startTestServer({
      principal: { role: 'support', claims: { sub: 'limits-test' } },
      poolSize: 1,
      query: { tempFileLimitKb: 64 },
    });
    try {
      const result = await tool(bounded, 'query', {
        sql: 'select g from generate_series(1, 2000000) g order by g desc',
        max_rows: 1,
      });
      expect(text(result)).toMatch(
        /^ERROR 53400: temporary file size exceeds temp_file_limit \(64kB\)/,
      );
      const limit = await tool(bounded, 'query', {
        sql: "select current_setting('temp_file_limit')",
      });
      expect(limit['structuredContent']).toMatchObject({ rows: [['64kB']] });
    } finally {
      await bounded.close();
    }
  });

  it('gives a call one deadline: with consent tables, planning and running share the statement timeout', async () => {
    const timed = await startTestServer({
      principal: { role: 'support', claims: { sub: 'limits-test' } },
      poolSize: 1,
      statementTimeoutMs: 1000,
      sensitive: [
        {
          database: undefined,
          schema: 'tool_limits',
          table: 'secret',
          columns: null,
        },
      ],
    });
    try {
      // Planning evaluates the immutable function: each plan of the statement sleeps 5 s.
      const marker = `select 'deadline-${Date.now()}' as m`;
      const result = await tool(timed, 'query', {
        sql: `${marker}, tool_limits.slow_constant(5)`,
      });
      // Before, the plan for the consent check used one full timeout and the run another. With one
      // deadline the call ends within it: either the consent check's plan used it up and the run is
      // refused before it starts, or (the statement guard finding the function's body, so no plan
      // is made for consent) the run's own plan is cancelled.
      expect(text(result)).toMatch(
        /^ERROR 57014: canceling statement due to statement timeout/,
      );
      expect((await auditRows(marker)).map((row) => row.sqlstate)).toEqual([
        '57014',
      ]);
    } finally {
      await timed.close();
    }
  });
});

describe('a NUL in any tool argument', () => {
  it('is the caller’s error in search and fetch too, never a server failure', async () => {
    for (const [name, args] of [
      ['search', { query: 'tickets\u0000 drop' }],
      ['fetch', { id: 'notes:///a\u0000b' }],
    ] as const) {
      const { status, error, result } = await call(support.url, 'tools/call', {
        name,
        arguments: args,
      });
      expect({ name, status, error }).toEqual({
        name,
        status: 200,
        error: undefined,
      });
      expect(result?.['isError']).toBe(true);
    }
  });
});
