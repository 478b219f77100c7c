// Issue 32 point 4: live updates never wait behind requests. The change feed reads the log and
// checks access on a pool of its own, so with every request connection held by slow tool calls,
// notifications still arrive and /readyz still says the replica can serve.
// This file has its own database, so its changes and slow statements are its own.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  listenFresh,
  readiness,
  startTestServer,
  testDatabaseUrl,
  until,
  type ListenStream,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

const ROLE = 'pgmcp_feed_pool_a';
let sql: pg.Client;
let server: TestServer;
const streams: ListenStream[] = [];

beforeAll(async () => {
  const databaseUrl = await recreateDatabase(
    testDatabaseUrl(),
    'pgmcp_feed_pool_test',
  );
  await migrateDatabase(databaseUrl, async (admin) => {
    await admin.query(
      `do $$ begin if not exists (select from pg_roles where rolname = '${ROLE}') then create role ${ROLE} nologin; end if; end $$`,
    );
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  server = await startTestServer({
    databaseUrl,
    principal: { role: ROLE, claims: { sub: 'feed-pool' } },
    poolSize: 2,
    poolWaitMs: 1000,
    statementTimeoutMs: 300_000,
    live: {},
  });
});

afterAll(async () => {
  for (const stream of streams) stream.close();
  await cancelSlow();
  await server?.close();
  await sql?.end();
});

async function slowRunning(): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event = 'PgSleep'`,
  );
  return rows[0]?.n ?? 0;
}

async function cancelSlow(): Promise<void> {
  await sql?.query(
    `select pg_cancel_backend(pid) from pg_stat_activity
      where datname = current_database() and wait_event = 'PgSleep'`,
  );
}

describe('the change feed beside a saturated request pool', () => {
  it('delivers notifications and stays ready while slow tool calls hold every request connection', async () => {
    const uri = 'notes:///feed/pool';
    await sql.query(
      `insert into pgmcp.resources (uri, name, text, readers)
       values ($1, 'pool', 'v1', array['${ROLE}'])`,
      [uri],
    );
    const stream = await listenFresh(server, { resourceSubscriptions: [uri] });
    streams.push(stream);
    let settled = 0;
    const slow = Array.from({ length: 2 }, () =>
      call(server.url, 'tools/call', {
        name: 'query',
        arguments: { sql: 'select pg_sleep(120)' },
      }).finally(() => (settled += 1)),
    );
    await until(
      async () => (await slowRunning()) === 2,
      20_000,
      'both request connections held by slow statements',
    );
    await sql.query(`update pgmcp.resources set text = 'v2' where uri = $1`, [
      uri,
    ]);
    await stream.waitFor(() => stream.updated().includes(uri));
    await server.feed?.poll();
    expect(await readiness(server)).toBe(200);
    // All of that while both slow calls still held the pool.
    expect(settled).toBe(0);
    expect(await slowRunning()).toBe(2);
    await cancelSlow();
    await Promise.all(slow);
  });
});
