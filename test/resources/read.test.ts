// resources/read: text, blobs, directories, not-found and URI safety, against real rows.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGIN_PRINCIPAL } from '../../src/auth/index.js';
import {
  META,
  call,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { match } from '../setup/matchers.js';

let server: TestServer;
let sql: pg.Client;

beforeAll(async () => {
  server = await startTestServer();
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
});

afterAll(async () => {
  await sql.end();
  await server.close();
});

describe('resources/read', () => {
  it('returns a note as Markdown text with its size and annotations', async () => {
    const { rows } = await sql.query(
      `select uri, text, size, priority, updated_at from pgmcp.resources where uri like 'notes:///%' order by id limit 1`,
    );
    const row = rows[0] as {
      uri: string;
      text: string;
      size: string;
      priority: number;
      updated_at: Date;
    };
    const { result } = await call(server.url, 'resources/read', {
      uri: row.uri,
    });
    expect(result).toMatchObject({
      resultType: 'complete',
      contents: [
        {
          uri: row.uri,
          mimeType: 'text/markdown',
          text: row.text,
          _meta: {
            'dev.pgmcp/size': Number(row.size),
            'dev.pgmcp/annotations': {
              priority: row.priority,
              lastModified: row.updated_at.toISOString(),
            },
          },
        },
      ],
      ttlMs: match.any(Number),
      cacheScope: 'public',
    });
    expect((result?.['contents'] as unknown[]).length).toBe(1);
  });

  it('returns binary content as standard base64 that decodes to the stored bytes (PNG and PDF)', async () => {
    for (const [uri, magic] of [
      ['file:///assets/logo.png', '89504e470d0a1a0a'],
      ['file:///assets/brochure.pdf', '255044462d'],
    ] as const) {
      const { result } = await call(server.url, 'resources/read', { uri });
      const content = (
        result?.['contents'] as { blob: string; mimeType: string }[]
      )[0];
      const bytes = Buffer.from(content?.blob ?? '', 'base64');
      const { rows } = await sql.query<{ blob: Buffer }>(
        'select blob from pgmcp.resources where uri = $1',
        [uri],
      );
      expect(bytes.equals(rows[0]?.blob ?? Buffer.alloc(0))).toBe(true);
      expect(bytes.subarray(0, magic.length / 2).toString('hex')).toBe(magic);
      expect(content?.blob).toMatch(/^[A-Za-z0-9+/]+=*$/);
    }
  });

  it('reads a directory as its entry followed by its immediate children only', async () => {
    const { result } = await call(server.url, 'resources/read', {
      uri: 'file:///handbook/',
    });
    const contents = result?.['contents'] as {
      uri: string;
      mimeType: string;
    }[];
    expect(contents.map((content) => content.uri)).toEqual([
      'file:///handbook/',
      'file:///handbook/README.md',
      'file:///handbook/policies/',
      'file:///handbook/teams/',
    ]);
    expect(contents[0]?.mimeType).toBe('inode/directory');
  });

  it('synthesizes a directory entry listing the children when no directory row is stored', async () => {
    await sql.query(`insert into pgmcp.resources (uri, name, mime_type, text) values
      ('file:///loose/a.txt', 'a.txt', 'text/plain', 'A'), ('file:///loose/deeper/b.txt', 'b.txt', 'text/plain', 'B')`);
    try {
      const { result } = await call(server.url, 'resources/read', {
        uri: 'file:///loose/',
      });
      const contents = result?.['contents'] as {
        uri: string;
        mimeType: string;
        text: string;
      }[];
      expect(contents.map((content) => content.uri)).toEqual([
        'file:///loose/',
        'file:///loose/a.txt',
      ]);
      expect(contents[0]).toMatchObject({
        mimeType: 'inode/directory',
        text: 'a.txt\t1 bytes',
      });
    } finally {
      await sql.query(
        `delete from pgmcp.resources where uri like 'file:///loose/%'`,
      );
    }
  });

  it('caps a directory read and marks the entry as truncated', async () => {
    const small = await startTestServer({ maxDirectoryEntries: 2 });
    try {
      const { result } = await call(small.url, 'resources/read', {
        uri: 'file:///handbook/',
      });
      const contents = result?.['contents'] as {
        uri: string;
        _meta?: Record<string, unknown>;
      }[];
      expect(contents).toHaveLength(3);
      expect(contents[0]?._meta?.['dev.pgmcp/truncated']).toBe(true);
    } finally {
      await small.close();
    }
  });

  it('serves the conformance fixtures, including rows described by the test template', async () => {
    const text = await call(server.url, 'resources/read', {
      uri: 'test://static-text',
    });
    expect(text.result?.['contents']).toEqual([
      expect.objectContaining({
        uri: 'test://static-text',
        mimeType: 'text/plain',
        text: 'This is the content of the static text resource.',
      }),
    ]);
    const templated = await call(server.url, 'resources/read', {
      uri: 'test://template/123/data',
    });
    const content = (templated.result?.['contents'] as { text: string }[])[0];
    expect(JSON.parse(content?.text ?? '{}')).toEqual({
      id: '123',
      templateTest: true,
      data: 'Data for ID: 123',
    });
  });

  it('answers a missing resource with -32602 and the URI in data, never an empty contents array', async () => {
    for (const uri of [
      'notes:///nope/missing',
      'file:///handbook/nothing/',
      'test://nonexistent',
    ]) {
      const { error, result } = await call(server.url, 'resources/read', {
        uri,
      });
      expect(result).toBeUndefined();
      expect(error).toEqual({
        code: -32602,
        message: 'Resource not found.',
        data: { uri, code: 'RESOURCE_NOT_FOUND' },
      });
    }
  });

  it('rejects unsafe URIs with -32602 before any query', async () => {
    const hostile = [
      'file:///handbook/../etc/passwd',
      'file:///handbook/%2e%2e/secrets',
      'file:///handbook/%2E%2e/secrets',
      'file:///handbook/./README.md',
      'file:///handbook//README.md',
      'file:///handbook\\README.md',
      'file:///handbook/%5cREADME.md',
      'file:///handbook/%00.md',
      'file:///a/%2fb',
      'notes:///a b',
      'notes:///tab\there',
      'no-scheme',
      '',
      `notes:///${'x'.repeat(2100)}`,
      "notes:///x'; drop table pgmcp.resources; --",
      'notes:///a#b#c',
    ];
    for (const uri of hostile) {
      const { error } = await call(server.url, 'resources/read', { uri });
      expect(error?.code, uri).toBe(-32602);
      expect(error?.data?.['code'], uri).toBe('INVALID_URI');
    }
    const { rows } = await sql.query<{ count: string }>(
      'select count(*) from pgmcp.resources',
    );
    expect(Number(rows[0]?.count)).toBeGreaterThan(3000);
  });

  it('normalizes file: paths: escapes of unreserved characters match the stored URI', async () => {
    const { result } = await call(server.url, 'resources/read', {
      uri: 'file:///handbook/%52EADME.md',
    });
    expect((result?.['contents'] as { uri: string }[])[0]?.uri).toBe(
      'file:///handbook/README.md',
    );
  });

  it('names the offending field when params have the wrong type', async () => {
    // Through the dispatcher: over HTTP the Mcp-Name header check answers first (-32020).
    const outcome = await server.dispatcher.dispatch(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'resources/read',
        params: { _meta: META, uri: 42 },
      },
      { principal: LOGIN_PRINCIPAL, signal: new AbortController().signal },
    );
    expect(outcome).toMatchObject({
      kind: 'response',
      response: { id: 1, error: { code: -32602 } },
    });
    expect(JSON.stringify(outcome)).toContain(
      'uri: Invalid input: expected string',
    );
  });
});
