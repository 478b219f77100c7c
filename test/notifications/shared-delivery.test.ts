// Issue 34 point 3: who may hear each change is decided once per database by the feed leader and
// shared with the other replicas (pgmcp.feed_batches). A follower delivers from the leader's
// batches; a revoked grant or changed readers apply to the next change there too; a frozen leader
// (session alive, lock held, nothing published) only delays a follower by its lag bound; a
// follower takes over when the leader's session ends. Nothing is lost or repeated.
// This file has its own database, so the leader lock and the batches are its own.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  listenFresh,
  startTestServer,
  testDatabaseUrl,
  until,
  type ListenStream,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

const ROLE_A = 'pgmcp_shared_a';
const ROLE_B = 'pgmcp_shared_b';
const GROUP = 'pgmcp_shared_group';
/** Long enough that a follower hears nothing in a test unless a batch or its lag bound brings it. */
const NEVER = 600_000;
// The leader lock's key (src/db/own-tables/feed-batches.ts).
const LOCK = '7034003500';

let databaseUrl: string;
let sql: pg.Client;
const servers: TestServer[] = [];
const streams: ListenStream[] = [];

async function insert(prefix: string, count: number, readers: string[]) {
  const { rows } = await sql.query<{ uri: string }>(
    `insert into pgmcp.resources (uri, name, text, readers)
     select format('notes:///%s/n%s', $1::text, n), format('n%s', n), 'v1', $3::text[]
       from generate_series(1, $2::int) as n
     returning uri`,
    [prefix, count, readers],
  );
  return rows.map((row) => row.uri).sort();
}

async function touch(uri: string): Promise<void> {
  await sql.query(
    `update pgmcp.resources set text = text || '.' where uri = $1`,
    [uri],
  );
}

async function server(
  role: string,
  changePath: { pollIntervalMs: number; leaderLagMs: number },
  logLines?: string[],
): Promise<TestServer> {
  const started = await startTestServer({
    databaseUrl,
    principal: { role, claims: {} },
    live: {},
    changePath,
    logLines,
  });
  servers.push(started);
  return started;
}

async function open(
  on: TestServer,
  uris: readonly string[],
): Promise<ListenStream> {
  const stream = await listenFresh(on, { resourceSubscriptions: uris });
  streams.push(stream);
  return stream;
}

/** Whether a session of this database holds the leader lock. */
async function leaderLockHeld(): Promise<boolean> {
  const { rows } = await sql.query<{ held: boolean }>(
    `select exists (select from pg_locks
                     where locktype = 'advisory' and granted and database = (
                       select oid from pg_database where datname = current_database())
                       and ((classid::bigint << 32) | objid::bigint) = $1::bigint) as held`,
    [LOCK],
  );
  return rows[0]?.held === true;
}

async function batchCount(): Promise<number> {
  const { rows } = await sql.query<{ count: string }>(
    'select count(*)::text as count from pgmcp.feed_batches',
  );
  return Number(rows[0]?.count);
}

/** Wait until the leader publishes decisions for `role` (it lists other replicas' roles every second). */
async function decidedFor(role: string, warmUp: string): Promise<void> {
  await until(
    async () => {
      await touch(warmUp);
      const { rows } = await sql.query(
        'select from pgmcp.feed_batches where decisions::jsonb ? $1',
        [role],
      );
      return rows.length > 0 || undefined;
    },
    20_000,
    `a published batch with decisions for ${role}`,
  );
}

async function closeAll(): Promise<void> {
  for (const stream of streams.splice(0)) stream.close();
  for (const started of servers.splice(0)) await started.close();
}

