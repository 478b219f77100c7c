// tools/list and tools/call in both eras, on the conformance fixture tools (test/conformance/fixtures): listing, annotations,
// caching hints, unknown tools, argument errors and progress on the request's own stream.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import {
  META,
  call,
  mcpHeaders,
  startTestServer,
  type TestServer,
} from '../setup/harness.js';
import { CONFORMANCE_FIXTURES } from '../conformance/fixtures/index.js';
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
  fixtures = await startTestServer({ extension: CONFORMANCE_FIXTURES });
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
  it('serves only its own read-only tools: the conformance fixtures come only from code under test/', async () => {
    const { result } = await call(plain.url, 'tools/list');
    expect(names(result)).toEqual(['search', 'fetch', 'query', 'explain']);
    expect(
      (
        result?.['tools'] as { annotations?: { readOnlyHint?: boolean } }[]
      ).every((tool) => tool.annotations?.readOnlyHint === true),
    ).toBe(true);
    // No config key turns them on: the one that did is now an unknown key, refused at start.
    const file = path.join(
      mkdtempSync(path.join(os.tmpdir(), 'pgmcp-config-')),
      'pgmcp.config.json',
    );
    writeFileSync(
      file,
      JSON.stringify({ tools: { conformanceFixtures: true } }),
    );
    expect(() =>
      loadConfig(
        {},
        { PGMCP_CONFIG: file, DATABASE_URL: 'postgres://pgmcp@127.0.0.1/x' },
      ),
    ).toThrow(/conformanceFixtures/);
    const prompt = await call(
      plain.url,
      'prompts/get',
      { name: 'test_input_required_result_prompt' },
      { 'Mcp-Name': 'test_input_required_result_prompt' },
    );
    expect(prompt.error).toMatchObject({ code: -32602 });
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

  it('lists a schema with JSON Schema 2020-12 keywords as written, not as zod would rewrite it', async () => {
    const { result } = await call(fixtures.url, 'tools/list');
    const tool = (result?.['tools'] as Record<string, unknown>[]).find(
      (candidate) => candidate['name'] === 'json_schema_2020_12_tool',
    );
    expect(tool?.['inputSchema']).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $defs: { address: { $anchor: 'addressDef' } },
      allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
      then: { required: ['phone'] },
      else: { required: ['email'] },
      additionalProperties: false,
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
    // A progressToken gets the progress, in the 2025-11-25 form, on the POST's SSE answer.
    const response = await fetch(fixtures.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'legacy-call',
        method: 'tools/call',
        params: {
          name: 'test_tool_with_progress',
          arguments: {},
          _meta: { progressToken: 7 },
        },
      }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const messages = (await response.text())
      .split('\n\n')
      .filter((event) => event.startsWith('data: '))
      .map((event) => JSON.parse(event.slice(6)) as Record<string, unknown>);
    const called = messages.at(-1) as Record<string, unknown>;
    assertValidResponse('tools/call', called, 'legacy');
    for (const notice of messages.slice(0, -1))
      assertValidNotification(notice, 'legacy');
    expect(
      messages.slice(0, -1).map((notice) => notice['params']),
    ).toContainEqual(expect.objectContaining({ progressToken: 7 }));
    expect(called['result']).toMatchObject({
      content: [{ type: 'text', text: 'Progress tool completed.' }],
    });
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

describe('input-required fixtures', () => {
  const callTool = (name: string, extra: Record<string, unknown> = {}) =>
    call(fixtures.url, 'tools/call', {
      _meta: {
        ...META,
        'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
      },
      name,
      arguments: {},
      ...extra,
    });

  it('asks with a signed requestState, finishes on the retry, and refuses the state changed or on another tool', async () => {
    const first = await callTool('test_input_required_result_request_state');
    expect(first.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { confirm: { method: 'elicitation/create' } },
    });
    const requestState = first.result?.['requestState'] as string;
    const inputResponses = {
      confirm: { action: 'accept', content: { ok: true } },
    };
    const done = await callTool('test_input_required_result_request_state', {
      inputResponses,
      requestState,
    });
    expect(done.result).toMatchObject({ resultType: 'complete' });
    for (const [name, state] of [
      ['test_input_required_result_request_state', `${requestState}x`],
      ['test_input_required_result_tampered_state', requestState],
    ] as const) {
      const refused = await callTool(name, {
        inputResponses,
        requestState: state,
      });
      expect(refused.error).toMatchObject({
        code: -32602,
        data: { code: 'INVALID_INPUT_RESPONSE' },
      });
    }
  });

  it('answers -32021 naming what a request did not declare, before asking anything', async () => {
    const refused = await callTool('test_missing_capability', {
      _meta: {
        ...META,
        'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
      },
    });
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { sampling: {} } },
    });
  });
});
