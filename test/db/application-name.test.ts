// Issue 34 point 4: every connection of a replica names the replica and its pool in
// application_name, and a user's own application_name (URL or PGAPPNAME) wins.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  replicaApplicationName,
  replicaName,
} from '../../src/db/connection/application-name.js';
import { createDatabase } from '../../src/db/index.js';
import {
  call,
  listen,
  startTestServer,
  testDatabaseUrl,
  until,
} from '../setup/harness.js';

let sql: pg.Client;

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
});

afterAll(async () => {
  await sql.end();
});

/** The application_name of every connection to the test database, with how many carry it. */
async function namesInUse(): Promise<Map<string, number>> {
  const { rows } = await sql.query<{ name: string; count: number }>(
    `select application_name as name, count(*)::int as count from pg_stat_activity
      where datname = current_database() group by 1`,
  );
  return new Map(rows.map((row) => [row.name, row.count]));
}

/** Reads through the pipelines and the pool, a query tool call (pool and audit) and a stream. */
async function useEveryPool(url: string): Promise<void> {
  const read = await call(url, 'resources/read', {
    uri: 'notes:///architecture/revised-failover-customer-1',
  });
  expect(read.error).toBeUndefined();
  const query = await call(url, 'tools/call', {
    name: 'query',
    arguments: { sql: 'select 1 as one' },
  });
  expect(query.result?.['isError']).toBeUndefined();
}

describe('application_name', () => {
  it('names the replica (host, pid) after the purpose, and keeps the pid within 63 bytes', () => {
    expect(replicaName('api-7c9d5', 4711)).toBe('api-7c9d5/4711');
    expect(replicaName('héllo wörld', 1)).toBe('h-llo-w-rld/1');
    expect(replicaApplicationName('pgmcp-feed', 'api-7c9d5/4711')).toBe(
      'pgmcp-feed/api-7c9d5/4711',
    );
    const long = replicaApplicationName(
      'pgmcp-listener',
      `${'x'.repeat(80)}/4194304`,
    );
    expect(Buffer.byteLength(long)).toBe(63);
    expect(long.startsWith('pgmcp-listener/')).toBe(true);
    expect(long.endsWith('x/4194304')).toBe(true);
  });

  it('tells each pool of this process apart in pg_stat_activity: request pool, pipelines, audit, feed, listener, admin', async () => {
    const server = await startTestServer({ live: {} });
    try {
      await useEveryPool(server.url);
      const stream = await listen(server.url, { resourcesListChanged: true });
      expect(stream.status).toBe(200);
      const admin = await server.db.connectAdmin();
      try {
        const replica = replicaName();
        const names = await until(
          async () => {
            const found = await namesInUse();
            return found.has(`pgmcp-listener/${replica}`) && found;
          },
          10_000,
          'the listener connection',
        );
        // The pipelined connections exist only where the driver internals run (src/db/driver/);
        // CI's Node 22 run goes through pg's public API.
        for (const purpose of [
          'pgmcp',
          ...(server.db.driverInternals ? ['pgmcp-pipeline'] : []),
          'pgmcp-audit',
          'pgmcp-feed',
          'pgmcp-listener',
          'pgmcp-admin',
        ])
          expect(
            names.has(replicaApplicationName(purpose)),
            `${purpose} in ${[...names.keys()].join(', ')}`,
          ).toBe(true);
      } finally {
        await admin.end();
        stream.close();
      }
    } finally {
      await server.close();
    }
  });

  it('lets the URL’s own application_name win on every connection', async () => {
    const own = `own-${randomUUID().slice(0, 8)}`;
    const url = new URL(testDatabaseUrl());
    url.searchParams.set('application_name', own);
    const server = await startTestServer({
      live: {},
      databaseUrl: url.toString(),
    });
    try {
      await useEveryPool(server.url);
      const stream = await listen(server.url, { resourcesListChanged: true });
      expect(stream.status).toBe(200);
      // Request pool, pipeline, audit, feed and listener: at least five connections.
      const names = await until(
        async () => {
          const found = await namesInUse();
          return (found.get(own) ?? 0) >= 5 && found;
        },
        10_000,
        `five connections named ${own}`,
      );
      expect(names.get(own)).toBeGreaterThanOrEqual(5);
      for (const name of names.keys())
        expect(name.endsWith(`/${replicaName()}`), name).toBe(false);
      stream.close();
    } finally {
      await server.close();
    }
  });

  it('lets PGAPPNAME win when the URL names none', async () => {
    const own = `env-${randomUUID().slice(0, 8)}`;
    const before = process.env['PGAPPNAME'];
    process.env['PGAPPNAME'] = own;
    const db = createDatabase({
      connectionString: testDatabaseUrl(),
      poolSize: 1,
      statementTimeoutMs: 5000,
      onError: () => undefined,
    });
    try {
      const { rows } = await db.pool.query<{ name: string }>(
        "select current_setting('application_name') as name",
      );
      expect(rows[0]?.name).toBe(own);
      const feed = await db.feed.pool.query<{ name: string }>(
        "select current_setting('application_name') as name",
      );
      expect(feed.rows[0]?.name).toBe(own);
    } finally {
      if (before === undefined) delete process.env['PGAPPNAME'];
      else process.env['PGAPPNAME'] = before;
      await db.close();
    }
  });
});
