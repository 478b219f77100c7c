// Live updates end to end against real Postgres: committed changes → capture triggers → change log
// → one LISTEN feed per server → authorized fan-out to subscriptions/listen streams over HTTP.
// This file has its own database, so other files' writes cannot reach its streams.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  Client,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import {
  META,
  call,
  listen,
  listenFresh,
  mcpHeaders,
  startTestServer,
  until,
  testDatabaseUrl,
  type ListenStream,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';
import { startStdioChild } from '../setup/stdio-child.js';
import { match } from '../setup/matchers.js';

const ROLE_A = 'pgmcp_live_a';
const ROLE_B = 'pgmcp_live_b';
let databaseUrl: string;
let sql: pg.Client;
let serverA: TestServer;
let serverB: TestServer;
const streams: ListenStream[] = [];

/** Insert resources (one transaction); returns their URIs. */
async function insert(
  prefix: string,
  count: number,
  readers: string[],
): Promise<string[]> {
  const { rows } = await sql.query<{ uri: string }>(
    `insert into pgmcp.resources (uri, name, text, readers)
     select format('notes:///%s/n%s', $1::text, n), format('n%s', n), 'v1', $3::text[]
       from generate_series(1, $2::int) as n
     returning uri`,
    [prefix, count, readers],
  );
  return rows.map((row) => row.uri).sort();
}

async function open(
  server: TestServer,
  notifications: Record<string, unknown>,
): Promise<ListenStream> {
  const stream = await listenFresh(server, notifications);
  streams.push(stream);
  return stream;
}

/** A change only `stream`'s role sees; once it arrives, everything committed before it has too. */
async function sentinel(stream: ListenStream, uri: string): Promise<void> {
  const before = stream.updated().filter((seen) => seen === uri).length;
  await sql.query(
    `update pgmcp.resources set text = text || '.' where uri = $1`,
    [uri],
  );
  await stream.waitFor(
    () => stream.updated().filter((seen) => seen === uri).length > before,
  );
}

/** The cache decision prompts/list reports at log level info: "hit" or "miss". */
async function pageCacheDecision(server: TestServer): Promise<unknown> {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: mcpHeaders('prompts/list'),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'memo',
      method: 'prompts/list',
      params: {
        _meta: { ...META, 'io.modelcontextprotocol/logLevel': 'info' },
      },
    }),
  });
  const events = (await response.text())
    .split('\n\n')
    .filter((event) => event.startsWith('data: '))
    .map((event) => JSON.parse(event.slice(6)) as Record<string, unknown>);
  const cache = events.find(
    (event) =>
      event['method'] === 'notifications/message' &&
      (event['params'] as { logger?: string }).logger === 'cache',
  );
  return (cache?.['params'] as { data?: { page?: unknown } } | undefined)?.data
    ?.page;
}

