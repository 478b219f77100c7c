// MCP 2025-11-25 beside 2026-07-28 on one HTTP endpoint (issue 14 points 1–4 and 8): initialize
// and sessions stored in PostgreSQL, bound to the caller; the shared handlers shaped to the legacy
// wire; resources/subscribe fed by the same change log and fan-out as listen streams.
// This file has its own database, so its committed changes reach no other file's streams.
import type http from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/index.js';
import {
  call,
  startTestServer,
  until,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import {
  LEGACY_VERSION,
  legacyPost,
  openSession,
  openSessionStream,
  sessionHeaders,
  type SessionStream,
} from '../setup/legacy-client.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { assertValidResponse } from '../setup/spec-schema.js';
import { recreateDatabase } from '../setup/recreate-database.js';

const ROLE_A = 'pgmcp_legacy_a';
const ROLE_B = 'pgmcp_legacy_b';
const ROLE_CAPPED = 'pgmcp_legacy_capped';
let databaseUrl: string;
let sql: pg.Client;
let server: TestServer;
let replica: TestServer;
let capped: TestServer;
const streams: SessionStream[] = [];

/** Each request runs as the role its X-Test-Role header names (a stand-in for a token's claim). */
async function byHeader(request: {
  headers: { authorization?: string | undefined };
}): Promise<Principal> {
  const headers = request.headers as http.IncomingHttpHeaders;
  const role = headers['x-test-role'];
  const sub = headers['x-test-sub'];
  return Promise.resolve({
    role: typeof role === 'string' ? role : ROLE_A,
    claims: { sub: typeof sub === 'string' ? sub : 'alice' },
  });
}
const AS_A = { 'X-Test-Role': ROLE_A };
const AS_B = { 'X-Test-Role': ROLE_B };

async function insert(uri: string, readers: string[]): Promise<void> {
  await sql.query(
    `insert into pgmcp.resources (uri, name, text, readers) values ($1, 'n', 'v1', $2)`,
    [uri, readers],
  );
}

async function stream(id: string, headers = AS_A): Promise<SessionStream> {
  await server.feed?.poll();
  const opened = await openSessionStream(server.url, id, headers);
  streams.push(opened);
  expect(opened.status).toBe(200);
  return opened;
}

beforeAll(async () => {
  databaseUrl = await recreateDatabase(testDatabaseUrl(), 'pgmcp_legacy_test');
  await migrateDatabase(databaseUrl, async (admin) => {
    for (const role of [ROLE_A, ROLE_B, ROLE_CAPPED])
      await admin.query(
        `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`,
      );
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  const options = { databaseUrl, authenticate: byHeader, live: {} };
  server = await startTestServer(options);
  replica = await startTestServer(options);
  capped = await startTestServer({
    ...options,
    live: { maxLegacySessionsPerRole: 2 },
  });
});

afterAll(async () => {
  for (const opened of streams) opened.close();
  await server?.close();
  await replica?.close();
  await capped?.close();
  await sql?.end();
});

describe('legacy initialize', () => {
  it('answers initialize with the 2025-11-25 result and an Mcp-Session-Id', async () => {
    const answer = await legacyPost(
      server.url,
      {
        method: 'initialize',
        params: {
          protocolVersion: LEGACY_VERSION,
          capabilities: {},
          clientInfo: { name: 'c', version: '1' },
        },
      },
      AS_A,
    );
    expect(answer.status).toBe(200);
    expect(answer.headers.get('mcp-session-id')).toMatch(/^[\x21-\x7e]{43,}$/);
    expect(answer.result).toMatchObject({
      protocolVersion: LEGACY_VERSION,
      capabilities: {
        resources: { subscribe: true, listChanged: true },
        completions: {},
        logging: {},
      },
      serverInfo: { name: 'pgmcp' },
    });
    expect(typeof answer.result?.['instructions']).toBe('string');
    expect(answer.result).not.toHaveProperty('capabilities.extensions');
  });

  it.each([
    ['2025-06-18', '2025-06-18'],
    ['2025-03-26', '2025-03-26'],
    ['2024-01-01', LEGACY_VERSION],
    ['2026-07-28', LEGACY_VERSION],
  ])('negotiates %s down to %s', async (requested, answered) => {
    const answer = await legacyPost(
      server.url,
      {
        method: 'initialize',
        params: {
          protocolVersion: requested,
          capabilities: {},
          clientInfo: { name: 'c', version: '1' },
        },
      },
      AS_B,
    );
    expect(answer.result?.['protocolVersion']).toBe(answered);
    await fetch(server.url, {
      method: 'DELETE',
      headers: sessionHeaders(answer.headers.get('mcp-session-id') ?? '', AS_B),
    });
  });

  it('refuses a malformed initialize with -32602 naming the versions it speaks, and opens no session', async () => {
    const answer = await legacyPost(
      server.url,
      { method: 'initialize', params: { protocolVersion: LEGACY_VERSION } },
      AS_A,
    );
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    expect(answer.error).toMatchObject({
      code: -32602,
      data: { supported: ['2025-11-25', '2025-06-18', '2025-03-26'] },
    });
  });

  it('still serves 2026-07-28 requests on the same endpoint, unchanged', async () => {
    const { status, result } = await call(server.url, 'resources/list');
    expect(status).toBe(200);
    expect(result?.['resultType']).toBe('complete');
  });
});

describe('legacy requests through the shared handlers', () => {
  it('lists, reads, lists templates, completes and pings without any 2026-only field', async () => {
    await insert('notes:///legacy-read/one', [ROLE_A]);
    await sql.query(
      `insert into pgmcp.resource_templates (uri_template, name, readers)
       values ('notes:///{tag}/{slug}', 'note', $1)`,
      [[ROLE_A]],
    );
    const id = await openSession(server.url, AS_A);
    const headers = sessionHeaders(id, AS_A);
    const list = await legacyPost(
      server.url,
      { method: 'resources/list' },
      headers,
    );
    expect(list.result?.['resources']).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ uri: 'notes:///legacy-read/one' }),
      ]),
    );
    const read = await legacyPost(
      server.url,
      { method: 'resources/read', params: { uri: 'notes:///legacy-read/one' } },
      headers,
    );
    expect(read.result).toEqual({
      contents: [
        expect.objectContaining({
          uri: 'notes:///legacy-read/one',
          text: 'v1',
        }),
      ],
    });
    const templates = await legacyPost(
      server.url,
      { method: 'resources/templates/list' },
      headers,
    );
    expect(templates.result?.['resourceTemplates']).toEqual(expect.any(Array));
    const complete = await legacyPost(
      server.url,
      {
        method: 'completion/complete',
        params: {
          ref: { type: 'ref/resource', uri: 'notes:///{tag}/{slug}' },
          argument: { name: 'tag', value: 'legacy-r' },
        },
      },
      headers,
    );
    expect(complete.error).toBeUndefined();
    expect(complete.result).toMatchObject({
      completion: { values: ['legacy-read'] },
    });
    const ping = await legacyPost(server.url, { method: 'ping' }, headers);
    expect(ping.result).toEqual({});
  });

  it('answers a missing resource with -32002 and HTTP 200, an unknown method with -32601', async () => {
    const id = await openSession(server.url, AS_A);
    const headers = sessionHeaders(id, AS_A);
    const missing = await legacyPost(
      server.url,
      { method: 'resources/read', params: { uri: 'notes:///legacy-none/x' } },
      headers,
    );
    expect(missing.status).toBe(200);
    expect(missing.error).toMatchObject({
      code: -32002,
      data: { uri: 'notes:///legacy-none/x' },
    });
    for (const method of [
      'subscriptions/listen',
      'server/discover',
      'sampling/createMessage',
    ]) {
      const unknown = await legacyPost(server.url, { method }, headers);
      expect(unknown.status, method).toBe(200);
      expect(unknown.error?.code, method).toBe(-32601);
    }
  });
});

