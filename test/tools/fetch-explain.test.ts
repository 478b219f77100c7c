// fetch (resources/read behind the ChatGPT connector contract) and explain (plans without running),
// plus the config file's limits on query and explain: named schemas, ANALYZE only when allowed.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';

let support: TestServer;
let login: TestServer;
let limited: TestServer;
let sql: pg.Client;

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await sql.query(`
    create schema if not exists explain_probe;
    create table if not exists explain_probe.writes (id int);
    create or replace function explain_probe.write_one() returns int volatile language sql
      as 'insert into explain_probe.writes values (1) returning 1';
  `);
  support = await startTestServer({
    principal: { role: 'support', claims: {} },
  });
  login = await startTestServer();
  limited = await startTestServer({
    principal: { role: 'support', claims: {} },
    tools: { schemas: ['support'], explainAnalyze: true },
  });
});

afterAll(async () => {
  await Promise.all([support.close(), login.close(), limited.close()]);
  await sql.query('drop schema explain_probe cascade');
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

const firstText = (result: Record<string, unknown>) =>
  (result['content'] as { text?: string }[])[0]?.text ?? '';

describe('fetch', () => {
  it('answers a readable note as the connector document, the same JSON in text, and the note embedded', async () => {
    const uri = 'notes:///customer-faq/legacy-contract-refund-1';
    const { rows } = await sql.query<{ text: string }>(
      'select text from pgmcp.resources where uri = $1',
      [uri],
    );
    const result = await tool(support, 'fetch', { id: uri });
    const document = result['structuredContent'] as Record<string, unknown>;
    expect(document).toMatchObject({
      id: uri,
      url: uri,
      text: rows[0]?.text,
      metadata: { mimeType: 'text/markdown' },
    });
    expect(typeof document['title']).toBe('string');
    expect(JSON.parse(firstText(result))).toEqual(document);
    expect((result['content'] as unknown[])[1]).toMatchObject({
      type: 'resource',
      resource: { uri, text: rows[0]?.text },
    });
  });

  it('answers a note the role cannot read exactly as resources/read does: not found, as a tool error', async () => {
    const uri = 'notes:///payroll/urgent-schema-queue-6';
    const read = await call(support.url, 'resources/read', { uri });
    expect(read.error?.data).toMatchObject({ code: 'RESOURCE_NOT_FOUND' });
    const result = await tool(support, 'fetch', { id: uri });
    expect(result['isError']).toBe(true);
    expect(firstText(result)).toContain(read.error?.message ?? '?');
    expect(firstText(result)).not.toContain('payroll note text');
  });

  it('answers a resource marked sensitive with a tool error pointing at resources/read, never its text', async () => {
    const uri = 'notes:///customer-faq/legacy-contract-refund-1';
    await sql.query(
      'update pgmcp.resources set sensitive = true where uri = $1',
      [uri],
    );
    try {
      const result = await tool(support, 'fetch', { id: uri });
      expect(result['isError']).toBe(true);
      expect(firstText(result)).toContain('marked sensitive');
      expect(result['structuredContent']).toBeUndefined();
    } finally {
      await sql.query(
        'update pgmcp.resources set sensitive = false where uri = $1',
        [uri],
      );
    }
  });

  it('reaches a pg:// table description, which hosts without templates cannot discover', async () => {
    const result = await tool(support, 'fetch', {
      id: 'pg://pgmcp_test/support/tickets',
    });
    expect(result['isError']).toBeUndefined();
    expect((result['structuredContent'] as { text: string }).text).toContain(
      'tickets',
    );
  });
});

describe('explain', () => {
  it('plans a statement without running it', async () => {
    const before = await sql.query('select count(*) from explain_probe.writes');
    const result = await tool(login, 'explain', {
      sql: 'select explain_probe.write_one()',
    });
    expect(result['structuredContent']).toMatchObject({
      plan: [{ Plan: { 'Node Type': 'Result' } }],
      analyzed: false,
    });
    expect(firstText(result)).toContain('Result');
    const after = await sql.query('select count(*) from explain_probe.writes');
    expect(after.rows).toEqual(before.rows);
  });

  it('takes no analyze argument unless the config file allows it', async () => {
    const result = await tool(support, 'explain', {
      sql: 'select 1',
      analyze: true,
    });
    expect(result['isError']).toBe(true);
  });

  it('runs EXPLAIN ANALYZE read-only when allowed: a write still fails', async () => {
    const analyzed = await tool(limited, 'explain', {
      sql: 'select count(*) from support.tickets',
      analyze: true,
    });
    expect(analyzed['structuredContent']).toMatchObject({
      plan: [{ Plan: { 'Actual Rows': 1 } }],
      analyzed: true,
    });
    const write = await tool(limited, 'explain', {
      sql: 'delete from support.tickets',
      analyze: true,
    });
    // The statement guard refuses anything but one SELECT before PostgreSQL plans it.
    expect(firstText(write)).toMatch(/^ERROR 42601: pgmcp refuses/);
  });
});

describe('explain with ANALYZE allowed', () => {
  it("runs the statement inside the role's own function: set_config('role', …) is refused there too", async () => {
    const result = await tool(limited, 'explain', {
      sql: "select set_config('role', 'postgres', true), count(*) from support.tickets where id > $1",
      params: [0],
      analyze: true,
    });
    expect(firstText(result)).toContain('ERROR 42501:');
  });

  it('refuses a second statement', async () => {
    const result = await tool(limited, 'explain', {
      sql: 'select 1; select 2',
      analyze: true,
    });
    expect(firstText(result)).toContain('ERROR 42601:');
  });
});

describe('tools.schemas', () => {
  it('lets query read the named schemas and refuses a relation elsewhere', async () => {
    const inside = await tool(limited, 'query', {
      sql: 'select count(*) > 0 as any from tickets',
    });
    expect(inside['structuredContent']).toMatchObject({ rows: [['true']] });
    const outside = await tool(limited, 'query', {
      sql: 'select count(*) from shop.orders',
    });
    expect(firstText(outside)).toContain('ERROR 42501:');
    expect(firstText(outside)).toContain('shop');
  });
});
