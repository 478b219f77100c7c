// resources/list and resources/templates/list: keyset pagination over real Postgres.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/protocol/index.js';
import {
  TEST_CURSOR_SECRET,
  call,
  startTestServer,
  testDatabaseUrl,
  walkList,
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
  await sql.query(`delete from pgmcp.resources where uri like 'walk-test:%'`);
  await sql.end();
  await server.close();
});

describe('resources/list', () => {
  it('walks every stored resource exactly once, in primary-key order, with the count SQL gives', async () => {
    const { rows } = await sql.query<{ uri: string }>(
      'select uri from pgmcp.resources order by id',
    );
    const notes = rows.filter((row) => row.uri.startsWith('notes:///')).length;
    expect(notes).toBeGreaterThanOrEqual(3000);
    const { uris, pages } = await walkList(server.url);
    expect(new Set(uris).size).toBe(uris.length);
    // Stored resources first, in key order; then the catalog (README "URIs"), which other files
    // may be adding to while this one walks.
    const stored = uris.filter((uri) => !uri.startsWith('pg://'));
    expect(stored).toEqual(rows.map((row) => row.uri));
    expect(uris.slice(0, stored.length)).toEqual(stored);
    const catalog = uris.slice(stored.length);
    expect(catalog).toContain(
      `pg://${new URL(testDatabaseUrl()).pathname.slice(1)}/shop/orders`,
    );
    expect(pages.length).toBe(Math.ceil(uris.length / 100));
  });

  it('returns full pages of the configured size and omits nextCursor exactly on the last page', async () => {
    const small = await startTestServer({ pageSize: 7 });
    try {
      let cursor: string | undefined;
      for (let page = 0; page < 3; page += 1) {
        const { result } = await call(
          small.url,
          'resources/list',
          cursor === undefined ? {} : { cursor },
        );
        expect((result?.['resources'] as unknown[]).length).toBe(7);
        cursor = result?.['nextCursor'] as string | undefined;
        expect(typeof cursor).toBe('string');
      }
      // The tail: after the second-to-last stored row comes the last one, then the catalog fills
      // the page; pages stay full until the last, which alone has no nextCursor.
      const { rows } = await sql.query<{ id: string; uri: string }>(
        'select id::text as id, uri from pgmcp.resources order by resources.id desc limit 2',
      );
      const codec = createCursorCodec([TEST_CURSOR_SECRET]);
      let tail: string | undefined = codec.encode({
        c: 'resources',
        k: [rows[1]?.id ?? ''],
      });
      const seen: string[] = [];
      for (;;) {
        const { result } = await call(small.url, 'resources/list', {
          cursor: tail,
        });
        const resources = result?.['resources'] as { uri: string }[];
        seen.push(...resources.map((resource) => resource.uri));
        tail = result?.['nextCursor'] as string | undefined;
        if (tail === undefined) {
          expect(resources.length).toBeLessThanOrEqual(7);
          break;
        }
        expect(resources.length).toBe(7);
      }
      expect(seen[0]).toBe(rows[0]?.uri);
      expect(seen.slice(1).every((uri) => uri.startsWith('pg://'))).toBe(true);
      expect(new Set(seen).size).toBe(seen.length);
    } finally {
      await small.close();
    }
  });

  it('stays stable while rows are inserted and deleted during the walk: no duplicates, nothing skipped', async () => {
    const before = await sql.query<{ uri: string }>(
      'select uri from pgmcp.resources order by id',
    );
    const survivors = new Set(before.rows.map((row) => row.uri));
    const deleted: string[] = [];
    const inserted: string[] = [];
    const { uris } = await walkList(server.url, async (_result, page) => {
      // After each page: insert a new row and delete one the walk has not reached yet.
      const uri = `walk-test:inserted/${page}`;
      await sql.query(
        `insert into pgmcp.resources (uri, name, text) values ($1, 'walk', 'x')`,
        [uri],
      );
      inserted.push(uri);
      const victim = await sql.query<{ uri: string }>(
        `select uri from pgmcp.resources where uri like 'notes:///%' order by id desc offset $1 limit 1`,
        [page * 3],
      );
      const target = victim.rows[0]?.uri;
      if (target !== undefined) {
        const saved = await sql.query(
          'delete from pgmcp.resources where uri = $1 returning *',
          [target],
        );
        if ((saved.rowCount ?? 0) > 0) deleted.push(target);
      }
    });
    try {
      expect(new Set(uris).size).toBe(uris.length);
      for (const uri of deleted) survivors.delete(uri);
      const seen = new Set(uris);
      const skipped = [...survivors].filter((uri) => !seen.has(uri));
      expect(skipped).toEqual([]);
      // Rows inserted during the walk have higher keys, so the walk reaches them.
      expect(inserted.filter((uri) => seen.has(uri)).length).toBeGreaterThan(0);
    } finally {
      // Put the deleted notes back by re-running the idempotent demo seed step for notes.
      const { loadSeed } = await import('../../src/db/index.js');
      const { SEEDS_DIRECTORY } = await import('../../src/config/index.js');
      const admin = new pg.Client({ connectionString: testDatabaseUrl() });
      await admin.connect();
      await loadSeed(
        admin,
        { seedsDirectory: SEEDS_DIRECTORY, dataset: 'demo' },
        () => undefined,
      );
      await admin.end();
    }
  });

  it('describes each resource with name, mimeType, size and annotations from the row', async () => {
    const { result } = await call(server.url, 'resources/list');
    const first = (result?.['resources'] as Record<string, unknown>[])[0] ?? {};
    const { rows } = await sql.query(
      `select uri, name, title, mime_type, size, priority, audience, updated_at from pgmcp.resources order by id limit 1`,
    );
    const row = rows[0] as Record<string, unknown>;
    expect(first).toMatchObject({
      uri: row['uri'],
      name: row['name'],
      title: row['title'],
      mimeType: row['mime_type'],
      size: Number(row['size']),
      annotations: {
        priority: row['priority'],
        audience: row['audience'],
        lastModified: (row['updated_at'] as Date).toISOString(),
      },
    });
    expect(result).toMatchObject({
      resultType: 'complete',
      cacheScope: 'public',
      ttlMs: match.any(Number),
    });
  });
});

