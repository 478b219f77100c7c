// The v1 TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, a 2025-11-25 client) against pgmcp over
// Streamable HTTP and stdio (issue 14): connect, walk every page, templates, read text, blob and a
// directory, complete, subscribe and hear `updated` after a committed UPDATE from another
// connection, unsubscribe and hear nothing more; and one session served by two pgmcp processes on
// the same database. This file has its own database.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
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
  until,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

let databaseUrl: string;
let sql: pg.Client;
let server: TestServer;

/** How long each wait below may take before it fails the test. */
const WAIT_MS = 15_000;

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
  await until(() => updated.includes(uri), WAIT_MS, `updated for ${uri}`);
}

/** 250 notes (three pages of 100), a text and a binary file in a directory. */
const WALK_NOTES = 250;
const PNG_MAGIC = Buffer.from('89504e470d0a1a0a', 'hex');
const processes: ChildProcess[] = [];

beforeAll(async () => {
  databaseUrl = await recreateDatabase(testDatabaseUrl(), 'pgmcp_legacy_e2e');
  await migrateDatabase(databaseUrl);
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  await sql.query(
    `insert into pgmcp.resources (uri, name, text, readers)
     values ('notes:///v1-http/one', 'one', 'v1', '{}'), ('notes:///v1-stdio/one', 'one', 'v1', '{}'),
            ('notes:///v1-sentinel/one', 'one', 'v1', '{}')`,
  );
  await sql.query(
    `insert into pgmcp.resources (uri, name, text, readers)
     select format('notes:///v1-walk/n%s', lpad(i::text, 3, '0')), 'n', 'walk', '{}'
       from generate_series(1, $1) as i`,
    [WALK_NOTES],
  );
  await sql.query(
    `insert into pgmcp.resources (uri, name, mime_type, text, blob, readers)
     values ('file:///v1/docs/a.txt', 'a.txt', 'text/plain', 'plain text', null, '{}'),
            ('file:///v1/docs/logo.png', 'logo.png', 'image/png', null, $1, '{}')`,
    [Buffer.concat([PNG_MAGIC, Buffer.from('rest')])],
  );
  server = await startTestServer({ databaseUrl, live: {} });
});

afterAll(async () => {
  for (const child of processes) child.kill('SIGKILL');
  await server?.close();
  await sql?.end();
});

