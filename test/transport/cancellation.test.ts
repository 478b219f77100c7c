// Cancellation (spec §13, issue 17): closing the HTTP request, or notifications/cancelled on stdio and
// in a legacy HTTP session, stops the request's PostgreSQL statement at once, the pooled connection
// goes back clean, and nothing more is sent for that request. The slow statement is honest: a row
// collection whose row-level security policy sleeps 30 s, read through the real request path.
// Own database: this file creates roles, functions and policies other files must not see.
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rowUri } from '../../src/resources/catalog-uri.js';
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
  LEGACY_VERSION,
  legacyPost,
  openSession,
} from '../setup/legacy-client.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';
import { startStdioChild, type StdioChild } from '../setup/stdio-child.js';

const DATABASE = 'pgmcp_cancel_test';
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const ROLE = 'pgmcp_cancel_reader';
const COLLECTIONS = [
  { schema: 'slow', table: 'items' },
  { schema: 'slow', table: 'quick' },
];

let databaseUrl: string;
let sql: pg.Client;
let server: TestServer;
const children: StdioChild[] = [];

const slowUri = () =>
  rowUri(DATABASE, { schema: 'slow', table: 'items' }, ['1']);
const quickUri = () =>
  rowUri(DATABASE, { schema: 'slow', table: 'quick' }, ['1']);

/** The pid of the pgmcp backend sleeping in the policy, once it is. */
function sleepingBackend(): Promise<number> {
  return until(
    async () => {
      const { rows } = await sql.query<{ pid: number }>(
        `select pid from pg_stat_activity
          where datname = $1 and application_name like 'pgmcp/%' and wait_event = 'PgSleep'`,
        [DATABASE],
      );
      return rows[0]?.pid;
    },
    20_000,
    'the slow statement to start',
  );
}

/**
 * Resolves once backend `pid` is idle and still connected: its statement stopped and the connection
 * was kept. Without the cancel the statement runs on until its 10 s statement timeout, far past this
 * wait, so the test fails.
 */
async function idleAfterCancel(pid: number): Promise<void> {
  await until(
    async () => {
      const { rows } = await sql.query<{ state: string }>(
        'select state from pg_stat_activity where pid = $1',
        [pid],
      );
      const state = rows[0]?.state;
      if (state === undefined) throw new Error(`backend ${pid} was closed`);
      return state === 'idle';
    },
    3000,
    `backend ${pid} to go idle`,
  );
}