describe('cursors on the wire', () => {
  it('answers empty, garbage, edited and foreign cursors with -32602 "Invalid cursor."', async () => {
    const { result } = await call(server.url, 'resources/list');
    const good = result?.['nextCursor'] as string;
    const [version, payload, mac] = good.split('.');
    const edited = `${version}.${Buffer.from(JSON.stringify({ c: 'resources', k: ['1'] })).toString('base64url')}.${mac}`;
    const foreign = createCursorCodec(['some-other-server-secret']).encode({
      c: 'resources',
      k: ['1'],
    });
    for (const cursor of [
      '',
      'garbage',
      edited,
      foreign,
      `${version}.${payload}`,
      good.toUpperCase(),
    ]) {
      const { error } = await call(server.url, 'resources/list', { cursor });
      expect(error, cursor).toEqual({
        code: -32602,
        message: 'Invalid cursor.',
        data: { code: 'INVALID_CURSOR' },
      });
    }
  });
});

describe('resources/templates/list', () => {
  it('lists the stored templates, paginated with the same cursor design', async () => {
    const small = await startTestServer({ pageSize: 3 });
    try {
      const first = await call(small.url, 'resources/templates/list');
      const templates = first.result?.['resourceTemplates'] as {
        uriTemplate: string;
      }[];
      // The catalog's templates come from a migration, so before the seeds' ones.
      expect(templates.map((template) => template.uriTemplate)).toEqual([
        'pg://{database}/{schema}',
        'pg://{database}/{schema}/{table}',
        'pg://{database}/{schema}/{table}/rows/{key}',
      ]);
      const cursor = first.result?.['nextCursor'] as string;
      expect(typeof cursor).toBe('string');
      const second = await call(small.url, 'resources/templates/list', {
        cursor,
      });
      expect(
        (second.result?.['resourceTemplates'] as { uriTemplate: string }[]).map(
          (t) => t.uriTemplate,
        ),
      ).toEqual([
        'pg://{database}',
        'pg://{database}{?changes_since}',
        'notes:///{tag}/{slug}',
      ]);
      const third = await call(small.url, 'resources/templates/list', {
        cursor: second.result?.['nextCursor'],
      });
      expect(
        (third.result?.['resourceTemplates'] as { uriTemplate: string }[]).map(
          (t) => t.uriTemplate,
        ),
      ).toEqual(['file:///{+path}', 'test://template/{id}/data']);
      expect(third.result).not.toHaveProperty('nextCursor');
      // A resources/list cursor is not a templates cursor.
      const list = await call(small.url, 'resources/list');
      const wrong = await call(small.url, 'resources/templates/list', {
        cursor: list.result?.['nextCursor'],
      });
      expect(wrong.error).toMatchObject({
        code: -32602,
        message: 'Invalid cursor.',
      });
    } finally {
      await small.close();
    }
  });
});