describe('legacy sessions', () => {
  it('binds a session to its principal: another role or subject gets 404, and the owner keeps it', async () => {
    const id = await openSession(server.url, AS_A);
    const other = await legacyPost(
      server.url,
      { method: 'ping' },
      sessionHeaders(id, AS_B),
    );
    expect(other.status).toBe(404);
    expect(other.error).toMatchObject({
      code: -32600,
      data: { code: 'SESSION_NOT_FOUND' },
    });
    const otherSubject = await legacyPost(
      server.url,
      { method: 'ping' },
      sessionHeaders(id, { ...AS_A, 'X-Test-Sub': 'mallory' }),
    );
    expect(otherSubject.status).toBe(404);
    const deleted = await fetch(server.url, {
      method: 'DELETE',
      headers: sessionHeaders(id, AS_B),
    });
    expect(deleted.status).toBe(404);
    const owner = await legacyPost(
      server.url,
      { method: 'ping' },
      sessionHeaders(id, AS_A),
    );
    expect(owner.result).toEqual({});
  });

  it('ends a session on DELETE: then 404 for POST, GET and DELETE', async () => {
    const id = await openSession(server.url, AS_A);
    const headers = sessionHeaders(id, AS_A);
    const deleted = await fetch(server.url, { method: 'DELETE', headers });
    expect(deleted.status).toBe(204);
    expect(
      (await legacyPost(server.url, { method: 'ping' }, headers)).status,
    ).toBe(404);
    expect((await fetch(server.url, { method: 'GET', headers })).status).toBe(
      404,
    );
    expect(
      (await fetch(server.url, { method: 'DELETE', headers })).status,
    ).toBe(404);
  });

  it('serves a session created through one server from another on the same database', async () => {
    await insert('notes:///legacy-replica/one', [ROLE_A]);
    const id = await openSession(server.url, AS_A);
    const read = await legacyPost(
      replica.url,
      {
        method: 'resources/read',
        params: { uri: 'notes:///legacy-replica/one' },
      },
      sessionHeaders(id, AS_A),
    );
    expect(read.result).toEqual({
      contents: [
        expect.objectContaining({ uri: 'notes:///legacy-replica/one' }),
      ],
    });
    expect(
      (
        await legacyPost(
          replica.url,
          { method: 'ping' },
          sessionHeaders(id, AS_B),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await fetch(replica.url, {
          method: 'DELETE',
          headers: sessionHeaders(id, AS_A),
        })
      ).status,
    ).toBe(204);
    expect(
      (
        await legacyPost(
          server.url,
          { method: 'ping' },
          sessionHeaders(id, AS_A),
        )
      ).status,
    ).toBe(404);
  });

  it('writes its row only when the idle expiry is due: a request reads it, and renews it once less than the idle time remains', async () => {
    const id = await openSession(server.url, AS_A);
    const row = async () =>
      (
        await sql.query<{ version: string; left: number }>(
          `select xmin::text as version,
                  extract(epoch from expires_at - now())::float8 as left
             from pgmcp.legacy_sessions where id_hash = sha256(convert_to($1, 'UTF8'))`,
          [id],
        )
      ).rows[0];
    const opened = await row();
    // The test server's idle time is 1800 s: a new session has more than that ahead of it.
    expect(opened?.left).toBeGreaterThan(1800);
    await expectAlive(id);
    await expectAlive(id);
    expect((await row())?.version).toBe(opened?.version);
    await sql.query(
      `update pgmcp.legacy_sessions set expires_at = now() + interval '60 seconds'
        where id_hash = sha256(convert_to($1, 'UTF8'))`,
      [id],
    );
    await expectAlive(id);
    expect((await row())?.left).toBeGreaterThan(1800);
  });

  it("checks a held session in the read's own transaction, and still refuses it once ended through another replica or expired", async () => {
    await insert('notes:///legacy-checked/one', [ROLE_A]);
    const read = (id: string) =>
      legacyPost(
        server.url,
        {
          method: 'resources/read',
          params: { uri: 'notes:///legacy-checked/one' },
        },
        sessionHeaders(id, AS_A),
      );
    const ended = await openSession(server.url, AS_A);
    const expired = await openSession(server.url, AS_A);
    // Statements sent through the pool on their own (a request transaction takes a client).
    const alone: string[] = [];
    const pool = server.db.pool;
    const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
    (pool as { query: unknown }).query = (...args: unknown[]) => {
      const config = args[0] as { name?: string } | string;
      alone.push(typeof config === 'string' ? config : (config.name ?? ''));
      return query(...args);
    };
    try {
      expect((await read(ended)).result).toMatchObject({
        contents: [{ uri: 'notes:///legacy-checked/one', text: 'v1' }],
      });
      // Through the driver internals the check rides in the read's transaction; on pg's public API
      // (PGMCP_DRIVER_PATCHES=off, src/db/driver/) it runs alone, before the answer, as the login.
      if (server.db.driverInternals)
        expect(alone).not.toContain('pgmcp_legacy_session_check');
      else expect(alone).toContain('pgmcp_legacy_session_check');
    } finally {
      delete (pool as { query?: unknown }).query;
    }
    const deleted = await fetch(replica.url, {
      method: 'DELETE',
      headers: sessionHeaders(ended, AS_A),
    });
    expect(deleted.status).toBe(204);
    expect((await read(ended)).status).toBe(404);
    expect((await read(expired)).status).toBe(200);
    await sql.query(
      `update pgmcp.legacy_sessions set expires_at = now() - interval '1 second'
        where id_hash = sha256(convert_to($1, 'UTF8'))`,
      [expired],
    );
    expect((await read(expired)).status).toBe(404);
  });

  it('stores only a digest of the session id', async () => {
    const id = await openSession(server.url, AS_A);
    const { rows } = await sql.query<{ found: boolean }>(
      `select exists (select from pgmcp.legacy_sessions
                       where id_hash = sha256(convert_to($1, 'UTF8'))) as found,
              exists (select from pgmcp.legacy_sessions s
                       where position(convert_to($1, 'UTF8') in s.id_hash) > 0
                          or s.client_info::text like '%' || $1 || '%') as leaked`,
      [id],
    );
    expect(rows[0]).toMatchObject({ found: true, leaked: false });
  });

  it('refuses a session past the per-role cap, counted across replicas, with TOO_MANY_SESSIONS (429)', async () => {
    const asCapped = { 'X-Test-Role': ROLE_CAPPED };
    await openSession(server.url, asCapped);
    await openSession(capped.url, asCapped);
    const third = await legacyPost(
      capped.url,
      {
        method: 'initialize',
        params: {
          protocolVersion: LEGACY_VERSION,
          capabilities: {},
          clientInfo: { name: 'c', version: '1' },
        },
      },
      asCapped,
    );
    expect(third.status).toBe(429);
    expect(third.error).toMatchObject({ data: { code: 'TOO_MANY_SESSIONS' } });
    expect(third.headers.get('mcp-session-id')).toBeNull();
  });
});

const INITIALIZE = {
  method: 'initialize',
  params: {
    protocolVersion: LEGACY_VERSION,
    capabilities: {},
    clientInfo: { name: 'c', version: '1' },
  },
};

/** The session still answers its owner: a refusal never touches it. */
async function expectAlive(id: string): Promise<void> {
  const answer = await legacyPost(
    server.url,
    { method: 'ping' },
    sessionHeaders(id, AS_A),
  );
  expect(answer.result).toEqual({});
}

describe('legacy bad input', () => {
  it('answers a request before initialize (no session, no 2026-07-28 _meta) with 400 and the modern -32602 that names initialize', async () => {
    // Without a session the request may be a broken 2026-07-28 one: the modern answer (digest §10.2).
    const answer = await legacyPost(
      server.url,
      { method: 'resources/list' },
      AS_A,
    );
    expect(answer.status).toBe(400);
    expect(answer.error).toMatchObject({
      code: -32602,
      data: { code: 'MISSING_META' },
    });
    expect(answer.error?.message).toContain('initialize');
    // A notification before initialize is refused the same way, never accepted silently.
    const notification = await legacyPost(
      server.url,
      { method: 'notifications/initialized', id: null },
      AS_A,
    );
    expect(notification.status).toBe(400);
  });

  it('answers a second initialize in a session with -32600, and keeps the session', async () => {
    const id = await openSession(server.url, AS_A);
    const again = await legacyPost(
      server.url,
      INITIALIZE,
      sessionHeaders(id, AS_A),
    );
    expect(again.status).toBe(200);
    expect(again.error).toMatchObject({
      code: -32600,
      data: { code: 'ALREADY_INITIALIZED' },
    });
    expect(again.headers.get('mcp-session-id')).toBeNull();
    await expectAlive(id);
  });

  it('accepts notifications/initialized sent twice with 202, harmlessly', async () => {
    const id = await openSession(server.url, AS_A);
    const twice = await legacyPost(
      server.url,
      { method: 'notifications/initialized', id: null },
      sessionHeaders(id, AS_A),
    );
    expect(twice.status).toBe(202);
    expect(twice.body).toBeUndefined();
    await expectAlive(id);
  });

  it('answers an unknown session id with 404 and -32600 on POST, GET and DELETE', async () => {
    const headers = sessionHeaders('no-such-session', AS_A);
    const post = await legacyPost(server.url, { method: 'ping' }, headers);
    expect(post.status).toBe(404);
    expect(post.error).toMatchObject({
      code: -32600,
      data: { code: 'SESSION_NOT_FOUND' },
    });
    for (const method of ['GET', 'DELETE'])
      expect(
        (await fetch(server.url, { method, headers })).status,
        method,
      ).toBe(404);
  });

  it('answers an expired session with 404, on every replica, and never brings it back', async () => {
    const id = await openSession(server.url, AS_A);
    await sql.query(
      `update pgmcp.legacy_sessions set expires_at = now() - interval '1 second'
        where id_hash = sha256(convert_to($1, 'UTF8'))`,
      [id],
    );
    for (const url of [server.url, replica.url, server.url])
      expect(
        (await legacyPost(url, { method: 'ping' }, sessionHeaders(id, AS_A)))
          .status,
        url,
      ).toBe(404);
  });

  it("answers another principal's session id with 404 and leaves the owner's session alone", async () => {
    const id = await openSession(server.url, AS_A);
    for (const method of ['GET', 'DELETE'])
      expect(
        (await fetch(server.url, { method, headers: sessionHeaders(id, AS_B) }))
          .status,
        method,
      ).toBe(404);
    expect(
      (
        await legacyPost(
          server.url,
          { method: 'resources/list' },
          sessionHeaders(id, AS_B),
        )
      ).status,
    ).toBe(404);
    await expectAlive(id);
  });

  it('answers an MCP-Protocol-Version it does not speak with 400 listing the versions it does, on POST, GET and DELETE', async () => {
    const id = await openSession(server.url, AS_A);
    const headers = {
      ...sessionHeaders(id, AS_A),
      'MCP-Protocol-Version': '2024-01-01',
    };
    const post = await legacyPost(server.url, { method: 'ping' }, headers);
    expect(post.status).toBe(400);
    expect(post.error).toMatchObject({
      code: -32600,
      data: { code: 'UNSUPPORTED_LEGACY_VERSION' },
    });
    expect(post.error?.message).toContain('2025-11-25, 2025-06-18, 2025-03-26');
    for (const method of ['GET', 'DELETE'])
      expect(
        (await fetch(server.url, { method, headers })).status,
        method,
      ).toBe(400);
    await expectAlive(id);
  });

  it('takes a request without MCP-Protocol-Version at the version the session negotiated', async () => {
    const id = await openSession(server.url, AS_A, '2025-06-18');
    const { 'MCP-Protocol-Version': _, ...headers } = sessionHeaders(id, AS_A);
    const answer = await legacyPost(server.url, { method: 'ping' }, headers);
    expect(answer.result).toEqual({});
  });

  it('answers GET or DELETE without a session with 400', async () => {
    for (const method of ['GET', 'DELETE']) {
      const answer = await fetch(server.url, {
        method,
        headers: { Accept: 'text/event-stream', ...AS_A },
      });
      expect(answer.status, method).toBe(400);
      expect(await answer.json()).toMatchObject({
        error: { code: -32600, data: { code: 'SESSION_REQUIRED' } },
      });
    }
  });

  it('ends the older GET stream when a second one opens on the same session: the newest wins', async () => {
    const id = await openSession(server.url, AS_A);
    const first = await stream(id);
    const second = await stream(id);
    await until(() => first.ended(), 10_000, 'the older stream to end');
    expect(second.ended()).toBe(false);
  });
});

/** POST one raw body in session `id` with `accept`; the answer's status, type and text. */
async function rawPost(
  id: string | undefined,
  body: object,
  accept = 'application/json, text/event-stream',
): Promise<{ status: number; type: string; text: string }> {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: accept,
      ...(id === undefined ? AS_A : sessionHeaders(id, AS_A)),
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    type: response.headers.get('content-type') ?? '',
    text: await response.text(),
  };
}

