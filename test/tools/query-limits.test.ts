// Issue 32 points 3, 5 and 6 for query and explain: every statement that runs leaves an audit row,
// every call has a bounded cost, and a caller's mistakes come back as the caller's errors.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestServer,
  testDatabaseUrl,
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
  support = await startTestServer({
    principal: { role: 'support', claims: { sub: 'limits-test' } },
    poolSize: 1,
    statementTimeoutMs: 1500,
  });
});

afterAll(async () => {
  await support.close();
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
