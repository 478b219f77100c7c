// A standby's faults and the reads that are not its to answer, against a real primary and a hot
// standby streaming from it (test/setup/standby-pair.ts): a recovery conflict under
// whenUnavailable: fail, the change feed's own reads, statements a server in recovery cannot run,
// the wait for the floor, and a failover. Serial: each test moves the pair's state.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  currentHorizon,
  readChangePage,
  runReadOnlySql,
  runRequestQuery,
  SqlStatementError,
  storeRoleFunctions,
  type DatabaseHandle,
  type PreparedQuery,
  type StandbyOptions,
} from '../../src/db/index.js';
import { ProtocolError } from '../../src/errors.js';
import type { Standby } from '../../src/db/standby/standby-set.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import {
  pairReadDatabase,
  startStandbyPair,
  waitFor,
  type StandbyPair,
} from '../setup/standby-pair.js';

const ROLE = 'faults_reader';
const reader = { role: ROLE, claims: {} };
let pair: StandbyPair;
const opened: DatabaseHandle[] = [];

const WHERE: PreparedQuery<Record<string, never>, { recovery: boolean }> = {
  name: 'test_faults_where',
  text: 'select pg_is_in_recovery() as recovery',
  values: () => [],
};

const SESSION: PreparedQuery<Record<string, never>, { application: string }> = {
  name: 'test_faults_session',
  text: `select current_setting('application_name') as application`,
  values: () => [],
};

/**
 * On the standby, holds a lock on faults_items until a conflict with recovery cancels it; on the
 * primary, answers at once.
 */
const LONG_READ: PreparedQuery<Record<string, never>, { n: number }> = {
  name: 'test_faults_long_read',
  text: `select count(*)::int as n
           from faults_items, pg_sleep(case when pg_is_in_recovery() then 60 else 0 end)`,
  values: () => [],
};

function open(settings: Partial<StandbyOptions> = {}): DatabaseHandle {
  const db = pairReadDatabase(pair, settings, 120_000);
  opened.push(db);
  return db;
}

const request = <TRow>(
  db: DatabaseHandle,
  query: PreparedQuery<Record<string, never>, TRow>,
) =>
  runRequestQuery(
    { db, principal: reader, cancellation: { aborted: false } },
    query,
    {},
  );

const tool = (db: DatabaseHandle, sql: string) =>
  runReadOnlySql(db, reader, {
    params: [],
    maxRows: 10,
    maxBytes: 10_000,
    schemas: null,
    sql,
  });

/**
 * Run LONG_READ through `db` on the standby, and once it runs there, take a lock on the primary
 * whose replay the standby cannot wait for (max_standby_streaming_delay is 0): the read is
 * cancelled by a conflict with recovery. Returns what the read answered or threw.
 */
async function conflictedRead(db: DatabaseHandle): Promise<unknown> {
  const reading = request(db, LONG_READ).catch((error: unknown) => error);
  await waitFor(
    async () =>
      (
        await pair.sql(
          'standby',
          `select count(*)::int as n from pg_stat_activity
            where query like '%from faults_items, pg_sleep%' and pid <> pg_backend_pid()`,
        )
      )[0]?.['n'] === 1,
  );
  await pair.sql(
    'primary',
    'begin; lock table faults_items in access exclusive mode; commit',
  );
  return reading;
}

beforeAll(async () => {
  pair = await startStandbyPair();
  await migrateDatabase(pair.primaryUrl, async (admin) => {
    await admin.query(`create role ${ROLE};
      create table faults_items (id int primary key);
      insert into faults_items values (1), (2);
      grant select on faults_items to ${ROLE};
      do $$ begin for i in 1..101 loop
        execute format('create sequence faults_s%s', i);
      end loop; end $$;
      grant select on all sequences in schema public to ${ROLE};`);
    await storeRoleFunctions(admin, ROLE);
  });
  await pair.sql('standby', 'alter system set max_standby_streaming_delay = 0');
  await pair.sql('standby', 'select pg_reload_conf()');
  await pair.caughtUp();
}, 120_000);

afterAll(async () => {
  for (const db of opened) await db.close().catch(() => undefined);
  pair?.close();
});

