// A request's own notices (spec §11, §12, issue 17): notifications/progress only when it carries a
// progressToken, notifications/message only at or above the level its _meta names, both on the
// request's own stream before its response (HTTP: the POST's SSE answer; stdio: lines), in both
// eras.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  mcpHeaders,
  META,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { LEGACY_VERSION, openSession } from '../setup/legacy-client.js';
import {
  assertValidNotification,
  assertValidResponse,
} from '../setup/spec-schema.js';
import { startStdioChild, type StdioChild } from '../setup/stdio-child.js';

type Message = Record<string, unknown>;

let server: TestServer;
const children: StdioChild[] = [];
const HANDBOOK = 'file:///handbook/';

beforeAll(async () => {
  // Two entries a directory read: the handbook's (four children) is cut, a limit hit.
  server = await startTestServer({ maxDirectoryEntries: 2 });
});

afterEach(() => {
  for (const child of children.splice(0)) child.process.kill('SIGKILL');
});

afterAll(async () => {
  await server?.close();
});

/** POST a resources/read; returns the content type and every message of the answer, in order. */
async function readOverHttp(
  uri: string,
  meta: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ type: string | null; messages: Message[] }> {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { ...mcpHeaders('resources/read', uri), ...headers },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'r',
      method: 'resources/read',
      params: { _meta: { ...META, ...meta }, uri },
    }),
  });
  const type = response.headers.get('content-type');
  const text = await response.text();
  const messages = type?.startsWith('text/event-stream')
    ? text
        .split('\n\n')
        .filter((event) => event.startsWith('data: '))
        .map((event) => JSON.parse(event.slice(6)) as Message)
    : [JSON.parse(text) as Message];
  return { type, messages };
}

/** The notifications before the response, each validated; the response last, validated. */
function split(
  messages: Message[],
  era: 'modern' | 'legacy' = 'modern',
): { notices: Message[]; response: Message } {
  const response = messages.at(-1) as Message;
  assertValidResponse('resources/read', response, era);
  const notices = messages.slice(0, -1);
  for (const notice of notices) assertValidNotification(notice, era);
  expect(notices.every((notice) => notice['id'] === undefined)).toBe(true);
  return { notices, response };
}

const params = (message: Message) => message['params'] as Message;
const ofMethod = (notices: Message[], method: string) =>
  notices.filter((notice) => notice['method'] === method).map(params);

describe('progress', () => {
  it('over HTTP goes on the request’s own SSE answer, increasing, with the total, before the response', async () => {
    const { type, messages } = await readOverHttp(HANDBOOK, {
      progressToken: 'p-1',
    });
    expect(type).toMatch(/^text\/event-stream/);
    const { notices, response } = split(messages);
    const progress = ofMethod(notices, 'notifications/progress');
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.every((p) => p['progressToken'] === 'p-1')).toBe(true);
    const values = progress.map((p) => p['progress'] as number);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(new Set(values).size).toBe(values.length);
    // The handbook directory entry and the two children the limit keeps.
    expect(progress.at(-1)).toMatchObject({ progress: 3, total: 3 });
    expect(response).toMatchObject({
      id: 'r',
      result: { contents: [{}, {}, {}] },
    });
  });

  it('is not sent without a progressToken: the answer is plain JSON', async () => {
    const { type, messages } = await readOverHttp(HANDBOOK, {});
    expect(type).toMatch(/^application\/json/);
    expect(messages).toHaveLength(1);
  });

  it('is not sent to a client that accepts only JSON', async () => {
    const { type, messages } = await readOverHttp(
      HANDBOOK,
      { progressToken: 'p-2' },
      { Accept: 'application/json' },
    );
    expect(type).toMatch(/^application\/json/);
    expect(messages).toHaveLength(1);
  });
});

