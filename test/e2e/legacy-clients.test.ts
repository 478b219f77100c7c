// The v1 TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, a 2025-11-25 client) against pgmcp over
// Streamable HTTP and stdio (issue 14): connect, list, read, subscribe, and hear `updated` after a
// committed UPDATE from another connection. This file has its own database.
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/version.js';
import {
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

let databaseUrl: string;
let sql: pg.Client;
let server: TestServer;

async function waitUntil(
  condition: () => boolean,
  what: string,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Connect, list, read, subscribe; then a committed UPDATE must arrive as `updated`. */
async function exercise(
  client: Client,
  uri: string,
  subscribed: () => Promise<void>,
): Promise<void> {
  const updated: string[] = [];
  client.setNotificationHandler(
    ResourceUpdatedNotificationSchema,
    (message) => {
      updated.push(message.params.uri);
    },
  );
  expect(client.getServerVersion()?.name).toBe('pgmcp');
  expect(client.getServerCapabilities()?.resources).toEqual({
    subscribe: true,
    listChanged: true,
  });
  const listed = await client.listResources();
  expect(listed.resources.map((resource) => resource.uri)).toContain(uri);
  expect(listed).not.toHaveProperty('resultType');
  const read = await client.readResource({ uri });
  expect(read.contents).toEqual([expect.objectContaining({ uri, text: 'v1' })]);
  expect(read).not.toHaveProperty('ttlMs');
  await client.subscribeResource({ uri });
  await subscribed();
  await sql.query(`update pgmcp.resources set text = 'v2' where uri = $1`, [
    uri,
  ]);
  await waitUntil(() => updated.includes(uri), `updated for ${uri}`);
}

beforeAll(async () => {
  databaseUrl = await recreateDatabase(testDatabaseUrl(), 'pgmcp_legacy_e2e');
  await migrateDatabase(databaseUrl);
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  await sql.query(
    `insert into pgmcp.resources (uri, name, text, readers)
     values ('notes:///v1-http/one', 'one', 'v1', '{}'), ('notes:///v1-stdio/one', 'one', 'v1', '{}')`,
  );
  server = await startTestServer({ databaseUrl, live: {} });
});

afterAll(async () => {
  await server?.close();
  await sql?.end();
});

describe('@modelcontextprotocol/sdk 1.32.2 (2025-11-25)', () => {
  it('over Streamable HTTP: initialize, list, read, subscribe, and updated on the GET stream', async () => {
    const client = new Client({ name: 'v1-http', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(server.url));
    await client.connect(transport);
    try {
      expect(transport.sessionId).toMatch(/^[\x21-\x7e]+$/);
      await exercise(client, 'notes:///v1-http/one', async () => {
        // The client opens its GET stream on its own after initialized; the session is a
        // subscriber of the fan-out once that stream is attached.
        await waitUntil(() => server.fanout.size > 0, 'the GET stream');
        await server.feed?.poll();
      });
    } finally {
      await transport.terminateSession();
      await client.close();
    }
    await waitUntil(() => server.fanout.size === 0, 'the session to end');
  });

  it('over stdio: initialize, list, read, subscribe, and updated on stdout', async () => {
    const client = new Client({ name: 'v1-stdio', version: '1' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        path.join(PROJECT_ROOT, 'bin', 'pgmcp.js'),
        'serve',
        '--stdio',
        '--no-migrate',
      ],
      env: {
        ...(process.env as Record<string, string>),
        DATABASE_URL: databaseUrl,
      },
      stderr: 'pipe',
    });
    await client.connect(transport);
    try {
      // The child starts its change feed before it reads stdin, so a change committed after
      // the subscribe answer reaches it.
      await exercise(client, 'notes:///v1-stdio/one', () => Promise.resolve());
    } finally {
      await client.close();
    }
  });
});