/** The JSON-RPC messages of an SSE body, each validated as a 2025-11-25 response. */
function sseMessages(text: string, method: string): Record<string, unknown>[] {
  return text
    .split('\n\n')
    .map((event) =>
      event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n'),
    )
    .filter((data) => data !== '')
    .map((data) => {
      const message = JSON.parse(data) as Record<string, unknown>;
      assertValidResponse(method, message, 'legacy');
      return message;
    });
}

describe('legacy HTTP answers', () => {
  it('answers a POSTed notification with 202 and no body', async () => {
    const id = await openSession(server.url, AS_A);
    for (const method of [
      'notifications/roots/list_changed',
      'notifications/cancelled',
    ]) {
      const answer = await rawPost(id, {
        jsonrpc: '2.0',
        method,
        params: method === 'notifications/cancelled' ? { requestId: 999 } : {},
      });
      expect(answer, method).toEqual({ status: 202, type: '', text: '' });
    }
    await expectAlive(id);
  });

  it('answers a POSTed JSON-RPC response with 202 and no body, and refuses one outside a live session', async () => {
    const id = await openSession(server.url, AS_A);
    for (const body of [
      { jsonrpc: '2.0', id: 'server-1', result: {} },
      { jsonrpc: '2.0', id: 'server-2', error: { code: -1, message: 'no' } },
    ])
      expect(await rawPost(id, body)).toEqual({
        status: 202,
        type: '',
        text: '',
      });
    const response = { jsonrpc: '2.0', id: 'server-3', result: {} };
    expect((await rawPost(undefined, response)).status).toBe(400);
    expect((await rawPost('no-such-session', response)).status).toBe(404);
    await expectAlive(id);
  });

  it('answers a request as JSON when the client accepts JSON, and as SSE when it accepts only SSE', async () => {
    const id = await openSession(server.url, AS_A);
    const request = { jsonrpc: '2.0', id: 41, method: 'resources/list' };
    for (const accept of [
      'application/json',
      'application/json, text/event-stream',
    ]) {
      const answer = await rawPost(id, request, accept);
      expect(answer.status, accept).toBe(200);
      expect(answer.type, accept).toBe('application/json');
      const body = JSON.parse(answer.text) as Record<string, unknown>;
      assertValidResponse('resources/list', body, 'legacy');
      expect(body).toMatchObject({
        id: 41,
        result: { resources: expect.any(Array) as unknown },
      });
    }
    const sse = await rawPost(id, request, 'text/event-stream');
    expect(sse.status).toBe(200);
    expect(sse.type).toBe('text/event-stream');
    // One event, the response, with no event id (the server keeps no event store: digest §5.5).
    expect(sse.text).not.toMatch(/^id:/m);
    const messages = sseMessages(sse.text, 'resources/list');
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      id: 41,
      result: { resources: expect.any(Array) as unknown },
    });
  });

  it('answers a request carrying a progressToken as SSE when the client accepts it', async () => {
    const id = await openSession(server.url, AS_A);
    const sse = await rawPost(id, {
      jsonrpc: '2.0',
      id: 'p-1',
      method: 'resources/templates/list',
      params: { _meta: { progressToken: 'tok-1' } },
    });
    expect(sse.type).toBe('text/event-stream');
    const messages = sseMessages(sse.text, 'resources/templates/list');
    expect(messages.at(-1)).toMatchObject({
      id: 'p-1',
      result: { resourceTemplates: expect.any(Array) as unknown },
    });
    const errored = await rawPost(
      id,
      {
        jsonrpc: '2.0',
        id: 'p-2',
        method: 'resources/read',
        params: {
          uri: 'notes:///legacy-sse/none',
          _meta: { progressToken: 2 },
        },
      },
      'text/event-stream',
    );
    expect(errored.status).toBe(200);
    expect(sseMessages(errored.text, 'resources/read')).toEqual([
      expect.objectContaining({
        id: 'p-2',
        error: expect.objectContaining({ code: -32002 }) as unknown,
      }),
    ]);
  });
});

