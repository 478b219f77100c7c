// Failure modes, for real: statement timeout, an unreachable database, a client that hangs up,
// and a pool smaller than the load.
import http from 'node:http';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDatabase,
  runRequestQuery,
  type PreparedQuery,
} from '../../src/db/index.js';
import { loadConfig } from '../../src/config/index.js';
import { ConfigError, ProtocolError } from '../../src/errors.js';
import { RolePageMemo } from '../../src/resources/index.js';
import { startStdioTransport } from '../../src/transport/index.js';
import {
  META,
  call,
  mcpHeaders,
  postRaw,
  startTestServer,
  TEST_LIVE,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';

const signal = new AbortController().signal;
const login = { role: null, claims: {} };

describe('database failures', () => {
  it('maps a statement timeout to TIMEOUT and keeps the pool usable', async () => {
    const db = createDatabase({
      connectionString: testDatabaseUrl(),
      poolSize: 1,
      statementTimeoutMs: 50,
      onError: () => undefined,
    });
    try {
      const slow: PreparedQuery<Record<string, never>, unknown> = {
        name: 'test_slow',
        text: 'select pg_sleep(1)',
        values: () => [],
      };
      const error = await runRequestQuery(
        { db, principal: login, cancellation: signal },
        slow,
        {},
      ).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as ProtocolError).key).toBe('TIMEOUT');
      expect((error as ProtocolError).message).not.toMatch(
        /pg_sleep|statement/,
      );
      const quick: PreparedQuery<Record<string, never>, { one: number }> = {
        name: 'test_quick',
        text: 'select 1 as one',
        values: () => [],
      };
      expect(
        await runRequestQuery(
          { db, principal: login, cancellation: signal },
          quick,
          {},
        ),
      ).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
    }
  });

  it('answers -32603 UNAVAILABLE (HTTP 503) when the database cannot be reached, without affecting a healthy server', async () => {
    const unreachable = new URL(testDatabaseUrl());
    unreachable.port = '1';
    const server = await startTestServer();
    // A second server built the same way, its pool pointed at a closed port.
    const { createApp } = await import('../../src/app/index.js');
    const { createLogger } = await import('../../src/log.js');
    const { startHttpTransport } = await import('../../src/transport/index.js');
    const db = createDatabase({
      connectionString: unreachable.toString(),
      poolSize: 1,
      statementTimeoutMs: 1000,
      onError: () => undefined,
    });
    const app = createApp({
      db,
      sources: [
        {
          name: 'unreachable',
          databaseName: 'unreachable',
          db,
          scope: { include: null, exclude: [] },
          collections: [],
          sensitive: [],
          lookahead: new Map(),
          navigators: new RolePageMemo<string>({ maxEntries: 0, maxAgeMs: 0 }),
        },
      ],
      cursorSecrets: ['x'.repeat(20)],
      pageSize: 10,
      maxDirectoryEntries: 10,
      live: TEST_LIVE,
      logger: createLogger({
        stream: { write: () => true } as unknown as NodeJS.WritableStream,
      }),
    });
    const down = await startHttpTransport({
      host: '127.0.0.1',
      port: 0,
      path: '/mcp',
      dispatcher: app.dispatcher,
      maxBodyBytes: 65536,
      allowedHosts: ['127.0.0.1'],
      allowedOrigins: [],
      authenticate: () => login,
      log: () => undefined,
    });
    try {
      const { status, error } = await call(down.url, 'resources/list');
      expect(status).toBe(503);
      expect(error).toEqual({
        code: -32603,
        message: 'The database is unavailable.',
        data: { code: 'UNAVAILABLE' },
      });
      // The healthy server is unaffected.
      expect((await call(server.url, 'server/discover')).result).toBeDefined();
    } finally {
      await down.close();
      await db.close();
      await server.close();
    }
  });
});

