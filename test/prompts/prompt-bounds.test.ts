// Small leaks closed (issue 32 point 10): prompts/get answers a sensitive resource the caller may not
// read exactly as a missing one; prompt arguments are bounded in count and size, and a table list in
// names; a 2025-11-25 initialize keeps only the client capabilities pgmcp reads. Own database (the
// payroll fixture: payroll.pay is marked sensitive, and only PAYROLL may select from it).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowUri } from '../../src/resources/catalog-uri.js';
import {
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { legacyPost } from '../setup/legacy-client.js';
import {
  createPayrollDatabase,
  ELICITATION,
  payrollServerOptions,
} from '../setup/payroll-fixture.js';

const DATABASE = 'pgmcp_prompt_bounds_test';
const PAYROLL = 'pgmcp_bounds_payroll';
const OUTSIDER = 'pgmcp_bounds_outsider';
let sql: pg.Client;
let outsider: TestServer;

beforeAll(async () => {
  const databaseUrl = await createPayrollDatabase(
    testDatabaseUrl(),
    DATABASE,
    [PAYROLL, OUTSIDER],
    [PAYROLL],
  );
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  await sql.query(
    `insert into pgmcp.prompts (name, arguments, messages, readers) values
       ('embed-any', '[{"name": "uri", "required": true}]',
        '[{"role": "user", "content": {"type": "pgmcp:embed", "uri": "{{uri}}"}}]', $1),
       ('link-tables', '[{"name": "tables"}]',
        '[{"role": "user", "content": {"type": "pgmcp:links", "tables": "{{tables}}"}}]', $1)`,
    [[PAYROLL, OUTSIDER]],
  );
  outsider = await startTestServer(
    payrollServerOptions(databaseUrl, {
      role: OUTSIDER,
      claims: { sub: 'outsider' },
    }),
  );
});

afterAll(async () => {
  await outsider?.close();
  await sql?.end();
});

function getPrompt(name: string, args: Record<string, string>) {
  return call(
    outsider.url,
    'prompts/get',
    { _meta: ELICITATION, name, arguments: args },
    { 'Mcp-Name': name },
  );
}

describe('prompts/get', () => {
  it('answers a sensitive row the role may not read exactly as a missing one, asking no consent', async () => {
    const answers = [];
    for (const uri of [
      rowUri(DATABASE, { schema: 'payroll', table: 'pay' }, ['1']),
      rowUri(DATABASE, { schema: 'payroll', table: 'pay' }, ['999']),
      'file:///hr/missing.md',
    ]) {
      const { result, error } = await getPrompt('embed-any', { uri });
      expect(result).toBeUndefined();
      answers.push({
        code: error?.code,
        message: error?.message,
        data: { ...error?.data, uri: 'the given uri' },
      });
      expect(error?.data?.['uri']).toBe(uri);
    }
    expect(answers[0]).toEqual(answers[2]);
    expect(answers[1]).toEqual(answers[2]);
    expect(answers[2]).toMatchObject({ code: -32602 });
  });

  it('refuses more arguments than PGMCP_PROMPT_MAX_ARGUMENTS, and a value longer than PGMCP_PROMPT_MAX_ARGUMENT_BYTES, with -32602', async () => {
    const many = Object.fromEntries(
      Array.from({ length: 33 }, (_, index) => [`a${index}`, 'x']),
    );
    const tooMany = await getPrompt('link-tables', many);
    expect(tooMany.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('at most 32 arguments') as unknown,
    });
    const long = await getPrompt('link-tables', { tables: 'é'.repeat(4097) });
    expect(long.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('longer than 8192 bytes') as unknown,
    });
  });

  it('refuses a table list longer than PGMCP_PROMPT_MAX_TABLES with -32602, before looking any up', async () => {
    const names = (count: number, name: string) =>
      Array.from({ length: count }, () => name).join(',');
    const within = await getPrompt('link-tables', {
      tables: names(20, 'payroll.pay'),
    });
    expect(within.error?.message).not.toContain('at most');
    // 2,000 names within the argument's byte bound: the table bound refuses them.
    const past = await getPrompt('link-tables', { tables: names(2000, 'p') });
    expect(past.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('at most 20 tables') as unknown,
      data: { maxTables: 20 },
    });
  });
});

describe('a 2025-11-25 initialize', () => {
  it('keeps only the client capabilities pgmcp reads, however large the object sent', async () => {
    const answer = await legacyPost(outsider.url, {
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {
          elicitation: { form: { padding: 'x'.repeat(200_000) } },
          roots: { listChanged: true },
          experimental: { padding: 'y'.repeat(400_000) },
        },
        clientInfo: { name: 'large', version: '1' },
      },
    });
    const id = answer.headers.get('mcp-session-id');
    expect(id).not.toBeNull();
    const { rows } = await sql.query<{ kept: unknown; bytes: number }>(
      `select client_capabilities as kept, octet_length(client_capabilities::text) as bytes
         from pgmcp.legacy_sessions order by created_at desc limit 1`,
    );
    expect(rows[0]?.kept).toEqual({ elicitation: { form: {} }, roots: {} });
    expect(rows[0]?.bytes).toBeLessThan(100);
  });

  it('keeps which elicitation modes were declared, so one naming only other modes is still not form', async () => {
    for (const [elicitation, kept] of [
      [{}, {}],
      [
        { form: {}, url: { x: 1 } },
        { form: {}, url: {} },
      ],
      [{ url: {} }, { url: {} }],
      [{ somethingNew: { x: 1 } }, { other: {} }],
    ] as const) {
      const opened = await legacyPost(outsider.url, {
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: { elicitation },
          clientInfo: { name: 'modes', version: '1' },
        },
      });
      expect(opened.status).toBe(200);
      const { rows } = await sql.query<{ kept: unknown }>(
        `select client_capabilities as kept from pgmcp.legacy_sessions
          order by created_at desc limit 1`,
      );
      expect(rows[0]?.kept).toEqual({ elicitation: kept });
    }
  });
});