describe('standby faults', () => {
  it('answers UNAVAILABLE when a recovery conflict cancels a read and whenUnavailable is fail, and reads the primary otherwise', async () => {
    const refusing = open({ whenUnavailable: 'fail' });
    expect((await request(refusing, WHERE))[0]?.recovery).toBe(true);
    const refused = await conflictedRead(refusing);
    expect(refused).toBeInstanceOf(ProtocolError);
    expect((refused as ProtocolError).key).toBe('UNAVAILABLE');
    expect((refused as ProtocolError).message).toMatch(/try again/);
    const falling = open({});
    expect((await request(falling, WHERE))[0]?.recovery).toBe(true);
    const answered = await conflictedRead(falling);
    expect(answered).toEqual([{ n: 2 }]);
  });

  it("runs the change feed's reads (the access checks of live updates) on the primary, on its own pool, while it still raises the standbys' floor", async () => {
    const db = open({ whenUnavailable: 'fail' });
    expect((await request(db, WHERE))[0]?.recovery).toBe(true);
    expect((await request(db.feed, WHERE))[0]?.recovery).toBe(false);
    expect(db.feed.standbys).toBeUndefined();
    expect(db.feed.floor).toBe(db.standbys);
    // On the feed's own pool.
    const [session] = await request(db.feed, SESSION);
    expect(session?.application).toMatch(/^pgmcp-feed\//);
  });

  it("runs on the primary a statement the standby refuses only for being in recovery, and the role's next statement on the standby again", async () => {
    const db = open({});
    for (const sql of [
      'select pg_current_wal_lsn()::text',
      "select pg_notify('faults', 'x')::text",
      'select pg_current_xact_id()::text',
    ]) {
      const answer = await tool(db, sql);
      expect(answer.server).toMatchObject({ kind: 'primary' });
      expect(answer.rows).toHaveLength(1);
      const next = await tool(db, 'select pg_is_in_recovery()::text');
      expect(next.server).toMatchObject({ kind: 'standby' });
      expect(next.rows).toEqual([['true']]);
    }
  });

  it("answers a statement's own error from the standby (the same SQLSTATE raised elsewhere than a recovery check), without running it on the primary", async () => {
    const lines: string[] = [];
    const db = open({ log: (line) => lines.push(line) });
    const error = await tool(db, `select currval('faults_s1')`).catch(
      (caught: unknown) => caught,
    );
    // 55000, as the WAL functions' refusal on a standby, but raised by the sequence code.
    expect(error).toBeInstanceOf(SqlStatementError);
    expect((error as SqlStatementError).sqlstate).toBe('55000');
    expect(lines.filter((line) => line.includes('faults_s1'))).toEqual([]);
  });

  it('tells each read a standby cannot run once, remembering a bounded number of them', () => {
    const lines: string[] = [];
    const set = open({ log: (line) => lines.push(line) }).standbys;
    const standby = { label: 'told-test:5432' } as Standby;
    const fail = (n: number) =>
      set?.failed(standby, {
        why: `refusal ${n};`,
        connectionLost: false,
        unsuitable: true,
      });
    const told = () =>
      lines.filter((line) => line.includes('refusal 1;')).length;
    fail(1);
    fail(1);
    expect(told()).toBe(1);
    for (let n = 2; n <= 101; n++) fail(n);
    fail(1);
    expect(told()).toBe(2);
  });

  it('leaves no timer behind a read that waited for the standby to replay a change', async () => {
    const db = open({ waitMs: 60_000 });
    expect((await request(db, WHERE))[0]?.recovery).toBe(true);
    await pair.sql('standby', 'select pg_wal_replay_pause()');
    let waiting: Promise<{ recovery: boolean }[]> | undefined;
    try {
      const horizon = await currentHorizon(db.feed);
      await pair.sql(
        'primary',
        `insert into pgmcp.resources (uri, name, text, readers)
         values ('test://faults/' || gen_random_uuid(), 'n', 't', '{public}')`,
      );
      const page = await readChangePage(db.feed, {
        horizon,
        after: undefined,
        limit: 100,
      });
      expect(page.rows.length).toBeGreaterThan(0);
      const before = timers();
      waiting = request(db, WHERE);
      // Long enough for the wait to ask the standby many times.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await pair.sql('standby', 'select pg_wal_replay_resume()');
      expect((await waiting)[0]).toMatchObject({ recovery: true });
      expect(timers() - before).toBeLessThan(5);
    } finally {
      await pair.sql('standby', 'select pg_wal_replay_resume()');
      await waiting?.catch(() => undefined);
    }
  });

  it('raises no floor from a position read on a former primary (a read begun before the primary moved)', () => {
    const set = open({}).standbys;
    const seenAt = set?.moves;
    set?.raiseFloor(100n, seenAt);
    expect(set?.floor).toBe(100n);
    set?.primaryMoved('postgres://elsewhere.invalid:5432/postgres');
    set?.raiseFloor(200n, seenAt);
    expect(set?.floor).toBe(0n);
    set?.raiseFloor(300n, set.moves);
    expect(set?.floor).toBe(300n);
  });

  // Last: the promotion cannot be undone.
  it("starts the standbys' floor again when the primary moves, and takes no reads on the standby that became the primary", async () => {
    const lines: string[] = [];
    const db = open({
      failover: 'follow',
      failoverCheckMs: 200,
      log: (line) => lines.push(line),
    });
    expect((await request(db, WHERE))[0]?.recovery).toBe(true);
    const horizon = await currentHorizon(db.feed);
    await pair.sql(
      'primary',
      `insert into pgmcp.resources (uri, name, text, readers)
       values ('test://faults/moved', 'n', 't', '{public}')`,
    );
    await readChangePage(db.feed, { horizon, after: undefined, limit: 100 });
    expect(db.standbys?.floor).toBeGreaterThan(0n);
    await pair.caughtUp();
    pair.stopPrimary('immediate');
    await pair.promoteStandby();
    await waitFor(() => db.primary?.url === pair.standbyUrl);
    expect(db.standbys?.floor).toBe(0n);
    expect(db.standbys?.states[0]?.state).toBe('promoted');
    expect((await request(db, WHERE))[0]?.recovery).toBe(false);
  });
});

/** The process's pending timers. */
function timers(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout')
    .length;
}
