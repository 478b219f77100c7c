// Issue 32 point 8: a caller holding a lock pgmcp takes for its own work cannot stall it. Opening a
// 2025-11-25 session no longer takes an advisory lock a role can reach, and any lock wait of
// pgmcp's own statements ends at the sessions' lock_timeout with a 503 to retry.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startTestServer,
  testDatabaseUrl,
  type TestServer,
} from '../setup/harness.js';
import { legacyPost, LEGACY_VERSION } from '../setup/legacy-client.js';

let server: TestServer;
/** The same, with a short lock_timeout, so the bounded wait ends well inside a test. */
let bounded: TestServer;
const holders: pg.Client[] = [];

const AS_ADMIN = () =>
  Promise.resolve({ role: 'admin', claims: { sub: 'internal-locks' } });

beforeAll(async () => {
  server = await startTestServer({ authenticate: AS_ADMIN });
  bounded = await startTestServer({
    authenticate: AS_ADMIN,
    lockTimeoutMs: 300,
  });
});

afterAll(async () => {
  for (const holder of holders) await holder.end().catch(() => undefined);
  await server?.close();
  await bounded?.close();
});

/** A separate connection, outside pgmcp, with a transaction open. */
async function holder(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  holders.push(client);
  await client.query('begin');
  return client;
}

function initialize(url: string) {
  return legacyPost(url, {
    method: 'initialize',
    params: {
      protocolVersion: LEGACY_VERSION,
      capabilities: {},
      clientInfo: { name: 'internal-locks', version: '1.0.0' },
    },
  });
}

/** Whether `client`'s backend still holds a granted lock of `locktype`. */
async function stillHolds(client: pg.Client, locktype: string) {
  const observer = new pg.Client({ connectionString: testDatabaseUrl() });
  await observer.connect();
  try {
    const pid = (
      await client.query<{ pid: number }>('select pg_backend_pid() as pid')
    ).rows[0]?.pid;
    const { rows } = await observer.query(
      'select 1 from pg_locks where pid = $1 and locktype = $2 and granted',
      [pid, locktype],
    );
    return rows.length > 0;
  } finally {
    await observer.end();
  }
}

describe('pgmcp own work under a caller lock', () => {
  it('answers initialize while the role holds the advisory lock legacy sessions used to take', async () => {
    const caller = await holder();
    await caller.query('set local role admin');
    await caller.query(
      "select pg_advisory_xact_lock(hashtext('pgmcp.legacy_sessions'), hashtext('admin'))",
    );
    const answer = await initialize(server.url);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('mcp-session-id')).toMatch(/\S/);
    expect(answer.result?.['protocolVersion']).toBe(LEGACY_VERSION);
    // Answered while the caller still held its lock, not after it let go.
    expect(await stillHolds(caller, 'advisory')).toBe(true);
    await caller.query('rollback');
  });

  it('refuses request roles every lock on the per-role row pgmcp locks instead', async () => {
    const caller = await holder();
    await caller.query('set local role admin');
    await expect(
      caller.query(
        "select from pgmcp.legacy_session_locks where role = 'admin' for update",
      ),
    ).rejects.toMatchObject({ code: '42501' });
    await caller.query('rollback; begin; set local role admin');
    await expect(
      caller.query('lock table pgmcp.legacy_session_locks'),
    ).rejects.toMatchObject({ code: '42501' });
    await caller.query('rollback');
  });

  it('answers 503 UNAVAILABLE with Retry-After once a lock it needs is held past the lock timeout', async () => {
    // Only pgmcp's own login (here the superuser test connection) can hold this row.
    const admin = new pg.Client({ connectionString: testDatabaseUrl() });
    await admin.connect();
    await admin.query(
      "insert into pgmcp.legacy_session_locks (role) values ('admin') on conflict do nothing",
    );
    await admin.end();
    const owner = await holder();
    await owner.query(
      "select from pgmcp.legacy_session_locks where role = 'admin' for update",
    );
    const answer = await initialize(bounded.url);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.error?.data?.['code']).toBe('UNAVAILABLE');
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    // Refused while the lock was still held: the wait was bounded, not ended by the holder.
    expect(await stillHolds(owner, 'transactionid')).toBe(true);
    await owner.query('rollback');
    const again = await initialize(bounded.url);
    expect(again.status).toBe(200);
  });
});
