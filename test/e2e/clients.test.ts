// Independent clients against pgmcp: the official TypeScript client 2.4.0 pinned to 2026-07-28, in
// 'auto' mode, and in its default era (the 2025-11-25 initialize, over HTTP and stdio); and the AI
// SDK's MCP client (which must not fall back to the 2025 handshake).
import path from 'node:path';
import { createMCPClient } from '@ai-sdk/mcp';
import {
  Client,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';
import {
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';

let server: TestServer;
const seenMethods: string[] = [];

beforeAll(async () => {
  server = await startTestServer();
  // Record every method the clients call, to prove no legacy `initialize` is sent.
  const original = server.dispatcher.dispatch.bind(server.dispatcher);
  server.dispatcher.dispatch = (message, transport) => {
    seenMethods.push(message.method);
    return original(message, transport);
  };
});

afterAll(async () => {
  await server.close();
});

describe('@modelcontextprotocol/client pinned to 2026-07-28', () => {
  it('discovers, walks every page, lists templates and reads text and blobs', async () => {
    const client = new Client(
      { name: 'pgmcp-test', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url)),
    );
    try {
      // Without a cursor the client follows every nextCursor itself.
      const all = await client.listResources();
      expect(all.resources.length).toBeGreaterThan(3000);
      expect(new Set(all.resources.map((resource) => resource.uri)).size).toBe(
        all.resources.length,
      );
      expect(
        seenMethods.filter((method) => method === 'resources/list').length,
      ).toBe(Math.ceil(all.resources.length / 100));
      const templates = await client.listResourceTemplates();
      expect(
        templates.resourceTemplates.map((template) => template.uriTemplate),
      ).toContain('notes:///{tag}/{slug}');
      const text = await client.readResource(
        { uri: 'test://static-text' },
        { cacheMode: 'bypass' },
      );
      expect(text.contents[0]).toMatchObject({
        text: 'This is the content of the static text resource.',
      });
      const blob = await client.readResource(
        { uri: 'file:///assets/logo.png' },
        { cacheMode: 'bypass' },
      );
      const content = blob.contents[0] as { blob?: string };
      expect(
        Buffer.from(content.blob ?? '', 'base64')
          .subarray(1, 4)
          .toString(),
      ).toBe('PNG');
      const unicode = await client
        .readResource({ uri: 'notes:///café/menü' }, { cacheMode: 'bypass' })
        .catch((error: unknown) => error);
      expect(unicode).toMatchObject({
        code: -32602,
        data: { uri: 'notes:///café/menü' },
      });
    } finally {
      await client.close();
    }
    expect(seenMethods).not.toContain('initialize');
  });
});

describe('@ai-sdk/mcp', () => {
  it('connects with server/discover (no legacy fallback) and lists and reads resources', async () => {
    seenMethods.length = 0;
    const client = await createMCPClient({
      transport: { type: 'http', url: server.url },
    });
    try {
      const page = await client.listResources();
      expect(page.resources).toHaveLength(100);
      expect(typeof page.nextCursor).toBe('string');
      const next = await client.listResources({
        params: { cursor: page.nextCursor },
      });
      expect(next.resources[0]?.uri).not.toBe(page.resources[0]?.uri);
      const read = await client.readResource({
        uri: 'file:///handbook/README.md',
      });
      expect(read.contents[0]).toMatchObject({
        uri: 'file:///handbook/README.md',
        mimeType: 'text/markdown',
      });
      const templates = await client.listResourceTemplates();
      expect(templates.resourceTemplates.length).toBeGreaterThanOrEqual(2);
    } finally {
      await client.close();
    }
    expect(seenMethods[0]).toBe('server/discover');
    expect(seenMethods).not.toContain('initialize');
  });
});

/** Every resource URI, following nextCursor (whether or not the client already does). */
async function allUris(client: Client): Promise<string[]> {
  const uris: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listResources(
      cursor === undefined ? {} : { cursor },
      { cacheMode: 'bypass' },
    );
    uris.push(...page.resources.map((resource) => resource.uri));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return uris;
}

/** List every page, templates, read text and a blob, complete: the same facts in either era. */
async function exercise(client: Client): Promise<void> {
  const uris = await allUris(client);
  expect(uris.length).toBeGreaterThan(3000);
  expect(new Set(uris).size).toBe(uris.length);
  expect(uris).toContain('file:///handbook/README.md');
  const templates = await client.listResourceTemplates();
  expect(
    templates.resourceTemplates.map((template) => template.uriTemplate),
  ).toContain('notes:///{tag}/{slug}');
  const text = await client.readResource(
    { uri: 'test://static-text' },
    { cacheMode: 'bypass' },
  );
  expect(text.contents[0]).toMatchObject({
    text: 'This is the content of the static text resource.',
  });
  const blob = await client.readResource(
    { uri: 'file:///assets/logo.png' },
    { cacheMode: 'bypass' },
  );
  const content = blob.contents[0] as { blob?: string };
  expect(
    Buffer.from(content.blob ?? '', 'base64')
      .subarray(1, 4)
      .toString(),
  ).toBe('PNG');
  const database = new URL(testDatabaseUrl()).pathname.slice(1);
  const completed = await client.complete({
    ref: { type: 'ref/resource', uri: 'pg://{database}/{schema}' },
    argument: { name: 'database', value: '' },
  });
  expect(completed.completion.values).toEqual([database]);
}

describe('@modelcontextprotocol/client 2.4.0 in its default era', () => {
  it('over Streamable HTTP: initializes a 2025-11-25 session and lists, reads and completes in it', async () => {
    const client = new Client({ name: 'pgmcp-test-default', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(server.url));
    await client.connect(transport);
    try {
      expect(client.getProtocolEra()).toBe('legacy');
      expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      expect(transport.sessionId).toMatch(/^[\x21-\x7e]+$/);
      expect(client.getServerCapabilities()?.resources).toEqual({
        subscribe: true,
        listChanged: true,
      });
      await exercise(client);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('over stdio: initializes the process as a 2025-11-25 session and lists, reads and completes', async () => {
    const client = new Client({ name: 'pgmcp-test-stdio', version: '1' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [
          path.join(PROJECT_ROOT, 'bin', 'pgmcp.js'),
          'serve',
          '--stdio',
          '--no-migrate',
        ],
        env: {
          ...(process.env as Record<string, string>),
          DATABASE_URL: testDatabaseUrl(),
        },
        stderr: 'pipe',
      }),
    );
    try {
      expect(client.getProtocolEra()).toBe('legacy');
      expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      await exercise(client);
    } finally {
      await client.close();
    }
  });
});

describe("@modelcontextprotocol/client 2.4.0 in 'auto' mode", () => {
  it('probes server/discover, stays on 2026-07-28 and never sends initialize', async () => {
    seenMethods.length = 0;
    const client = new Client(
      { name: 'pgmcp-test-auto', version: '1' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url)),
    );
    try {
      expect(client.getProtocolEra()).toBe('modern');
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      await exercise(client);
    } finally {
      await client.close();
    }
    expect(seenMethods[0]).toBe('server/discover');
    expect(seenMethods).not.toContain('initialize');
  });
});