describe('legacy subscriptions', () => {
  it('delivers updated for a subscribed URI after a committed UPDATE, and list_changed, without subscriptionId', async () => {
    await insert('notes:///legacy-sub/one', [ROLE_A]);
    const id = await openSession(server.url, AS_A);
    const events = await stream(id);
    const subscribed = await legacyPost(
      server.url,
      {
        method: 'resources/subscribe',
        params: { uri: 'notes:///legacy-sub/one' },
      },
      sessionHeaders(id, AS_A),
    );
    expect(subscribed.result).toEqual({});
    await sql.query(
      `update pgmcp.resources set text = 'v2' where uri = 'notes:///legacy-sub/one'`,
    );
    await events.waitFor(() =>
      events.updated().includes('notes:///legacy-sub/one'),
    );
    await insert('notes:///legacy-sub/two', [ROLE_A]);
    await events.waitFor(() => events.listChanges() >= 1);
    expect(events.messages).toContainEqual({
      jsonrpc: '2.0',
      method: 'notifications/resources/updated',
      params: { uri: 'notes:///legacy-sub/one' },
    });
  });

  it('tells a session of a committed change to a prompt its role can read, as prompts/list_changed', async () => {
    const id = await openSession(server.url, AS_A);
    const events = await stream(id);
    const promptChanges = () =>
      events.messages.filter(
        (message) => message.method === 'notifications/prompts/list_changed',
      ).length;
    await sql.query(
      `insert into pgmcp.prompts (name, messages, readers)
       values ('legacy-prompt', '[{"role": "user", "content": {"type": "text", "text": "hi"}}]', $1)`,
      [[ROLE_A]],
    );
    await events.waitFor(() => promptChanges() === 1);
    expect(events.messages).toContainEqual({
      jsonrpc: '2.0',
      method: 'notifications/prompts/list_changed',
    });
  });

  it('refuses to subscribe to what the role cannot read or what does not exist with -32002', async () => {
    await insert('notes:///legacy-sub/theirs', [ROLE_B]);
    const id = await openSession(server.url, AS_A);
    for (const uri of [
      'notes:///legacy-sub/theirs',
      'notes:///legacy-sub/none',
    ]) {
      const answer = await legacyPost(
        server.url,
        { method: 'resources/subscribe', params: { uri } },
        sessionHeaders(id, AS_A),
      );
      expect(answer.error, uri).toMatchObject({ code: -32002, data: { uri } });
    }
    const unsubscribed = await legacyPost(
      server.url,
      {
        method: 'resources/unsubscribe',
        params: { uri: 'notes:///legacy-sub/never' },
      },
      sessionHeaders(id, AS_A),
    );
    expect(unsubscribed.result).toEqual({});
  });

  it('never tells a session of a change its role cannot read, and stops after unsubscribe', async () => {
    await insert('notes:///legacy-auth/mine', [ROLE_A]);
    await insert('notes:///legacy-auth/shared', [ROLE_A]);
    const id = await openSession(server.url, AS_A);
    const events = await stream(id);
    const headers = sessionHeaders(id, AS_A);
    for (const uri of [
      'notes:///legacy-auth/mine',
      'notes:///legacy-auth/shared',
    ])
      await legacyPost(
        server.url,
        { method: 'resources/subscribe', params: { uri } },
        headers,
      );
    // The shared one becomes B's only; its next change is not A's to hear of.
    await sql.query(
      `update pgmcp.resources set readers = $1 where uri = 'notes:///legacy-auth/shared'`,
      [[ROLE_B]],
    );
    await sql.query(
      `update pgmcp.resources set text = 'secret' where uri = 'notes:///legacy-auth/shared'`,
    );
    await legacyPost(
      server.url,
      {
        method: 'resources/unsubscribe',
        params: { uri: 'notes:///legacy-auth/mine' },
      },
      headers,
    );
    await legacyPost(
      server.url,
      {
        method: 'resources/subscribe',
        params: { uri: 'notes:///legacy-auth/mine' },
      },
      headers,
    );
    await sql.query(
      `update pgmcp.resources set text = 'v2' where uri = 'notes:///legacy-auth/mine'`,
    );
    await events.waitFor(() =>
      events.updated().includes('notes:///legacy-auth/mine'),
    );
    expect(
      events.updated().filter((uri) => uri === 'notes:///legacy-auth/shared'),
    ).toHaveLength(0);
  });

  it('sends notifications/message at or above the level set with logging/setLevel', async () => {
    await insert('notes:///legacy-log/one', [ROLE_A]);
    const id = await openSession(server.url, AS_A);
    const events = await stream(id);
    const headers = sessionHeaders(id, AS_A);
    const invalid = await legacyPost(
      server.url,
      { method: 'logging/setLevel', params: { level: 'loud' } },
      headers,
    );
    expect(invalid.error?.code).toBe(-32602);
    await legacyPost(
      server.url,
      {
        method: 'resources/subscribe',
        params: { uri: 'notes:///legacy-log/one' },
      },
      headers,
    );
    expect(
      events.messages.filter(
        (message) => message.method === 'notifications/message',
      ),
    ).toHaveLength(0);
    expect(
      (
        await legacyPost(
          server.url,
          { method: 'logging/setLevel', params: { level: 'debug' } },
          headers,
        )
      ).result,
    ).toEqual({});
    await legacyPost(
      server.url,
      {
        method: 'resources/subscribe',
        params: { uri: 'notes:///legacy-log/one' },
      },
      headers,
    );
    await events.waitFor(() =>
      events.messages.some(
        (message) => message.method === 'notifications/message',
      ),
    );
    expect(events.messages).toContainEqual({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: {
        level: 'debug',
        logger: 'pgmcp',
        data: { subscribed: 'notes:///legacy-log/one' },
      },
    });
  });
});

