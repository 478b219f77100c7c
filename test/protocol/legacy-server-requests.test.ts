// Requests pgmcp sends a 2025-11-25 client in the middle of one of its requests (issue 17 point 5,
// legacy digest §2, §5.3), over raw Streamable HTTP: the elicitation/create goes out on the
// request's own SSE answer, the client's JSON-RPC response POSTed in the session is 202 and settles
// it by id; an answer POSTed in another session settles nothing there; no answer in time ends the
// request with an error instead of a hang; a capability initialize did not declare is refused. Own database: it reads the audit trail.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { CONFORMANCE_FIXTURES } from '../conformance/fixtures/index.js';
import {
  LEGACY_VERSION,
  legacyPost,
  sessionHeaders,
} from '../setup/legacy-client.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';
import { startStdioChild } from '../setup/stdio-child.js';

const SALARIES = 'file:///v1-raw/salaries.md';
const PAYROLL = 'file:///v1-raw/payroll.md';
const BONUSES = 'file:///v1-raw/bonuses.md';

let databaseUrl: string;
let sql: pg.Client;
let server: TestServer;
let quick: TestServer;

beforeAll(async () => {
  databaseUrl = await recreateDatabase(
    testDatabaseUrl(),
    'pgmcp_legacy_server_requests',
  );
  await migrateDatabase(databaseUrl);
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  await sql.query(
    `insert into pgmcp.resources (uri, name, text, readers, sensitive)
     values ($1, 'salaries.md', 'Ada: 100', '{}', true),
            ($2, 'payroll.md', 'Bob: 90', '{}', true),
            ($3, 'bonuses.md', 'Cy: 5', '{}', true)`,
    [SALARIES, PAYROLL, BONUSES],
  );
  server = await startTestServer({
    databaseUrl,
    extension: CONFORMANCE_FIXTURES,
  });
  quick = await startTestServer({ databaseUrl, inputTimeoutMs: 300 });
});

afterAll(async () => {
  await server?.close();
  await quick?.close();
  await sql?.end();
});

/** initialize declaring form elicitation, then initialized; the session id. */
async function openSession(url: string): Promise<string> {
  const answer = await legacyPost(url, {
    method: 'initialize',
    params: {
      protocolVersion: LEGACY_VERSION,
      capabilities: { elicitation: {} },
      clientInfo: { name: 'raw-elicitation', version: '1' },
    },
  });
  const id = answer.headers.get('mcp-session-id') ?? '';
  await legacyPost(
    url,
    { method: 'notifications/initialized', id: null },
    sessionHeaders(id),
  );
  return id;
}

/** A request whose SSE answer is read event by event. */
async function openRequest(
  url: string,
  session: string,
  uri: string,
): Promise<{ next(): Promise<Record<string, unknown>> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...sessionHeaders(session),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'read-1',
      method: 'resources/read',
      params: { uri },
    }),
  });
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  return {
    async next() {
      for (;;) {
        const boundary = buffer.indexOf('\n\n');
        if (boundary !== -1) {
          const data = buffer
            .slice(0, boundary)
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trimStart())
            .join('\n');
          buffer = buffer.slice(boundary + 2);
          if (data !== '') return JSON.parse(data) as Record<string, unknown>;
          continue;
        }
        const { done, value } = await reader.read();
        if (done) throw new Error(`stream ended; left: ${buffer}`);
        buffer += decoder.decode(value, { stream: true });
      }
    },
  };
}

/** POST a JSON-RPC response in `session`; the HTTP status. */
async function answer(
  url: string,
  session: string,
  message: Record<string, unknown>,
): Promise<number> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...sessionHeaders(session),
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });
  await response.body?.cancel();
  return response.status;
}

async function audit(target: string) {
  const { rows } = await sql.query<{ action: string; reason: string | null }>(
    'select action, reason from pgmcp.audit where target = $1 order by id',
    [target],
  );
  return rows;
}

describe('server-to-client requests in a 2025-11-25 session over HTTP', () => {
  it('sends elicitation/create on the request stream and settles it only with an answer from its own session', async () => {
    const mine = await openSession(server.url);
    const other = await openSession(server.url);
    const request = await openRequest(server.url, mine, SALARIES);
    const asked = await request.next();
    expect(asked).toMatchObject({
      jsonrpc: '2.0',
      method: 'elicitation/create',
      params: { mode: 'form', requestedSchema: { required: ['reason'] } },
    });
    const accept = (reason: string) => ({
      id: asked['id'],
      result: { action: 'accept', content: { reason } },
    });
    // Another session's answer with the same id is accepted there and settles nothing here.
    expect(await answer(server.url, other, accept('not mine'))).toBe(202);
    expect(await answer(server.url, mine, accept('pay review'))).toBe(202);
    const response = await request.next();
    expect(response).toMatchObject({
      id: 'read-1',
      result: { contents: [{ uri: SALARIES, text: 'Ada: 100' }] },
    });
    expect(await audit(SALARIES)).toEqual([
      { action: 'consent-asked', reason: null },
      { action: 'consent-given', reason: 'pay review' },
    ]);
  });

  it('refuses a tool that would sample (-32600 MISSING_CLIENT_CAPABILITY) when initialize declared no sampling, and sends nothing', async () => {
    const session = await openSession(server.url);
    const answer = await legacyPost(
      server.url,
      {
        method: 'tools/call',
        params: { name: 'test_sampling', arguments: { prompt: 'hello' } },
      },
      sessionHeaders(session),
    );
    expect(answer.notifications).toEqual([]);
    expect(answer.error).toMatchObject({
      code: -32600,
      data: {
        code: 'MISSING_CLIENT_CAPABILITY',
        requiredCapabilities: { sampling: {} },
      },
    });
  });

  it('ends the request with an error when the client does not answer in time', async () => {
    const session = await openSession(quick.url);
    const request = await openRequest(quick.url, session, PAYROLL);
    expect(await request.next()).toMatchObject({
      method: 'elicitation/create',
    });
    const response = await request.next();
    expect(response).toMatchObject({
      id: 'read-1',
      error: { code: -32603, data: { code: 'TIMEOUT' } },
    });
    expect(await audit(PAYROLL)).toEqual([
      { action: 'consent-asked', reason: null },
    ]);
  });
});

describe('server-to-client requests in a 2025-11-25 session over stdio', () => {
  it('stops waiting for an answer when stdin ends, so the process exits', async () => {
    const child = startStdioChild({ DATABASE_URL: databaseUrl });
    try {
      const line = (message: Record<string, unknown>) =>
        child.send(JSON.stringify({ jsonrpc: '2.0', ...message }));
      line({
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: LEGACY_VERSION,
          capabilities: { elicitation: {} },
          clientInfo: { name: 'stdio-elicitation', version: '1' },
        },
      });
      await child.waitFor((message) => message['id'] === 1);
      line({ method: 'notifications/initialized' });
      line({ id: 2, method: 'resources/read', params: { uri: BONUSES } });
      await child.waitFor(
        (message) => message['method'] === 'elicitation/create',
      );
      child.process.stdin.end();
      expect(await child.exit).toBe(0);
    } finally {
      child.process.kill('SIGKILL');
    }
  });
});