beforeAll(async () => {
  databaseUrl = await recreateDatabase(testDatabaseUrl(), DATABASE);
  await migrateDatabase(databaseUrl, async (admin) => {
    await admin.query(
      `do $$ begin if not exists (select from pg_roles where rolname = '${ROLE}') then create role ${ROLE} nologin; end if; end $$`,
    );
    await admin.query(`
      create schema slow;
      create function slow.pause() returns boolean volatile language sql
        as 'select true from pg_sleep(30)';
      create table slow.items (id int primary key, v text);
      insert into slow.items values (1, 'slow');
      alter table slow.items enable row level security;
      create policy pause on slow.items for select using (slow.pause());
      create table slow.quick (id int primary key, v text);
      insert into slow.quick values (1, 'quick');
      grant usage on schema slow to ${ROLE};
      grant select on slow.items, slow.quick to ${ROLE};
      grant ${ROLE} to current_user;
      select pgmcp.expose_table('slow.items');
      select pgmcp.expose_table('slow.quick');
    `);
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  server = await startTestServer({
    databaseUrl,
    principal: { role: ROLE, claims: {} },
    // One connection: the request after a cancel can only run if it came back clean.
    poolSize: 1,
    collections: COLLECTIONS.map((c) => ({
      ...c,
      database: undefined,
      list: false,
      titleColumn: undefined,
    })),
    catalogScope: { include: ['slow'], exclude: [] },
  });
});

afterEach(() => {
  for (const child of children.splice(0)) child.process.kill('SIGKILL');
});

afterAll(async () => {
  await server?.close();
  await sql?.end();
});

describe('cancelling a request', () => {
  it('over HTTP: closing the request stops its statement and the connection serves the next request', async () => {
    const aborter = new AbortController();
    const pending = fetch(server.url, {
      method: 'POST',
      headers: mcpHeaders('resources/read', slowUri()),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'slow',
        method: 'resources/read',
        params: { _meta: META, uri: slowUri() },
      }),
      signal: aborter.signal,
    }).catch((error: unknown) => error);
    const pid = await sleepingBackend();
    aborter.abort();
    await idleAfterCancel(pid);
    expect(await pending).toBeInstanceOf(Error);
    const next = await call(server.url, 'resources/read', { uri: quickUri() });
    expect(next.error).toBeUndefined();
    expect(next.result?.['contents']).toMatchObject([
      { uri: quickUri(), text: JSON.stringify({ id: 1, v: 'quick' }) },
    ]);
  });

  it('over HTTP: closing a query tool call stops its statement and the connection serves the next request', async () => {
    const aborter = new AbortController();
    const pending = fetch(server.url, {
      method: 'POST',
      headers: mcpHeaders('tools/call', 'query'),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'slow-query',
        method: 'tools/call',
        params: {
          _meta: META,
          name: 'query',
          arguments: { sql: 'select pg_sleep(30)' },
        },
      }),
      signal: aborter.signal,
    }).catch((error: unknown) => error);
    const pid = await sleepingBackend();
    aborter.abort();
    await idleAfterCancel(pid);
    expect(await pending).toBeInstanceOf(Error);
    const next = await call(server.url, 'resources/read', { uri: quickUri() });
    expect(next.error).toBeUndefined();
  });

  it('in a legacy HTTP session: notifications/cancelled stops the statement and the request gets no response', async () => {
    const session = await openSession(server.url);
    const headers = {
      'Mcp-Session-Id': session,
      'MCP-Protocol-Version': LEGACY_VERSION,
    };
    const pending = legacyPost(
      server.url,
      { method: 'resources/read', id: 'slow', params: { uri: slowUri() } },
      headers,
    );
    const pid = await sleepingBackend();
    const cancelled = await legacyPost(
      server.url,
      {
        method: 'notifications/cancelled',
        id: null,
        params: { requestId: 'slow' },
      },
      headers,
    );
    expect(cancelled.status).toBe(202);
    await idleAfterCancel(pid);
    const answer = await pending;
    expect(answer.body).toBeUndefined();
    const next = await legacyPost(
      server.url,
      { method: 'resources/read', params: { uri: quickUri() } },
      headers,
    );
    expect(next.result?.['contents']).toMatchObject([{ uri: quickUri() }]);
  });

  it('over stdio, both eras: notifications/cancelled stops the statement and nothing is written for it', async () => {
    const folder = await mkdtemp(path.join(os.tmpdir(), 'pgmcp-cancel-'));
    const configFile = path.join(folder, 'pgmcp.config.json');
    await writeFile(configFile, JSON.stringify({ collections: COLLECTIONS }));
    const child = startStdioChild({
      DATABASE_URL: databaseUrl,
      PGMCP_ROLE: ROLE,
      PGMCP_CONFIG: configFile,
      PGMCP_POOL_SIZE: '1',
      PGMCP_LOG_FORMAT: 'json',
    });
    children.push(child);
    const send = (message: object) => child.send(JSON.stringify(message));
    const cancel = (requestId: string) =>
      send({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId },
      });

    send({
      jsonrpc: '2.0',
      id: 'modern',
      method: 'resources/read',
      params: { _meta: { ...META, traceparent: TRACEPARENT }, uri: slowUri() },
    });
    const first = await sleepingBackend();
    cancel('modern');
    await idleAfterCancel(first);

    // The same process, now also a legacy session (initialize on stdio starts it).
    send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: {
        protocolVersion: LEGACY_VERSION,
        capabilities: {},
        clientInfo: { name: 'cancel-test', version: '1' },
      },
    });
    await child.waitFor((message) => message['id'] === 'init');
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 'legacy',
      method: 'resources/read',
      params: { uri: slowUri() },
    });
    const pid = await sleepingBackend();
    cancel('legacy');
    await idleAfterCancel(pid);

    send({
      jsonrpc: '2.0',
      id: 'after',
      method: 'resources/read',
      params: { uri: quickUri() },
    });
    const after = await child.waitFor((message) => message['id'] === 'after');
    expect(after['result']).toMatchObject({ contents: [{ uri: quickUri() }] });
    const ids = child.lines.map((message) => message['id']);
    expect(ids).not.toContain('modern');
    expect(ids).not.toContain('legacy');
    // PGMCP_LOG_FORMAT=json: stderr is JSON lines; the stopped statement's line names its request
    // and carries the trace context the request came with.
    const logs = child.stderr
      .join('')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logs).toContainEqual(
      expect.objectContaining({
        level: 'error',
        requestId: 'modern',
        traceparent: TRACEPARENT,
      }),
    );
  });
});
