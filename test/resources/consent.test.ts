// A person's consent for sensitive data (issue 17.4, 17.5): reading a resource marked sensitive
// answers input_required with a form asking for a reason and a signed requestState; the retry with
// the answer reads it and writes pgmcp.audit; declining is refused and audited; bad, expired,
// foreign or other-request state is -32602; a client without form elicitation gets -32021 naming
// it. Over HTTP and stdio. Own database: it marks rows sensitive and reads the audit trail.
import { createHmac } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rowUri } from '../../src/resources/catalog-uri.js';
import {
  call,
  META,
  startTestServer,
  TEST_CURSOR_SECRET,
  testDatabaseUrl,
  walkList,
  type TestServer,
} from '../setup/harness.js';
import {
  createPayrollDatabase,
  ELICITATION,
  HANDBOOK,
  payrollServerOptions,
  SALARIES,
} from '../setup/payroll-fixture.js';
import { assertValidResponse } from '../setup/spec-schema.js';
import { startStdioChild, type StdioChild } from '../setup/stdio-child.js';

const DATABASE = 'pgmcp_consent_test';
const ROLE_A = 'pgmcp_consent_a';
const ROLE_B = 'pgmcp_consent_b';

let databaseUrl: string;
let sql: pg.Client;
let serverA: TestServer;
let serverB: TestServer;
const children: StdioChild[] = [];

beforeAll(async () => {
  databaseUrl = await createPayrollDatabase(
    testDatabaseUrl(),
    DATABASE,
    [ROLE_A, ROLE_B],
    [ROLE_A],
  );
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  const options = (role: string) =>
    payrollServerOptions(databaseUrl, {
      role,
      claims: { sub: `${role}-person` },
    });
  serverA = await startTestServer(options(ROLE_A));
  serverB = await startTestServer(options(ROLE_B));
});

afterEach(() => {
  for (const child of children.splice(0)) child.process.kill('SIGKILL');
});

afterAll(async () => {
  await serverA?.close();
  await serverB?.close();
  await sql?.end();
});

/** resources/read with a client that declares form elicitation, plus `extra` params. */
function read(
  server: TestServer,
  uri: string,
  extra: Record<string, unknown> = {},
  meta: Record<string, unknown> = ELICITATION,
) {
  return call(server.url, 'resources/read', { _meta: meta, uri, ...extra });
}

/** The audit rows for `target`, oldest first. */
async function audit(target: string) {
  const { rows } = await sql.query<{
    action: string;
    role: string;
    subject: string;
    reason: string | null;
  }>(
    'select action, role, subject, reason from pgmcp.audit where target = $1 order by id',
    [target],
  );
  return rows;
}

const accept = (reason: string) => ({
  consent: { action: 'accept', content: { reason } },
});

