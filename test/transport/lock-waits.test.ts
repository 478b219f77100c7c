// Issue 34 point 2: with someone holding an exclusive lock on pgmcp's tables, a request waits one
// lock_timeout at most, not one per request queued ahead of it, then gets 503 with Retry-After
// in both eras; and readiness stays this replica's own, not the lock's.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSeed } from '../../src/db/index.js';
import { SEEDS_DIRECTORY } from '../../src/config/index.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';
import {
  mcpHeaders,
  META,
  postRaw,
  readiness,
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import {
  legacyPost,
  openSession,
  sessionHeaders,
} from '../setup/legacy-client.js';

const URI = 'notes:///architecture/revised-failover-customer-1';
// More reads than pipelined connections (2), so most queue behind one waiting for the lock.
const READS = 10;

let server: TestServer;
const lines: string[] = [];
let sql: pg.Client;

beforeAll(async () => {
  // A database of its own: the exclusive locks below would hold up every other test file's
  // requests on the shared test database while they last.
  const databaseUrl = await recreateDatabase(
    testDatabaseUrl(),
    'pgmcp_lock_waits_test',
  );
  await migrateDatabase(databaseUrl, async (admin) => {
    await loadSeed(
      admin,
      { seedsDirectory: SEEDS_DIRECTORY, dataset: 'demo' },
      () => undefined,
    );
  });
  server = await startTestServer({
    databaseUrl,
    live: {},
    logLines: lines,
    lockTimeoutMs: 1000,
    // Far above the lock timeout: an answer that came from a statement timeout would be a bug.
    statementTimeoutMs: 120_000,
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
}, 120_000);

afterAll(async () => {
  await sql.query('rollback').catch(() => undefined);
  await sql.end();
  await server.close();
});

function read(id: number) {
  return postRaw(
    server.url,
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'resources/read',
      params: { _meta: META, uri: URI },
    }),
    mcpHeaders('resources/read', URI),
  );
}

/** pgmcp's pipelined connections (application_name, issue 34 point 4) waiting for a lock now. */
async function pipelinedStatementsWaitingForLocks(): Promise<number> {
  const { rows } = await sql.query<{ count: number }>(
    `select count(*)::int as count from pg_stat_activity
      where datname = current_database() and application_name like 'pgmcp-pipeline/%'
        and wait_event_type = 'Lock'`,
  );
  return rows[0]?.count ?? 0;
}

describe('an exclusive lock on pgmcp.resources', () => {
  it('answers every queued read 503 with Retry-After after one lock timeout, while the statements behind are still waiting', async () => {
    const session = await openSession(server.url);
    await sql.query('begin');
    await sql.query('lock pgmcp.resources in access exclusive mode');
    const answers = await Promise.all(
      Array.from({ length: READS }, (_, index) => read(index + 1)),
    );
    const legacy = await legacyPost(
      server.url,
      { method: 'resources/read', params: { uri: URI } },
      sessionHeaders(session),
    );
    // Every caller has its answer, yet PostgreSQL still holds some of their statements waiting
    // for the lock: the callers were answered after one bound each, not after every statement
    // queued ahead of theirs on the same connection had timed out in turn.
    const stillWaiting = await pipelinedStatementsWaitingForLocks();
    await sql.query('commit');

    for (const answer of answers) {
      expect(answer.status, answer.text).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(
        (answer.body?.['error'] as { data?: { code?: string } }).data?.code,
      ).toBe('UNAVAILABLE');
    }
    expect(legacy.status).toBe(503);
    expect(legacy.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(legacy.error?.data?.['code']).toBe('UNAVAILABLE');
    // On pg's public API (CI's Node 22 run) each read has its own pooled connection and its own
    // lock_timeout, so none queues behind another and nothing is left waiting.
    if (server.db.driverInternals) expect(stillWaiting).toBeGreaterThan(0);
    else expect(stillWaiting).toBe(0);

    // The lock gone, the same read is answered.
    const after = await read(READS + 1);
    expect(after.status).toBe(200);
  });
});

describe('readiness under a lock on pgmcp.changes', () => {
  it('stays ready when the change log cannot be read for a lock held on it', async () => {
    expect(await readiness(server)).toBe(200);
    await sql.query('begin');
    await sql.query('lock pgmcp.changes in access exclusive mode');
    try {
      // The read waits its lock_timeout and fails; the replica is as healthy as before.
      await server.feed?.poll();
      expect(lines.join('')).toContain(
        'reading the change log waited too long for a lock',
      );
      expect(await readiness(server)).toBe(200);
    } finally {
      await sql.query('commit');
    }
    await server.feed?.poll();
    expect(await readiness(server)).toBe(200);
  });
});