describe('per-request log level', () => {
  it('sends the statements with timings at debug, the cache decision at info and the cut at warning', async () => {
    const { notices } = split(
      (
        await readOverHttp(HANDBOOK, {
          'io.modelcontextprotocol/logLevel': 'debug',
        })
      ).messages,
    );
    const logs = ofMethod(notices, 'notifications/message');
    expect(logs).toContainEqual({
      level: 'debug',
      logger: 'pg',
      data: {
        statement: 'pgmcp_read_directory',
        ms: expect.any(Number) as number,
        rows: 4,
      },
    });
    expect(logs).toContainEqual(
      expect.objectContaining({
        level: 'info',
        logger: 'cache',
        data: expect.objectContaining({
          uri: HANDBOOK,
          maxAgeMs: 10_000,
        }) as Message,
      }),
    );
    expect(logs).toContainEqual(
      expect.objectContaining({
        level: 'warning',
        logger: 'limits',
        data: expect.objectContaining({ maxDirectoryEntries: 2 }) as Message,
      }),
    );
    expect(ofMethod(notices, 'notifications/progress')).toEqual([]);
  });

  it('sends only messages at or above the level asked for, and none without one', async () => {
    const warning = split(
      (
        await readOverHttp(HANDBOOK, {
          'io.modelcontextprotocol/logLevel': 'warning',
        })
      ).messages,
    ).notices;
    expect(warning.map(params).map((p) => p['level'])).toEqual(['warning']);
    const none = await readOverHttp(HANDBOOK, {});
    expect(none.messages).toHaveLength(1);
  });

  it('refuses an unknown level with -32602', async () => {
    const { messages } = await readOverHttp(HANDBOOK, {
      'io.modelcontextprotocol/logLevel': 'chatty',
    });
    expect(messages[0]).toMatchObject({ error: { code: -32602 } });
  });
});

describe('notices in the legacy era', () => {
  it('over HTTP: a session request with a progressToken gets progress on its POST answer', async () => {
    const session = await openSession(server.url);
    const response = await fetch(server.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': session,
        'MCP-Protocol-Version': LEGACY_VERSION,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'resources/read',
        params: { uri: HANDBOOK, _meta: { progressToken: 'legacy-p' } },
      }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const messages = (await response.text())
      .split('\n\n')
      .filter((event) => event.startsWith('data: '))
      .map((event) => JSON.parse(event.slice(6)) as Message);
    const { notices, response: answer } = split(messages, 'legacy');
    expect(ofMethod(notices, 'notifications/progress').at(-1)).toMatchObject({
      progressToken: 'legacy-p',
      progress: 3,
      total: 3,
    });
    expect(answer).toMatchObject({ id: 7 });
  });
});

describe('notices over stdio', () => {
  it('are lines before the response, in both eras (legacy: the level logging/setLevel set); server logs stay JSON lines on stderr', async () => {
    const child = startStdioChild({
      DATABASE_URL: testDatabaseUrl(),
      PGMCP_LOG_FORMAT: 'json',
      PGMCP_MAX_DIRECTORY_ENTRIES: '2',
    });
    children.push(child);
    const send = (message: object) => child.send(JSON.stringify(message));
    const before = (id: string | number) => {
      const at = child.lines.findIndex((line) => line['id'] === id);
      return child.lines.slice(0, at);
    };
    send({
      jsonrpc: '2.0',
      id: 'm',
      method: 'resources/read',
      params: {
        _meta: {
          ...META,
          progressToken: 9,
          'io.modelcontextprotocol/logLevel': 'warning',
        },
        uri: HANDBOOK,
      },
    });
    split([...before('m'), await child.waitFor((line) => line['id'] === 'm')]);
    const modern = before('m');
    expect(ofMethod(modern, 'notifications/progress').at(-1)).toMatchObject({
      progressToken: 9,
      progress: 3,
      total: 3,
    });
    expect(ofMethod(modern, 'notifications/message')).toEqual([
      expect.objectContaining({ level: 'warning', logger: 'limits' }),
    ]);

    send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: LEGACY_VERSION,
        capabilities: {},
        clientInfo: { name: 'notices-test', version: '1' },
      },
    });
    await child.waitFor((line) => line['id'] === 0);
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'logging/setLevel',
      params: { level: 'debug' },
    });
    await child.waitFor((line) => line['id'] === 1);
    const start = child.lines.length;
    send({
      jsonrpc: '2.0',
      id: 2,
      method: 'resources/read',
      params: { uri: 'file:///handbook/README.md' },
    });
    const answer = await child.waitFor((line) => line['id'] === 2);
    const legacy = child.lines.slice(start, child.lines.indexOf(answer));
    split([...legacy, answer], 'legacy');
    expect(ofMethod(legacy, 'notifications/message')).toContainEqual(
      expect.objectContaining({
        level: 'debug',
        data: expect.objectContaining({
          statement: 'pgmcp_read_resource',
        }) as Message,
      }),
    );

    child.process.stdin.end();
    await child.exit;
    const logs = child.stderr
      .join('')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Message);
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.every((line) => typeof line['msg'] === 'string')).toBe(true);
    expect(logs).toContainEqual(
      expect.objectContaining({
        level: 'info',
        msg: expect.stringContaining('serving MCP') as string,
      }),
    );
  });
});