beforeAll(async () => {
  databaseUrl = await recreateDatabase(
    testDatabaseUrl(),
    'pgmcp_shared_delivery_test',
  );
  await migrateDatabase(databaseUrl, async (admin) => {
    for (const role of [ROLE_A, ROLE_B, GROUP])
      await admin.query(
        `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`,
      );
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
});

afterAll(async () => {
  await closeAll();
  await sql?.end();
});

describe('a follower of the feed leader', () => {
  let follower: TestServer;

  beforeAll(async () => {
    const lines: string[] = [];
    await server(ROLE_A, { pollIntervalMs: 500, leaderLagMs: 1000 }, lines);
    await until(
      () => lines.some((line) => line.includes('(feed leader)')) || undefined,
      10_000,
      'the first server leading',
    );
    // Neither its safety-net poll nor its lag bound comes during a test: only batches reach it.
    follower = await server(ROLE_B, {
      pollIntervalMs: NEVER,
      leaderLagMs: NEVER,
    });
  });

  afterAll(closeAll);

  it('delivers each change from the leader’s published decisions, once', async () => {
    const [warmUp] = await insert('warm', 1, [ROLE_B]);
    const own = await insert('own', 20, [ROLE_B]);
    const stream = await open(follower, own);
    await decidedFor(ROLE_B, warmUp as string);
    const before = await batchCount();
    for (const uri of own) await touch(uri);
    await stream.waitFor(() => stream.updated().length >= own.length, 20_000);
    expect(await batchCount()).toBeGreaterThan(before);
    // A change after all of them arrives after any late repeat would have.
    const [last] = await insert('last', 1, [ROLE_B]);
    const marker = await open(follower, [last as string]);
    await touch(last as string);
    await marker.waitFor(() => marker.updated().length === 1, 20_000);
    expect([...stream.updated()].sort()).toEqual(own);
  });

  it('applies a revoked grant and changed readers to the very next change', async () => {
    const [viaGroup, direct, sentinel] = await insert('revoke', 3, [ROLE_B]);
    await sql.query(
      `update pgmcp.resources set readers = array[$2] where uri = $1`,
      [viaGroup, GROUP],
    );
    await sql.query(`grant ${GROUP} to ${ROLE_B}`);
    const stream = await open(follower, [
      viaGroup as string,
      direct as string,
      sentinel as string,
    ]);
    await decidedFor(ROLE_B, sentinel as string);
    await touch(viaGroup as string);
    await touch(direct as string);
    await stream.waitFor(
      () =>
        stream.updated().includes(viaGroup as string) &&
        stream.updated().includes(direct as string),
      20_000,
    );
    const heard = stream.updated().length;
    await sql.query(`revoke ${GROUP} from ${ROLE_B}`);
    await sql.query(
      `update pgmcp.resources set readers = array[$2] where uri = $1`,
      [direct, ROLE_A],
    );
    await touch(viaGroup as string);
    await touch(direct as string);
    await touch(sentinel as string);
    await stream.waitFor(
      () =>
        stream
          .updated()
          .slice(heard)
          .includes(sentinel as string),
      20_000,
    );
    expect(stream.updated().slice(heard)).toEqual([sentinel]);
  });
});

describe('a frozen feed leader', () => {
  let holder: pg.Client;

  beforeAll(async () => {
    // A leader stopped with SIGSTOP: its session stays up and holds the lock, and it publishes nothing.
    holder = new pg.Client({ connectionString: databaseUrl });
    // Its session is ended by the test.
    holder.on('error', () => undefined);
    await holder.connect();
    await holder.query('select pg_advisory_lock($1::bigint)', [LOCK]);
  });

  afterAll(async () => {
    await closeAll();
    await holder.end().catch(() => undefined);
  });

  it('delays a follower by its lag bound only: each change still arrives once, none published', async () => {
    const follower = await server(ROLE_B, {
      pollIntervalMs: NEVER,
      leaderLagMs: 300,
    });
    const uris = await insert('frozen', 30, [ROLE_B]);
    const stream = await open(follower, uris);
    const before = await batchCount();
    for (const uri of uris) await touch(uri);
    await stream.waitFor(() => stream.updated().length >= uris.length, 20_000);
    const [last] = await insert('frozen-last', 1, [ROLE_B]);
    const marker = await open(follower, [last as string]);
    await touch(last as string);
    await marker.waitFor(() => marker.updated().length === 1, 20_000);
    expect([...stream.updated()].sort()).toEqual(uris);
    expect(await batchCount()).toBe(before);
    expect(await leaderLockHeld()).toBe(true);
  });

  it('is replaced when its session ends: another replica takes the lock and the others follow it', async () => {
    const logs: [string[], string[]] = [[], []];
    const pair = [
      await server(ROLE_B, { pollIntervalMs: 300, leaderLagMs: 1000 }, logs[0]),
      await server(ROLE_B, { pollIntervalMs: 300, leaderLagMs: 1000 }, logs[1]),
    ];
    const leads = (index: number): boolean =>
      logs[index]?.some((line) => line.includes('(feed leader)')) === true;
    expect(leads(0) || leads(1)).toBe(false);
    await sql.query('select pg_terminate_backend($1)', [
      (holder as unknown as { processID: number }).processID,
    ]);
    const leader = await until(
      () => (leads(0) ? 0 : leads(1) ? 1 : undefined),
      10_000,
      'a server leading',
    );
    const follower = pair[1 - leader] as TestServer;
    const [warmUp, uri] = await insert('after', 2, [ROLE_B]);
    const stream = await open(follower, [uri as string]);
    await decidedFor(ROLE_B, warmUp as string);
    await touch(uri as string);
    await stream.waitFor(() => stream.updated().length === 1, 20_000);
    expect(follower.feed?.readiness().ok).toBe(true);
  });
});