describe('consent for sensitive data over HTTP', () => {
  it('asks for a reason with a form and a requestState, then reads on the retry and audits both', async () => {
    const first = await read(serverA, SALARIES);
    expect(first.error).toBeUndefined();
    const result = first.result as Record<string, unknown>;
    expect(result).toMatchObject({
      resultType: 'input_required',
      inputRequests: {
        consent: {
          method: 'elicitation/create',
          params: {
            mode: 'form',
            requestedSchema: {
              type: 'object',
              properties: { reason: { type: 'string' } },
              required: ['reason'],
            },
          },
        },
      },
    });
    expect(result).not.toHaveProperty('contents');
    expect(result).not.toHaveProperty('ttlMs');
    const state = result['requestState'] as string;
    expect(typeof state).toBe('string');

    const retry = await read(serverA, SALARIES, {
      inputResponses: accept('quarterly review'),
      requestState: state,
    });
    expect(retry.result).toMatchObject({
      resultType: 'complete',
      contents: [{ uri: SALARIES, text: 'Ada: 100' }],
      ttlMs: 0,
      cacheScope: 'private',
    });
    expect(await audit(SALARIES)).toEqual([
      {
        action: 'consent-asked',
        role: ROLE_A,
        subject: `${ROLE_A}-person`,
        reason: null,
      },
      {
        action: 'consent-given',
        role: ROLE_A,
        subject: `${ROLE_A}-person`,
        reason: 'quarterly review',
      },
    ]);
  });

  it('refuses a decline clearly and audits it', async () => {
    const first = await read(serverB, SALARIES);
    const state = first.result?.['requestState'] as string;
    const declined = await read(serverB, SALARIES, {
      inputResponses: { consent: { action: 'decline' } },
      requestState: state,
    });
    expect(declined.error).toMatchObject({
      code: -32600,
      data: { code: 'CONSENT_DECLINED', uri: SALARIES },
    });
    expect((await audit(SALARIES)).at(-1)).toMatchObject({
      action: 'consent-declined',
      role: ROLE_B,
    });
  });

  it('asks again when the retry carries the state but no answer', async () => {
    const first = await read(serverA, SALARIES);
    const again = await read(serverA, SALARIES, {
      requestState: first.result?.['requestState'],
    });
    expect(again.result).toMatchObject({ resultType: 'input_required' });
  });

  it('answers tampered, foreign, other-request and expired state with -32602, reading nothing', async () => {
    const first = await read(serverA, SALARIES);
    const state = first.result?.['requestState'] as string;
    const [version, payload, mac] = state.split('.') as [
      string,
      string,
      string,
    ];
    const forged = Buffer.from(
      JSON.stringify({
        ...(JSON.parse(Buffer.from(payload, 'base64url').toString()) as object),
        e: Date.now() + 86_400_000,
      }),
    ).toString('base64url');
    // The same claims signed with the server's key, but already expired.
    const key = createHmac('sha256', TEST_CURSOR_SECRET)
      .update('pgmcp consent state')
      .digest();
    const expiredPayload = Buffer.from(
      JSON.stringify({
        ...(JSON.parse(Buffer.from(payload, 'base64url').toString()) as object),
        e: Date.now() - 1000,
      }),
    ).toString('base64url');
    const expired = `${version}.${expiredPayload}.${createHmac('sha256', key)
      .update(`${version}.${expiredPayload}`)
      .digest('base64url')}`;
    const cases: [TestServer, string, string][] = [
      [serverA, SALARIES, `${version}.${forged}.${mac}`],
      [serverA, SALARIES, 'not-a-state'],
      [serverB, SALARIES, state], // another caller
      [serverA, HANDBOOK.replace('handbook', 'salaries2'), state], // another request
      [serverA, SALARIES, expired],
    ];
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers, sensitive)
       values ('file:///hr/salaries2.md', 's2', 'Bob: 90', '{${ROLE_A}}', true)`,
    );
    for (const [server, uri, requestState] of cases) {
      const answer = await read(server, uri, {
        inputResponses: accept('because'),
        requestState,
      });
      expect(answer.error, requestState).toMatchObject({ code: -32602 });
    }
  });

  it('answers -32021 naming form elicitation when the request did not declare it', async () => {
    for (const capabilities of [{}, { elicitation: { url: {} } }]) {
      const answer = await read(
        serverA,
        SALARIES,
        {},
        {
          ...META,
          'io.modelcontextprotocol/clientCapabilities': capabilities,
        },
      );
      expect(answer.status).toBe(400);
      expect(answer.error).toMatchObject({
        code: -32021,
        data: { requiredCapabilities: { elicitation: { form: {} } } },
      });
    }
  });

  it('lists a sensitive resource, leaves its contents out of a directory read, and reads others without asking', async () => {
    const { uris } = await walkList(serverA.url);
    expect(uris).toContain(SALARIES);
    const directory = await read(serverA, 'file:///hr/');
    const contents = directory.result?.['contents'] as { uri: string }[];
    expect(contents.map((content) => content.uri)).toEqual([
      'file:///hr/',
      HANDBOOK,
    ]);
    const plain = await read(serverA, HANDBOOK, {}, META);
    expect(plain.result).toMatchObject({ resultType: 'complete' });
  });

  it('asks before reading a row of a table the config file marks sensitive', async () => {
    const uri = rowUri(DATABASE, { schema: 'payroll', table: 'pay' }, ['1']);
    const first = await read(serverA, uri);
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    const retry = await read(serverA, uri, {
      inputResponses: accept('payroll run'),
      requestState: first.result?.['requestState'],
    });
    expect(retry.result).toMatchObject({
      contents: [{ uri, text: JSON.stringify({ id: 1, amount: 100 }) }],
    });
    expect((await audit(uri)).map((row) => row.action)).toEqual([
      'consent-asked',
      'consent-given',
    ]);
  });
});

describe('consent for the query tool', () => {
  const query = (sqlText: string, extra: Record<string, unknown> = {}) =>
    call(serverA.url, 'tools/call', {
      _meta: ELICITATION,
      name: 'query',
      arguments: { sql: sqlText },
      ...extra,
    });

  it('asks before a statement that reads a sensitive table, through a view too, and runs it on the retry', async () => {
    await sql.query(`create or replace view payroll.totals as select sum(amount) as total from payroll.pay;
      grant select on payroll.totals to ${ROLE_A}`);
    for (const statement of [
      'select amount from payroll.pay where id = 1',
      'select total from payroll.totals',
    ]) {
      const first = await query(statement);
      expect(first.result).toMatchObject({ resultType: 'input_required' });
      const retry = await query(statement, {
        inputResponses: accept('quarterly review'),
        requestState: first.result?.['requestState'],
      });
      expect(retry.result).toMatchObject({
        structuredContent: { rows: [['100']] },
      });
      expect(await audit(`query: ${statement}`)).toMatchObject([
        { action: 'consent-asked' },
        { action: 'consent-given', reason: 'quarterly review' },
      ]);
    }
  });

  it('runs a statement that reads no sensitive table without asking', async () => {
    const { result } = await query("select 'plain' as word");
    expect(result).toMatchObject({ structuredContent: { rows: [['plain']] } });
    expect(result?.['resultType']).not.toBe('input_required');
  });
});

describe('consent for a prompt that embeds a sensitive resource', () => {
  it('asks before rendering it, renders it on the retry, and audits both', async () => {
    await sql.query(
      `insert into pgmcp.prompts (name, messages, readers) values ('pay-review', $1, $2)
       on conflict (name) do nothing`,
      [
        JSON.stringify([
          { role: 'user', content: { type: 'pgmcp:embed', uri: SALARIES } },
        ]),
        [ROLE_A],
      ],
    );
    const get = (extra: Record<string, unknown> = {}) =>
      call(
        serverA.url,
        'prompts/get',
        { _meta: ELICITATION, name: 'pay-review', ...extra },
        { 'Mcp-Name': 'pay-review' },
      );
    const first = await get();
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    expect(JSON.stringify(first.result)).not.toContain('Ada: 100');
    const retry = await get({
      inputResponses: accept('pay review'),
      requestState: first.result?.['requestState'],
    });
    expect(retry.result).toMatchObject({
      messages: [
        { content: { type: 'resource', resource: { text: 'Ada: 100' } } },
      ],
    });
    expect(
      await audit(`prompt: pay-review {} embeds ${SALARIES}`),
    ).toMatchObject([
      { action: 'consent-asked' },
      { action: 'consent-given', reason: 'pay review' },
    ]);
  });
});

describe('consent over stdio', () => {
  it('asks, reads on the retry, and refuses a client without elicitation', async () => {
    const folder = await mkdtemp(path.join(os.tmpdir(), 'pgmcp-consent-'));
    const configFile = path.join(folder, 'pgmcp.config.json');
    await writeFile(
      configFile,
      JSON.stringify({
        collections: [{ schema: 'payroll', table: 'pay' }],
        sensitive: [{ schema: 'payroll', table: 'pay', columns: ['amount'] }],
      }),
    );
    const child = startStdioChild({
      DATABASE_URL: databaseUrl,
      PGMCP_ROLE: ROLE_A,
      PGMCP_CONFIG: configFile,
      PGMCP_CURSOR_SECRETS: TEST_CURSOR_SECRET,
    });
    children.push(child);
    const ask = async (id: string, params: Record<string, unknown>) => {
      child.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'resources/read',
          params,
        }),
      );
      const answer = await child.waitFor((line) => line['id'] === id);
      assertValidResponse('resources/read', answer);
      return answer;
    };
    const uri = rowUri(DATABASE, { schema: 'payroll', table: 'pay' }, ['1']);
    const first = await ask('1', { _meta: ELICITATION, uri });
    const result = first['result'] as Record<string, unknown>;
    expect(result).toMatchObject({ resultType: 'input_required' });
    const retry = await ask('2', {
      _meta: ELICITATION,
      uri,
      inputResponses: accept('audit over stdio'),
      requestState: result['requestState'],
    });
    expect(retry['result']).toMatchObject({
      contents: [{ uri, text: JSON.stringify({ id: 1, amount: 100 }) }],
    });
    const refused = await ask('3', { _meta: META, uri: SALARIES });
    expect(refused['error']).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { elicitation: { form: {} } } },
    });
    // The query tool asks the same way over stdio (a table with a sensitive column counts whole).
    const statement = 'select id from payroll.pay';
    const callQuery = async (id: string, extra: Record<string, unknown>) => {
      child.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: {
            _meta: ELICITATION,
            name: 'query',
            arguments: { sql: statement },
            ...extra,
          },
        }),
      );
      const answer = await child.waitFor((line) => line['id'] === id);
      assertValidResponse('tools/call', answer);
      return answer['result'] as Record<string, unknown>;
    };
    const asked = await callQuery('4', {});
    expect(asked).toMatchObject({ resultType: 'input_required' });
    expect(
      await callQuery('5', {
        inputResponses: accept('query over stdio'),
        requestState: asked['requestState'],
      }),
    ).toMatchObject({ structuredContent: { rows: [['1']] } });
  });
});
