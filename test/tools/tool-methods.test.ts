// tools/list and tools/call in both eras, on the conformance fixture tools: listing, annotations,
// caching hints, unknown tools, argument errors and progress on the request's own stream.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  META,
  call,
  mcpHeaders,
  startTestServer,
  type TestServer,
} from '../setup/harness.js';
import {
  legacyPost,
  openSession,
  sessionHeaders,
} from '../setup/legacy-client.js';
import {
  assertValidNotification,
  assertValidResponse,
} from '../setup/spec-schema.js';

let fixtures: TestServer;
let plain: TestServer;

beforeAll(async () => {
  fixtures = await startTestServer({ tools: { conformanceFixtures: true } });
  plain = await startTestServer();
});

afterAll(async () => {
  await fixtures.close();
  await plain.close();
});

function names(result: Record<string, unknown> | undefined): string[] {
  return (result?.['tools'] as { name: string }[]).map((tool) => tool.name);
}

/** The messages of an SSE response body, each parsed. */
function sseMessages(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
}

describe('tools/list', () => {
  it('does not serve the conformance fixtures unless the config file asks for them', async () => {
    const { result } = await call(plain.url, 'tools/list');
    expect(names(result)).not.toContain('test_simple_text');
  });

  it('lists the same tools in the same order every time, cacheable by anyone', async () => {
    const first = await call(fixtures.url, 'tools/list');
    const second = await call(fixtures.url, 'tools/list');
    expect(names(first.result)).toContain('test_tool_with_progress');
    expect(names(second.result)).toEqual(names(first.result));
    expect(first.result).toMatchObject({
      ttlMs: 300_000,
      cacheScope: 'public',
    });
  });

  it('annotates every tool as read-only and closed-world, with an object input schema', async () => {
    const { result } = await call(fixtures.url, 'tools/list');
    for (const tool of result?.['tools'] as Record<string, unknown>[])
      expect(tool).toMatchObject({
        inputSchema: { type: 'object' },
        annotations: { readOnlyHint: true, openWorldHint: false },
      });
  });

  it('refuses a cursor, since the list has a single page', async () => {
    const { error } = await call(fixtures.url, 'tools/list', { cursor: 'x' });
    expect(error).toMatchObject({
      code: -32602,
      data: { code: 'INVALID_CURSOR' },
    });
  });

  it('is announced in server/discover capabilities', async () => {
    const { result } = await call(fixtures.url, 'server/discover');
    expect(result?.['capabilities']).toMatchObject({ tools: {} });
  });
});

describe('tools/call', () => {
  it('answers the simple text fixture', async () => {
    const { result } = await call(fixtures.url, 'tools/call', {
      name: 'test_simple_text',
    });
    expect(result).toMatchObject({
      resultType: 'complete',
      content: [
        { type: 'text', text: 'This is a simple text response for testing.' },
      ],
    });
  });

  it('reports a tool error as a result with isError, not a JSON-RPC error', async () => {
    const { result, error } = await call(fixtures.url, 'tools/call', {
      name: 'test_error_handling',
      arguments: {},
    });
    expect(error).toBeUndefined();
    expect(result).toMatchObject({ isError: true });
  });

  it('refuses an unknown tool with -32602', async () => {
    const { error } = await call(fixtures.url, 'tools/call', {
      name: 'no_such_tool',
    });
    expect(error).toMatchObject({
      code: -32602,
      data: { code: 'INVALID_PARAMS', name: 'no_such_tool' },
    });
  });

  it('answers arguments the tool does not take with isError naming the problem', async () => {
    const { result } = await call(fixtures.url, 'tools/call', {
      name: 'test_simple_text',
      arguments: { unexpected: 1 },
    });
    expect(result).toMatchObject({ isError: true });
    expect(JSON.stringify(result?.['content'])).toContain('unexpected');
  });

  it('sends progress on the request own stream before the result when given a progress token', async () => {
    const response = await fetch(fixtures.url, {
      method: 'POST',
      headers: mcpHeaders('tools/call', 'test_tool_with_progress'),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'p-1',
        method: 'tools/call',
        params: {
          _meta: { ...META, progressToken: 'tok-1' },
          name: 'test_tool_with_progress',
          arguments: {},
        },
      }),
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const messages = sseMessages(await response.text());
    const progress = messages.filter(
      (message) => message['method'] === 'notifications/progress',
    );
    for (const message of progress) assertValidNotification(message);
    expect(progress.map((message) => message['params'])).toEqual([
      { progressToken: 'tok-1', progress: 0, total: 100 },
      { progressToken: 'tok-1', progress: 50, total: 100 },
      { progressToken: 'tok-1', progress: 100, total: 100 },
    ]);
    const last = messages.at(-1) as Record<string, unknown>;
    assertValidResponse('tools/call', last);
    expect(last).toMatchObject({
      id: 'p-1',
      result: { resultType: 'complete' },
    });
  });
});

describe('tools in a 2025-11-25 session', () => {
  it('lists the tools without the 2026-07-28 fields and calls one', async () => {
    const session = await openSession(fixtures.url);
    const headers = sessionHeaders(session);
    const list = await legacyPost(
      fixtures.url,
      { method: 'tools/list', params: {} },
      headers,
    );
    expect(names(list.result)).toContain('test_simple_text');
    expect(list.result).not.toHaveProperty('ttlMs');
    const called = await legacyPost(
      fixtures.url,
      {
        method: 'tools/call',
        params: {
          name: 'test_tool_with_progress',
          arguments: {},
          _meta: { progressToken: 7 },
        },
      },
      headers,
    );
    expect(called.result).toMatchObject({
      content: [{ type: 'text', text: 'Progress tool completed.' }],
    });
    // Asked for progress, so answered as SSE (legacy digest §5).
    expect(called.headers.get('content-type')).toMatch(/^text\/event-stream/);
  });

  it('offers tools in the initialize capabilities', async () => {
    const answer = await legacyPost(fixtures.url, {
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'legacy-test', version: '1.0.0' },
      },
    });
    expect(answer.result?.['capabilities']).toMatchObject({ tools: {} });
  });
});
