// stdio serves both eras per message (issue 14, legacy digest §10.1): a real child process where
// initialize starts the process's legacy session beside unchanged 2026-07-28 requests. Every
// legacy answer and notification is checked against the 2025-11-25 schema.
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { META, testDatabaseUrl } from '../setup/harness.js';
import { LEGACY_VERSION } from '../setup/legacy-client.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';
import {
  assertValidNotification,
  assertValidResponse,
} from '../setup/spec-schema.js';
import { startStdioChild, type StdioChild } from '../setup/stdio-child.js';

let databaseUrl: string;
let sql: pg.Client;
const children: StdioChild[] = [];

function legacy(id: number, method: string, params?: Record<string, unknown>) {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method,
    ...(params === undefined ? {} : { params }),
  });
}

/** Send a legacy request and return its answer, validated as 2025-11-25. */
async function ask(
  child: StdioChild,
  id: number,
  method: string,
  params?: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  child.send(legacy(id, method, params));
  const answer = await child.waitFor((message) => message['id'] === id);
  assertValidResponse(method, answer, 'legacy');
  return answer;
}

async function initialized(): Promise<StdioChild> {
  const child = startStdioChild({ DATABASE_URL: databaseUrl });
  children.push(child);
  const answer = await ask(child, 0, 'initialize', {
    protocolVersion: LEGACY_VERSION,
    capabilities: {},
    clientInfo: { name: 'stdio-test', version: '1' },
  });
  expect(answer['result']).toMatchObject({ protocolVersion: LEGACY_VERSION });
  child.send(
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  );
  return child;
}

beforeAll(async () => {
  databaseUrl = await recreateDatabase(testDatabaseUrl(), 'pgmcp_legacy_stdio');
  await migrateDatabase(databaseUrl);
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  await sql.query(
    `insert into pgmcp.resources (uri, name, text, readers)
     values ('notes:///stdio-legacy/one', 'one', 'v1', '{}')`,
  );
});

afterEach(() => {
  for (const child of children.splice(0)) child.process.kill('SIGKILL');
});

afterAll(async () => {
  await sql?.end();
});

describe('stdio, legacy era', () => {
  it('answers ping before initialize, and a claim-less request before it with the modern -32602', async () => {
    const child = startStdioChild({ DATABASE_URL: databaseUrl });
    children.push(child);
    expect((await ask(child, 1, 'ping'))['result']).toEqual({});
    child.send(legacy(2, 'resources/list'));
    const early = await child.waitFor((message) => message['id'] === 2);
    assertValidResponse('resources/list', early);
    expect(early).toMatchObject({ error: { code: -32602 } });
  });

  it('serves list and read shaped for 2025-11-25, -32002 for a missing resource, and refuses a second initialize', async () => {
    const child = await initialized();
    const list = await ask(child, 1, 'resources/list');
    expect(Object.keys(list['result'] as object)).toEqual(['resources']);
    expect(
      (list['result'] as { resources: unknown[] }).resources,
    ).toContainEqual(
      expect.objectContaining({ uri: 'notes:///stdio-legacy/one' }),
    );
    const read = await ask(child, 2, 'resources/read', {
      uri: 'notes:///stdio-legacy/one',
    });
    expect(read['result']).toEqual({
      contents: [expect.objectContaining({ text: 'v1' })],
    });
    const missing = await ask(child, 3, 'resources/read', {
      uri: 'notes:///stdio-legacy/none',
    });
    expect(missing).toMatchObject({ error: { code: -32002 } });
    const again = await ask(child, 4, 'initialize', {
      protocolVersion: LEGACY_VERSION,
      capabilities: {},
      clientInfo: { name: 'again', version: '1' },
    });
    expect(again).toMatchObject({
      error: { code: -32600, data: { code: 'ALREADY_INITIALIZED' } },
    });
  });

  it('ignores a JSON-RPC response from the client: no answer, and the next request is served', async () => {
    const child = await initialized();
    child.send(JSON.stringify({ jsonrpc: '2.0', id: 'srv-1', result: {} }));
    child.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'srv-2',
        error: { code: -32601, message: 'no' },
      }),
    );
    expect((await ask(child, 7, 'ping'))['result']).toEqual({});
    expect(
      child.lines.filter(
        (message) => message['id'] === 'srv-1' || message['id'] === 'srv-2',
      ),
    ).toEqual([]);
  });

  it('keeps serving 2026-07-28 requests in the same process, unchanged', async () => {
    const child = await initialized();
    child.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'resources/list',
        params: { _meta: META },
      }),
    );
    const modern = await child.waitFor((message) => message['id'] === 9);
    assertValidResponse('resources/list', modern);
    expect(modern).toMatchObject({ result: { resultType: 'complete' } });
  });

  it('delivers updated for a subscription and list_changed after committed changes, in the 2025-11-25 form', async () => {
    const child = await initialized();
    expect(
      (
        await ask(child, 1, 'resources/subscribe', {
          uri: 'notes:///stdio-legacy/one',
        })
      )['result'],
    ).toEqual({});
    await sql.query(
      `update pgmcp.resources set text = 'v2' where uri = 'notes:///stdio-legacy/one'`,
    );
    const updated = await child.waitFor(
      (message) => message['method'] === 'notifications/resources/updated',
    );
    assertValidNotification(updated, 'legacy');
    expect(updated).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/resources/updated',
      params: { uri: 'notes:///stdio-legacy/one' },
    });
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers)
       values ('notes:///stdio-legacy/two', 'two', 'v1', '{}')`,
    );
    const listChanged = await child.waitFor(
      (message) => message['method'] === 'notifications/resources/list_changed',
    );
    assertValidNotification(listChanged, 'legacy');
    await sql.query(
      `delete from pgmcp.resources where uri = 'notes:///stdio-legacy/two'`,
    );
  });
});