describe('clients that go away and pools that are too small', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('survives a client that hangs up before the answer (the cancel), and answers the next one', async () => {
    const url = new URL(server.url);
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'resources/list',
      params: { _meta: META },
    });
    for (let attempt = 0; attempt < 20; attempt += 1) {
      await new Promise<void>((resolve) => {
        const request = http.request({
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: mcpHeaders('resources/list'),
        });
        request.on('error', () => resolve());
        request.end(body, () => {
          request.destroy();
          resolve();
        });
      });
    }
    const { result } = await call(server.url, 'resources/list');
    expect((result?.['resources'] as unknown[]).length).toBe(100);
  });

  it('queues requests beyond the pool size instead of failing them', async () => {
    const tiny = await startTestServer({ pageSize: 5 });
    try {
      // The harness pool has 4 connections; 40 concurrent reads must all succeed.
      const answers = await Promise.all(
        Array.from({ length: 40 }, () =>
          call(tiny.url, 'resources/read', { uri: 'test://static-text' }),
        ),
      );
      expect(answers.every((answer) => answer.result !== undefined)).toBe(true);
    } finally {
      await tiny.close();
    }
  });
});

describe('a pool that stays busy', () => {
  it('answers POOL_EXHAUSTED (HTTP 503 with Retry-After; -32603 on stdio) after PGMCP_POOL_WAIT_MS, and recovers', async () => {
    const busy = await startTestServer({ poolSize: 2, poolWaitMs: 1000 });
    const input = new PassThrough();
    const output = new PassThrough();
    const stdio = startStdioTransport({
      input,
      output,
      dispatcher: busy.dispatcher,
      principal: login,
      maxMessageBytes: 65536,
    });
    const stdioLines: string[] = [];
    output.setEncoding('utf8');
    output.on('data', (chunk: string) => stdioLines.push(...chunk.split('\n')));
    const stdioRead = async (id: number): Promise<Record<string, unknown>> => {
      input.write(
        `${JSON.stringify({ jsonrpc: '2.0', id, method: 'resources/templates/list', params: { _meta: META } })}\n`,
      );
      for (;;) {
        const line = stdioLines.find((candidate) =>
          candidate.startsWith(`{"jsonrpc":"2.0","id":${id},`),
        );
        if (line !== undefined)
          return JSON.parse(line) as Record<string, unknown>;
        await once(output, 'data');
      }
    };
    // A request that takes a pooled connection (a stored resource's read goes out on a pipelined
    // connection beside the pool, db/driver/request-pipeline.ts).
    const httpRead = () =>
      postRaw(
        busy.url,
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'resources/templates/list',
          params: { _meta: META },
        }),
        mcpHeaders('resources/templates/list'),
        'resources/templates/list',
      );
    // Every pooled connection is taken and kept: the requests can only wait.
    const held = [await busy.db.pool.connect(), await busy.db.pool.connect()];
    try {
      const refused = await httpRead();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.body?.['error']).toEqual({
        code: -32603,
        message:
          'The server is busy: no database connection came free in time; retry shortly.',
        data: { code: 'POOL_EXHAUSTED' },
      });
      const stdioRefused = await stdioRead(2);
      expect(stdioRefused['error']).toEqual({
        code: -32603,
        message:
          'The server is busy: no database connection came free in time; retry shortly.',
        data: { code: 'POOL_EXHAUSTED' },
      });
      // The timed-out waiters left the queue: nothing waits for a connection any more.
      expect(busy.db.pool.waitingCount).toBe(0);
    } finally {
      for (const client of held) client.release();
    }
    try {
      // Connections free again: both transports answer, and the pool kept its size.
      expect((await httpRead()).status).toBe(200);
      expect((await stdioRead(3))['result']).toBeDefined();
      expect(busy.db.pool.totalCount).toBeLessThanOrEqual(2);
      expect(busy.db.pool.waitingCount).toBe(0);
    } finally {
      input.end();
      await stdio.closed;
      await busy.close();
    }
  });

  it('refuses a PGMCP_POOL_WAIT_MS that is not a positive whole number at start-up', () => {
    for (const value of ['0', '-5', '2.5', 'soon']) {
      expect(() =>
        loadConfig(
          {},
          {
            PGMCP_POOL_WAIT_MS: value,
            DATABASE_URL: 'postgres://unused@127.0.0.1/unused',
          },
        ),
      ).toThrow(ConfigError);
    }
    expect(() =>
      loadConfig(
        {},
        {
          PGMCP_POOL_WAIT_MS: 'soon',
          DATABASE_URL: 'postgres://unused@127.0.0.1/unused',
        },
      ),
    ).toThrow(/PGMCP_POOL_WAIT_MS must be a whole number/);
    expect(
      loadConfig({}, { DATABASE_URL: 'postgres://unused@127.0.0.1/unused' })
        .poolWaitMs,
    ).toBe(5000);
  });
});
