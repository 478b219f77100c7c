// Running query or explain changes nothing others see (issue 32 point 7): no change-log row, no
// list_changed to any listener of either era. This file has its own database, so no other file's
// writes reach its streams or its change log.
import type http from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/index.js';
import {
  call,
  listenFresh,
  startTestServer,
  testDatabaseUrl,
  type ListenStream,
  type TestServer,
} from '../setup/harness.js';
import {
  openSession,
  openSessionStream,
  type SessionStream,
} from '../setup/legacy-client.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

const LISTENER = 'pgmcp_quiet_listener';
const CALLERS = ['pgmcp_quiet_a', 'pgmcp_quiet_b'];
let databaseUrl: string;
let sql: pg.Client;
let server: TestServer;
const closers: (() => void)[] = [];

/** Each request runs as the role its X-Test-Role header names (a stand-in for a token's claim). */
function byHeader(request: {
  headers: { authorization?: string | undefined };
}): Promise<Principal> {
  const role = (request.headers as http.IncomingHttpHeaders)['x-test-role'];
  return Promise.resolve({
    role: typeof role === 'string' ? role : LISTENER,
    claims: { sub: 'quiet' },
  });
}

beforeAll(async () => {
  databaseUrl = await recreateDatabase(testDatabaseUrl(), 'pgmcp_quiet_test');
  await migrateDatabase(databaseUrl, async (admin) => {
    for (const role of [LISTENER, ...CALLERS])
      await admin.query(
        `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`,
      );
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  server = await startTestServer({
    databaseUrl,
    authenticate: byHeader,
    live: {},
  });
});

afterAll(async () => {
  for (const close of closers) close();
  await server?.close();
  await sql?.end();
});

async function lastChange(): Promise<string> {
  const { rows } = await sql.query<{ seq: string | null }>(
    'select max(seq)::text as seq from pgmcp.changes',
  );
  return rows[0]?.seq ?? 'none';
}

/** query and explain by every caller role, each on a connection none of them used before. */
async function runToolsOnFreshConnections(): Promise<void> {
  const tools = await startTestServer({
    databaseUrl,
    authenticate: byHeader,
    poolSize: 1,
  });
  try {
    for (const role of [...CALLERS, LISTENER])
      for (const [name, args] of [
        ['query', { sql: 'select 1 as one' }],
        ['explain', { sql: 'select 1 as one' }],
      ] as const) {
        const { result, error } = await call(
          tools.url,
          'tools/call',
          { name, arguments: args },
          { 'X-Test-Role': role },
        );
        expect(error).toBeUndefined();
        expect(result?.['isError']).not.toBe(true);
      }
  } finally {
    await tools.close();
  }
}

describe('query and explain', () => {
  it('write no change-log row and send no list_changed to a listen stream or a 2025-11-25 session', async () => {
    const listener: ListenStream = await listenFresh(server, {
      resourcesListChanged: true,
      promptsListChanged: true,
    });
    closers.push(() => listener.close());
    const session = await openSession(server.url);
    const events: SessionStream = await openSessionStream(server.url, session);
    closers.push(() => events.close());
    const before = await lastChange();

    await runToolsOnFreshConnections();

    // A real change after the calls (a prompt the listener's role reads): the change feed delivers
    // in change-log order, so the first notification either listener hears is this change's own.
    await sql.query(
      `insert into pgmcp.prompts (name, messages, readers)
       values ('quiet-prompt', '[{"role": "user", "content": {"type": "text", "text": "hi"}}]', $1)`,
      [[LISTENER]],
    );
    const promptChange = 'notifications/prompts/list_changed';
    await listener.waitFor((messages) =>
      messages.some((message) => message.method === promptChange),
    );
    await events.waitFor(() =>
      events.messages.some((message) => message.method === promptChange),
    );
    expect(listener.messages.slice(1).map((message) => message.method)).toEqual(
      [promptChange],
    );
    expect(events.messages.map((message) => message.method)).toEqual([
      promptChange,
    ]);
    const { rows } = await sql.query<{ relation: string }>(
      'select relation from pgmcp.changes where seq > $1 order by seq',
      [before === 'none' ? 0 : before],
    );
    expect(rows.map((row) => row.relation)).toEqual(['pgmcp.prompts']);
  });
});

describe('the schema-change capture', () => {
  it('logs no change for DDL on temporary objects, a policy on a temporary table included', async () => {
    const before = await lastChange();
    await sql.query(`create temp table quiet_scratch (id int primary key);
      create policy quiet_policy on quiet_scratch using (true);
      alter table quiet_scratch enable row level security;
      create index on quiet_scratch (id);
      comment on column quiet_scratch.id is 'scratch';
      drop policy quiet_policy on quiet_scratch;
      drop table quiet_scratch`);
    expect(await lastChange()).toBe(before);
    await sql.query(`create table public.quiet_real (id int primary key);
      create policy quiet_policy on public.quiet_real using (true);
      drop table public.quiet_real`);
    const { rows } = await sql.query<{ relation: string }>(
      `select relation from pgmcp.changes where seq > $1 and detail->>'objectType' = 'policy'`,
      [before === 'none' ? 0 : before],
    );
    expect(rows.map((row) => row.relation)).toEqual([
      'quiet_policy on public.quiet_real',
    ]);
  });
});