beforeAll(async () => {
  databaseUrl = await recreateDatabase(testDatabaseUrl(), 'pgmcp_live_test');
  await migrateDatabase(databaseUrl, async (admin) => {
    for (const role of [ROLE_A, ROLE_B])
      await admin.query(
        `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`,
      );
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  serverA = await startTestServer({
    databaseUrl,
    principal: { role: ROLE_A, claims: {} },
    live: {},
  });
  serverB = await startTestServer({
    databaseUrl,
    principal: { role: ROLE_B, claims: {} },
    live: {},
  });
});

afterAll(async () => {
  for (const stream of streams) stream.close();
  await serverA?.close();
  await serverB?.close();
  await sql?.end();
});

describe('subscriptions/listen', () => {
  it('advertises subscribe and listChanged in server/discover', async () => {
    const { result } = await call(serverA.url, 'server/discover');
    expect(result?.['capabilities']).toMatchObject({
      resources: { subscribe: true, listChanged: true },
    });
  });

  it('acknowledges first, echoing only what it honors: unreadable and missing URIs are dropped alike', async () => {
    const [mine] = await insert('ack-a', 1, [ROLE_A]);
    const [theirs] = await insert('ack-b', 1, [ROLE_B]);
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers) values ('file:///live-ack/a.md', 'a', 'x', $1)`,
      [[ROLE_A]],
    );
    const stream = await open(serverA, {
      resourcesListChanged: true,
      toolsListChanged: true,
      promptsListChanged: true,
      resourceSubscriptions: [
        mine,
        theirs,
        'notes:///ack-none/missing',
        'file:///live-ack/',
        mine,
      ],
    });
    expect(stream.messages[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: {
        _meta: {
          'io.modelcontextprotocol/subscriptionId': match.any(String),
        },
        notifications: {
          promptsListChanged: true,
          resourcesListChanged: true,
          resourceSubscriptions: [mine, 'file:///live-ack/'],
        },
      },
    });
  });

  it('tags every message with the listen request id, verbatim (number or string)', async () => {
    const [uri] = await insert('tag', 1, [ROLE_A]);
    for (const id of [42, 'sub-"quoted"']) {
      const stream = await listen(
        serverA.url,
        { resourceSubscriptions: [uri] },
        { id },
      );
      streams.push(stream);
      await sentinel(stream, uri as string);
      for (const message of stream.messages)
        expect(
          (message.params?.['_meta'] as Record<string, unknown>)[
            'io.modelcontextprotocol/subscriptionId'
          ],
        ).toBe(id);
      stream.close();
    }
  });

  it('delivers inserts, updates and deletes to the streams allowed to hear of them, and no others', async () => {
    const [a1, a2] = await insert('crud-a', 2, [ROLE_A]);
    const [b1] = await insert('crud-b', 1, [ROLE_B]);
    const streamA = await open(serverA, {
      resourcesListChanged: true,
      resourceSubscriptions: [a1, a2],
    });
    const streamB = await open(serverB, {
      resourcesListChanged: true,
      resourceSubscriptions: [b1],
    });
    // An insert only A can read: A's list changed, B's did not.
    await insert('crud-a-new', 1, [ROLE_A]);
    await streamA.waitFor(() => streamA.listChanges() === 1);
    // An update of a subscribed URI.
    await sql.query(`update pgmcp.resources set text = 'v2' where uri = $1`, [
      a1,
    ]);
    await streamA.waitFor(() => streamA.updated().includes(a1 as string));
    // A delete: updated for the subscribed URI, and A's list changed again.
    await sql.query(`delete from pgmcp.resources where uri = $1`, [a2]);
    await streamA.waitFor(
      () =>
        streamA.updated().includes(a2 as string) && streamA.listChanges() >= 2,
    );
    // B heard nothing of it: once its own change arrives, nothing of A's came before.
    await sentinel(streamB, b1 as string);
    expect(streamB.updated()).toEqual([b1]);
    expect(streamB.listChanges()).toBe(1);
    expect(streamA.updated()).not.toContain(b1);
  });

  it('tells the streams that asked for prompt list changes of a committed prompt change, only when their role can read the prompt', async () => {
    const promptChanges = (stream: ListenStream) =>
      stream.messages.filter(
        (message) => message.method === 'notifications/prompts/list_changed',
      ).length;
    const addPrompt = (name: string, role: string) =>
      sql.query(
        `insert into pgmcp.prompts (name, messages, readers)
         values ($1, '[{"role": "user", "content": {"type": "text", "text": "hi"}}]', $2)`,
        [name, [role]],
      );
    const promptsA = await open(serverA, { promptsListChanged: true });
    const resourcesA = await open(serverA, { resourcesListChanged: true });
    const promptsB = await open(serverB, { promptsListChanged: true });
    await addPrompt('live-a-1', ROLE_A);
    await promptsA.waitFor(() => promptChanges(promptsA) === 1);
    await addPrompt('live-b-1', ROLE_B);
    await promptsB.waitFor(() => promptChanges(promptsB) === 1);
    // A's next change arrives after B's would have, had A been told of it.
    await sql.query(
      `update pgmcp.prompts set title = 'A' where name = 'live-a-1'`,
    );
    await promptsA.waitFor(() => promptChanges(promptsA) === 2);
    expect(promptChanges(promptsB)).toBe(1);
    // A prompt change is no resource list change.
    expect(resourcesA.listChanges()).toBe(0);
    expect(promptChanges(resourcesA)).toBe(0);
    // A delete is heard by who could read the row.
    await sql.query(`delete from pgmcp.prompts where name = 'live-b-1'`);
    await promptsB.waitFor(() => promptChanges(promptsB) === 2);
  });

  it('keeps prompts/list pages per role until the feed reports a prompt change, never handing one role the page of another', async () => {
    // Pages kept far longer than the test: only the feed's report can make a new prompt show.
    const memoA = await startTestServer({
      databaseUrl,
      principal: { role: ROLE_A, claims: {} },
      live: {},
      roleCacheMaxAgeMs: 600_000,
    });
    const memoB = await startTestServer({
      databaseUrl,
      principal: { role: ROLE_B, claims: {} },
      live: {},
      roleCacheMaxAgeMs: 600_000,
    });
    try {
      const names = async (server: TestServer) =>
        (
          (await call(server.url, 'prompts/list')).result?.['prompts'] as {
            name: string;
          }[]
        ).map((prompt) => prompt.name);
      const read = (await call(memoA.url, 'prompts/list')).result;
      const firstA = await names(memoA);
      expect(await pageCacheDecision(memoA)).toBe('hit');
      // A kept answer goes out as the dispatcher serialized it once: the whole result, as read.
      expect((await call(memoA.url, 'prompts/list')).result).toEqual(read);
      expect(read).toMatchObject({
        resultType: 'complete',
        cacheScope: 'private',
      });
      expect(read?.['_meta']).toHaveProperty([
        'io.modelcontextprotocol/serverInfo',
        'name',
      ]);
      // B asks for the same position and gets its own page, not A's kept one.
      await sql.query(
        `insert into pgmcp.prompts (name, messages, readers)
         values ('memo-b', '[{"role": "user", "content": {"type": "text", "text": "hi"}}]', $1)`,
        [[ROLE_B]],
      );
      await until(
        async () => (await names(memoB)).includes('memo-b'),
        10_000,
        "B's new prompt",
      );
      expect(await names(memoA)).toEqual(firstA);
      // A's committed prompt shows in A's next list once the feed has seen it.
      await sql.query(
        `insert into pgmcp.prompts (name, messages, readers)
         values ('memo-a', '[{"role": "user", "content": {"type": "text", "text": "hi"}}]', $1)`,
        [[ROLE_A]],
      );
      await until(
        async () => (await names(memoA)).includes('memo-a'),
        10_000,
        "A's new prompt",
      );
      expect(await names(memoA)).not.toContain('memo-b');
    } finally {
      await memoA.close();
      await memoB.close();
    }
  });

  it('shows a schema in the navigator once the feed reports the DDL that made it, though navigators are kept per role', async () => {
    const navigator = async () => {
      const uri = `pg://${new URL(databaseUrl).pathname.slice(1)}`;
      const { result, error } = await call(
        serverA.url,
        'resources/read',
        { uri },
        { 'Mcp-Name': uri },
      );
      expect(error).toBeUndefined();
      return (result?.['contents'] as { text: string }[])[0]?.text ?? '';
    };
    expect(await navigator()).not.toContain('nav_memo');
    expect(await navigator()).not.toContain('nav_memo');
    await sql.query(`create schema nav_memo;
      create table nav_memo.kept (id int primary key);
      grant usage on schema nav_memo to ${ROLE_A};
      grant select on nav_memo.kept to ${ROLE_A}`);
    // Kept navigators last 30 s; the feed's report must drop them well before.
    await until(
      async () => (await navigator()).includes('nav_memo'),
      10_000,
      'the new schema in the navigator',
    );
  });

  it('stops telling a role about a resource it can no longer read, while its list shows the loss', async () => {
    const [shared, other] = await insert('revoke', 2, [ROLE_A]);
    const stream = await open(serverA, {
      resourcesListChanged: true,
      resourceSubscriptions: [shared, other],
    });
    await sql.query(`update pgmcp.resources set readers = $2 where uri = $1`, [
      shared,
      [ROLE_B],
    ]);
    await stream.waitFor(() => stream.listChanges() === 1);
    await sql.query(
      `update pgmcp.resources set text = 'secret' where uri = $1`,
      [shared],
    );
    await sentinel(stream, other as string);
    expect(stream.updated()).not.toContain(shared);
    expect(stream.listChanges()).toBe(2); // the loss, then the sentinel
  });

  it('delivers each of 1,000 updates made in one transaction, once', async () => {
    const uris = await insert('bulk', 1000, [ROLE_A]);
    const stream = await open(serverA, {
      resourcesListChanged: true,
      resourceSubscriptions: uris,
    });
    await sql.query(
      `update pgmcp.resources set text = 'bulk' where uri like 'notes:///bulk/%'`,
    );
    await stream.waitFor(() => stream.updated().length >= 1000);
    expect([...stream.updated()].sort()).toEqual(uris);
    expect(stream.listChanges()).toBe(1);
  });

  it('loses nothing when the listener connection is killed during a write burst: each change once', async () => {
    const uris = await insert('burst', 200, [ROLE_A]);
    const [marker] = await insert('burst-marker', 1, [ROLE_A]);
    const stream = await open(serverA, {
      resourceSubscriptions: [...uris, marker],
    });
    const { rows: start } = await sql.query<{ seq: string }>(
      'select coalesce(max(seq), 0)::text as seq from pgmcp.changes',
    );
    const killer = new pg.Client({ connectionString: databaseUrl });
    await killer.connect();
    const kill = () =>
      killer.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
          where application_name like 'pgmcp-listener/%' and datname = current_database()`,
      );
    for (const [index, uri] of uris.entries()) {
      await sql.query(
        `update pgmcp.resources set text = 'burst' where uri = $1`,
        [uri],
      );
      if (index % 50 === 25) await kill();
    }
    await killer.end();
    const { rows: logged } = await sql.query<{ count: string }>(
      `select count(*)::text as count from pgmcp.changes
        where seq > $1 and uri like 'notes:///burst/%' and kind = 'updated'`,
      [start[0]?.seq],
    );
    expect(Number(logged[0]?.count)).toBe(200);
    await stream.waitFor(() => stream.updated().length >= 200, 20_000);
    // A change committed after the burst arrives after every replay of it: a late duplicate would
    // come before the marker.
    await sentinel(stream, marker as string);
    expect(stream.updated().at(-1)).toBe(marker);
    expect(stream.updated().slice(0, -1).sort()).toEqual(uris);
  });

  it('delivers through two server processes on one database (replicas), each with its own listener', async () => {
    const [uri] = await insert('replica', 1, [ROLE_A]);
    // The second replica is a real process: `pgmcp serve --stdio` as the same role.
    const child = startStdioChild({
      DATABASE_URL: databaseUrl,
      PGMCP_ROLE: ROLE_A,
    });
    try {
      const one = await open(serverA, { resourceSubscriptions: [uri] });
      child.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 'replica',
          method: 'subscriptions/listen',
          params: {
            _meta: META,
            notifications: { resourceSubscriptions: [uri] },
          },
        }),
      );
      await child.waitFor(
        (line) => line['method'] === 'notifications/subscriptions/acknowledged',
      );
      await sql.query(`update pgmcp.resources set text = 'r' where uri = $1`, [
        uri,
      ]);
      await one.waitFor(() => one.updated().length === 1);
      await child.waitFor(
        (line) =>
          line['method'] === 'notifications/resources/updated' &&
          (line['params'] as Record<string, unknown>)['uri'] === uri,
      );
    } finally {
      child.process.kill('SIGTERM');
    }
  });

  it('forgets a stream the client closes', async () => {
    const before = serverA.fanout.size;
    const stream = await open(serverA, { resourcesListChanged: true });
    expect(serverA.fanout.size).toBe(before + 1);
    stream.close();
    await vi.waitFor(() => expect(serverA.fanout.size).toBe(before), {
      timeout: 5000,
      interval: 10,
    });
  });

  it('ends every stream with SubscriptionsListenResult on shutdown', async () => {
    const server = await startTestServer({
      databaseUrl,
      principal: { role: ROLE_A, claims: {} },
      live: {},
    });
    const stream = await listen(
      server.url,
      { resourcesListChanged: true },
      {
        id: 'bye',
      },
    );
    await stream.waitFor((messages) => messages.length === 1);
    await server.close();
    await stream.ended;
    expect(stream.messages.at(-1)).toEqual({
      jsonrpc: '2.0',
      id: 'bye',
      result: {
        resultType: 'complete',
        _meta: {
          'io.modelcontextprotocol/subscriptionId': 'bye',
          'io.modelcontextprotocol/serverInfo': match.objectContaining({
            name: 'pgmcp',
          }),
        },
      },
    });
  });

  it('refuses streams past the per-role and per-process caps, with a clear error', async () => {
    const server = await startTestServer({
      databaseUrl,
      principal: { role: ROLE_A, claims: {} },
      liveSettings: { maxStreams: 3, maxStreamsPerRole: 2 },
    });
    const opened: ListenStream[] = [];
    try {
      for (let i = 0; i < 2; i += 1) {
        const stream = await listen(server.url, { resourcesListChanged: true });
        opened.push(stream);
        expect(stream.status).toBe(200);
      }
      const refused = await listen(server.url, { resourcesListChanged: true });
      expect(refused.status).toBe(429);
      expect(refused.messages[0]?.error).toMatchObject({
        code: -32603,
        message: match.stringMatching(
          /too many open subscriptions for this role/i,
        ),
        data: { code: 'TOO_MANY_STREAMS' },
      });
    } finally {
      for (const stream of opened) stream.close();
      await server.close();
    }
  });

  it.each([
    ['no filter', {}, /notifications/],
    ['a filter of the wrong type', { notifications: [] }, /notifications/],
    [
      'URIs that are not strings',
      { notifications: { resourceSubscriptions: [1] } },
      /resourceSubscriptions/,
    ],
    [
      'an invalid URI',
      { notifications: { resourceSubscriptions: ['file:///a/../b'] } },
      /Invalid resource URI/,
    ],
  ])('answers a listen with %s with -32602', async (_name, params, message) => {
    const { error } = await call(serverA.url, 'subscriptions/listen', params);
    expect(error).toMatchObject({
      code: -32602,
      message: match.stringMatching(message),
    });
  });

  it('works with @modelcontextprotocol/client pinned to 2026-07-28: listen(), updates, close()', async () => {
    const [uri] = await insert('official', 1, [ROLE_A]);
    const client = new Client(
      { name: 'pgmcp-test', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(serverA.url)),
    );
    const updates: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', (note) => {
      updates.push(note.params.uri);
    });
    try {
      const subscription = await client.listen({
        resourceSubscriptions: [uri as string],
      });
      expect(subscription.honoredFilter).toEqual({
        resourceSubscriptions: [uri],
      });
      await sql.query(`update pgmcp.resources set text = 'o' where uri = $1`, [
        uri,
      ]);
      await vi.waitFor(() => expect(updates).not.toHaveLength(0), {
        timeout: 10_000,
        interval: 10,
      });
      // The insert just before listen() may be heard too: the feed can read it after the stream
      // opened (delivery is at least once). Nothing but the subscribed row is.
      expect([...new Set(updates)]).toEqual([uri]);
      await subscription.close();
      expect(await subscription.closed).toBe('local');
    } finally {
      await client.close();
    }
  });
});