describe('legacy sessions served by a login that is not a superuser', () => {
  // A login that is no superuser and holds only what the migrations grant pgmcp_authenticator (it
  // is granted that role): the session check in each request reads pgmcp.legacy_sessions as it.
  const login = `pgmcp_legacy_login_${Date.now().toString(36)}`;
  let asLogin: TestServer;

  beforeAll(async () => {
    await sql.query(`create role ${login} login password 'legacy-login'`);
    await sql.query(`grant pgmcp_authenticator, ${ROLE_A} to ${login}`);
    const url = new URL(databaseUrl);
    url.username = login;
    url.password = 'legacy-login';
    asLogin = await startTestServer({
      databaseUrl: url.toString(),
      authenticate: byHeader,
      live: {},
    });
  });

  afterAll(async () => {
    await asLogin?.close();
    await sql.query(`drop role if exists ${login}`);
  });

  it('opens a session and answers its requests, and refuses them once the session is deleted', async () => {
    await insert('notes:///legacy-login/one', [ROLE_A]);
    const id = await openSession(asLogin.url, AS_A);
    const read = () =>
      legacyPost(
        asLogin.url,
        {
          method: 'resources/read',
          params: { uri: 'notes:///legacy-login/one' },
        },
        sessionHeaders(id, AS_A),
      );
    for (let request = 0; request < 2; request += 1) {
      const answer = await read();
      expect(answer.status).toBe(200);
      expect(answer.result).toMatchObject({
        contents: [{ uri: 'notes:///legacy-login/one', text: 'v1' }],
      });
    }
    await sql.query(
      `delete from pgmcp.legacy_sessions where id_hash = sha256(convert_to($1, 'UTF8'))`,
      [id],
    );
    expect((await read()).status).toBe(404);
  });

  it('holds the GET stream, subscribes and sets the log level as that login, through the functions migration 0034 grants it', async () => {
    await insert('notes:///legacy-login/two', [ROLE_A]);
    const id = await openSession(asLogin.url, AS_A);
    const events = await openSessionStream(asLogin.url, id, AS_A);
    streams.push(events);
    expect(events.status).toBe(200);
    const headers = sessionHeaders(id, AS_A);
    for (const [method, params] of [
      ['logging/setLevel', { level: 'debug' }],
      ['resources/subscribe', { uri: 'notes:///legacy-login/two' }],
    ] as const)
      expect(
        (await legacyPost(asLogin.url, { method, params }, headers)).result,
      ).toEqual({});
    await sql.query(
      `update pgmcp.resources set text = 'v2' where uri = 'notes:///legacy-login/two'`,
    );
    await events.waitFor(() =>
      events.updated().includes('notes:///legacy-login/two'),
    );
    expect(
      (
        await legacyPost(
          asLogin.url,
          {
            method: 'resources/unsubscribe',
            params: { uri: 'notes:///legacy-login/two' },
          },
          headers,
        )
      ).result,
    ).toEqual({});
  });
});