/** `pgmcp serve --port 0` on this file's database, in its own process; resolves with its URL. */
function serveProcess(): Promise<string> {
  const child = spawn(
    process.execPath,
    [
      path.join(PROJECT_ROOT, 'bin', 'pgmcp.js'),
      'serve',
      '--port',
      '0',
      '--no-migrate',
    ],
    {
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        PGMCP_AUTH: 'none',
        // The test database's superuser login, with nothing private in it.
        PGMCP_ALLOW_UNSAFE_LOGIN: '1',
        PGMCP_STATE_DIR: mkdtempSync(path.join(os.tmpdir(), 'pgmcp-legacy-')),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  processes.push(child);
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const match = /serving MCP 2026-07-28 at (http:\/\/\S+)/.exec(output);
      if (match?.[1] !== undefined) resolve(match[1]);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) =>
      reject(new Error(`exited with ${code}: ${output}`)),
    );
  });
}

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
        await until(() => server.fanout.size > 0, WAIT_MS, 'the GET stream');
        await server.feed?.poll();
      });
    } finally {
      await transport.terminateSession();
      await client.close();
    }
    await until(() => server.fanout.size === 0, WAIT_MS, 'the session to end');
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

  it('over Streamable HTTP: walks every page, lists templates, reads text, blob and a directory, and completes', async () => {
    const client = new Client({ name: 'v1-walk', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(server.url));
    await client.connect(transport);
    try {
      const uris: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await client.listResources(
          cursor === undefined ? {} : { cursor },
        );
        expect(page).not.toHaveProperty('resultType');
        uris.push(...page.resources.map((resource) => resource.uri));
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor !== undefined);
      const walked = uris.filter((uri) => uri.startsWith('notes:///v1-walk/'));
      expect(walked).toHaveLength(WALK_NOTES);
      expect(new Set(uris).size).toBe(uris.length);
      expect(pages).toBeGreaterThanOrEqual(3);
      const templates = await client.listResourceTemplates();
      expect(
        templates.resourceTemplates.map((template) => template.uriTemplate),
      ).toContain('pg://{database}/{schema}');
      const text = await client.readResource({ uri: 'file:///v1/docs/a.txt' });
      expect(text.contents).toEqual([
        expect.objectContaining({
          uri: 'file:///v1/docs/a.txt',
          text: 'plain text',
        }),
      ]);
      const blob = await client.readResource({
        uri: 'file:///v1/docs/logo.png',
      });
      const bytes = Buffer.from(
        (blob.contents[0] as { blob?: string }).blob ?? '',
        'base64',
      );
      expect(bytes.subarray(0, PNG_MAGIC.length)).toEqual(PNG_MAGIC);
      const directory = await client.readResource({ uri: 'file:///v1/docs/' });
      expect(directory.contents.map((content) => content.uri)).toEqual([
        'file:///v1/docs/',
        'file:///v1/docs/a.txt',
        'file:///v1/docs/logo.png',
      ]);
      expect(directory.contents[0]?.mimeType).toBe('inode/directory');
      // The catalog template completes from pg_catalog: the database this server serves.
      const database = new URL(databaseUrl).pathname.slice(1);
      const completed = await client.complete({
        ref: { type: 'ref/resource', uri: 'pg://{database}/{schema}' },
        argument: { name: 'database', value: database.slice(0, 5) },
      });
      expect(completed.completion.values).toEqual([database]);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('over Streamable HTTP: after unsubscribe, a committed UPDATE is no longer heard', async () => {
    const client = new Client({ name: 'v1-unsubscribe', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(server.url));
    const updated: string[] = [];
    client.setNotificationHandler(
      ResourceUpdatedNotificationSchema,
      (message) => {
        updated.push(message.params.uri);
      },
    );
    await client.connect(transport);
    const watched = 'notes:///v1-http/one';
    const sentinel = 'notes:///v1-sentinel/one';
    try {
      await client.subscribeResource({ uri: watched });
      await client.subscribeResource({ uri: sentinel });
      await until(() => server.fanout.size > 0, WAIT_MS, 'the GET stream');
      await server.feed?.poll();
      await sql.query(`update pgmcp.resources set text = 'u1' where uri = $1`, [
        watched,
      ]);
      await until(
        () => updated.includes(watched),
        WAIT_MS,
        `updated for ${watched}`,
      );
      await client.unsubscribeResource({ uri: watched });
      const heard = updated.length;
      // Changes reach the session in commit order: once the sentinel's arrives, the watched
      // resource's earlier change would have arrived before it.
      await sql.query(`update pgmcp.resources set text = 'u2' where uri = $1`, [
        watched,
      ]);
      await sql.query(`update pgmcp.resources set text = 'u2' where uri = $1`, [
        sentinel,
      ]);
      await until(
        () => updated.includes(sentinel),
        WAIT_MS,
        `updated for ${sentinel}`,
      );
      expect(updated.slice(heard)).toEqual([sentinel]);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
    await until(() => server.fanout.size === 0, WAIT_MS, 'the session to end');
  });

  it('uses one session through two pgmcp processes on the same database, and ends it through either', async () => {
    const [first, second] = await Promise.all([serveProcess(), serveProcess()]);
    const client = new Client({ name: 'v1-first', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(first));
    await client.connect(transport);
    const sessionId = transport.sessionId;
    expect(sessionId).toBeDefined();
    // The same session from a client of the second process: no initialize, only the id.
    const other = new Client({ name: 'v1-second', version: '1' });
    const otherTransport = new StreamableHTTPClientTransport(new URL(second), {
      sessionId,
    });
    await other.connect(otherTransport);
    try {
      const read = await other.readResource({ uri: 'notes:///v1-walk/n001' });
      expect(read.contents).toEqual([
        expect.objectContaining({ text: 'walk' }),
      ]);
      await other.ping();
      await otherTransport.terminateSession();
      await expect(client.ping()).rejects.toThrow(/404|not found/i);
    } finally {
      await other.close();
      await client.close();
    }
  }, 60_000);
});
