// Reads from a standby (issue 36 point 1), against a real primary and a hot standby streaming from
// it (test/setup/standby-pair.ts): where reads go, the floor a change notification sets, lag,
// standby loss and promotion. Serial: each test moves the pair's state.
import { expectPromtoolAccepts } from '../setup/promtool.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import pg from 'pg';
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
import { catalogSource } from '../../src/resources/catalog-source.js';
import { readChanges } from '../../src/resources/catalog-changes.js';
import { METRICS, metricsExposition } from '../../src/observability/index.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import {
  pairReadDatabase,
  startStandbyPair,
  waitFor,
  type StandbyPair,
} from '../setup/standby-pair.js';

const WHERE: PreparedQuery<Record<string, never>, Where> = {
  name: 'test_standby_where',
  text: `select pg_is_in_recovery() as recovery, current_user as "user",
                (select count(*)::int from standby_items) as items`,
  values: () => [],
};
interface Where {
  recovery: boolean;
  user: string;
  items: number;
}

const reader = { role: 'standby_reader', claims: {} };
const outsider = { role: 'standby_outsider', claims: {} };
let pair: StandbyPair;
const opened: DatabaseHandle[] = [];

function open(
  settings: Partial<StandbyOptions> & { log?: StandbyOptions['log'] },
): DatabaseHandle {
  const db = pairReadDatabase(pair, settings, 30_000);
  opened.push(db);
  return db;
}

const read = (db: DatabaseHandle, principal = reader) =>
  runRequestQuery(
    { db, principal, cancellation: { aborted: false } },
    WHERE,
    {},
  ).then((rows) => rows[0] as Where);

/** Log a change on the primary and let the change feed's read of the log set the floor. */
async function changeAndReadLog(db: DatabaseHandle): Promise<void> {
  const horizon = await currentHorizon(db.feed);
  await pair.sql(
    'primary',
    `insert into standby_items values (default);
     insert into pgmcp.resources (uri, name, text, readers)
     values ('test://standby/' || gen_random_uuid(), 'n', 't', '{public}')`,
  );
  const page = await readChangePage(db.feed, {
    horizon,
    after: undefined,
    limit: 100,
  });
  expect(page.rows.length).toBeGreaterThan(0);
}

async function reads(server: string, reason: string): Promise<number> {
  const metric = await METRICS.standbyReads.get();
  return (
    metric.values.find(
      (value) =>
        value.labels['server'] === server && value.labels['reason'] === reason,
    )?.value ?? 0
  );
}

beforeAll(async () => {
  pair = await startStandbyPair();
  await migrateDatabase(pair.primaryUrl);
  await pair.sql(
    'primary',
    `create table standby_items (id serial primary key);
     create role standby_reader; create role standby_outsider;
     grant select on standby_items to standby_reader;`,
  );
  await pair.caughtUp();
}, 120_000);

afterAll(async () => {
  for (const db of opened) await db.close().catch(() => undefined);
  pair?.close();
});

describe('reads from a standby', () => {
  it('runs reads on the standby as the request role, with its grants', async () => {
    const db = open({});
    const where = await read(db);
    expect(where).toMatchObject({ recovery: true, user: 'standby_reader' });
    const denied = await read(db, outsider).catch((error: unknown) => error);
    expect(denied).toBeInstanceOf(ProtocolError);
    expect((denied as ProtocolError).key).toBe('FORBIDDEN');
  });

  it("runs a query tool statement on the standby with the role's stored functions, where it cannot switch role", async () => {
    const admin = new pg.Client(pair.primaryUrl);
    await admin.connect();
    try {
      await storeRoleFunctions(admin, 'standby_reader');
    } finally {
      await admin.end();
    }
    await pair.caughtUp();
    const db = open({});
    const options = {
      params: [],
      maxRows: 10,
      maxBytes: 10_000,
      schemas: null,
    };
    const rows = await runReadOnlySql(db, reader, {
      ...options,
      sql: 'select pg_is_in_recovery()::text, current_user::text',
    });
    expect(rows.rows).toEqual([['true', 'standby_reader']]);
    expect(rows.server).toMatchObject({ kind: 'standby' });
    const unsuitable = await reads('primary', 'unsuitable');
    const escape = await runReadOnlySql(db, reader, {
      ...options,
      sql: "select set_config('role', 'standby_outsider', false)",
    }).catch((error: unknown) => error);
    expect(escape).toBeInstanceOf(SqlStatementError);
    expect((escape as SqlStatementError).message).toMatch(
      /cannot set parameter "role" within security-definer function/,
    );
    // It was refused on the standby itself, not sent to the primary.
    expect(await reads('primary', 'unsuitable')).toBe(unsuitable);
    // A role whose functions are not there runs on the primary.
    const elsewhere = await runReadOnlySql(db, outsider, {
      ...options,
      sql: 'select pg_is_in_recovery()::text',
    });
    expect(elsewhere.rows).toEqual([['false']]);
    expect(elsewhere.server).toMatchObject({ kind: 'primary' });
    expect(await reads('primary', 'unsuitable')).toBe(unsuitable + 1);
  });

  it('sends a role whose functions are not on the standby straight to the primary for a while: nothing runs before the standby again, and its connection stays', async () => {
    // Only this test's connections on the standby, and no poll after the first: they run only
    // what these calls send.
    for (const earlier of opened.splice(0)) await earlier.close();
    const db = open({ pollMs: 600_000 });
    const beforeStandby = vi.fn(() => Promise.resolve());
    const run = (principal: typeof reader) =>
      runReadOnlySql(db, principal, {
        params: [],
        maxRows: 10,
        maxBytes: 10_000,
        schemas: null,
        sql: 'select pg_is_in_recovery()::text',
        beforeStandby,
      });
    const unsuitable = await reads('primary', 'unsuitable');
    const first = await run(outsider);
    expect(first.server).toMatchObject({ kind: 'primary' });
    expect(beforeStandby).toHaveBeenCalledTimes(1);
    // The connection that found the functions missing went back to the pool, not closed.
    const kept = await pair.sql(
      'standby',
      `select count(*)::int as n from pg_stat_activity
        where query like '%to_regprocedure%' and pid <> pg_backend_pid()`,
    );
    expect(kept[0]?.['n']).toBe(1);
    for (let i = 0; i < 2; i++) {
      const again = await run(outsider);
      expect(again.rows).toEqual([['false']]);
      expect(again.server).toMatchObject({ kind: 'primary' });
    }
    // Neither call picked the standby: no audit row before it, no second look at its catalog.
    expect(beforeStandby).toHaveBeenCalledTimes(1);
    expect(await reads('primary', 'unsuitable')).toBe(unsuitable + 3);
    // Another role's reads still go to the standby.
    const other = await run(reader);
    expect(other.rows).toEqual([['true']]);
    expect(beforeStandby).toHaveBeenCalledTimes(2);
  });

  it('reads the primary when the standby has not replayed a change the feed read in time, and the standby once it has', async () => {
    const db = open({ waitMs: 300 });
    expect((await read(db)).recovery).toBe(true);
    await pair.sql('standby', 'select pg_wal_replay_pause()');
    try {
      const fellBack = await reads('primary', 'behind_change');
      await changeAndReadLog(db);
      const primaryItems = (
        await pair.sql(
          'primary',
          'select count(*)::int as n from standby_items',
        )
      )[0]?.['n'] as number;
      const after = await read(db);
      expect(after).toMatchObject({ recovery: false, items: primaryItems });
      expect(await reads('primary', 'behind_change')).toBe(fellBack + 1);
      // A handle whose feed read no change has no floor: its reads stay on the paused standby.
      const other = open({});
      expect(await read(other)).toMatchObject({ recovery: true });
      expect((await read(other)).items).toBeLessThan(primaryItems);
    } finally {
      await pair.sql('standby', 'select pg_wal_replay_resume()');
    }
    await pair.caughtUp();
    expect(await read(db)).toMatchObject({ recovery: true });
  });

  it('waits for the standby to replay past a change the feed read, within the bound', async () => {
    const db = open({ waitMs: 60_000 });
    await pair.sql('standby', 'select pg_wal_replay_pause()');
    let waiting: Promise<Where> | undefined;
    try {
      const waited = await reads('standby', 'waited');
      await changeAndReadLog(db);
      waiting = read(db);
      // Still waiting while replay is paused: the read has not settled.
      const early = await Promise.race([
        waiting.then(() => 'settled'),
        new Promise((resolve) => setTimeout(() => resolve('waiting'), 300)),
      ]);
      expect(early).toBe('waiting');
      await pair.sql('standby', 'select pg_wal_replay_resume()');
      const where = await waiting;
      const primaryItems = (
        await pair.sql(
          'primary',
          'select count(*)::int as n from standby_items',
        )
      )[0]?.['n'] as number;
      expect(where).toMatchObject({ recovery: true, items: primaryItems });
      expect(await reads('standby', 'waited')).toBe(waited + 1);
    } finally {
      await pair.sql('standby', 'select pg_wal_replay_resume()');
      await waiting?.catch(() => undefined);
    }
  });

  it('sends reads to the primary while the standby lags past maxLagMs, logged once, or refuses them', async () => {
    const log = vi.fn();
    await pair.caughtUp();
    const db = open({ maxLagMs: 200, log });
    const refusing = open({ maxLagMs: 200, whenUnavailable: 'fail' });
    await waitFor(() => db.standbys?.states[0]?.state === 'up');
    expect((await read(db)).recovery).toBe(true);
    await pair.sql('standby', 'select pg_wal_replay_pause()');
    try {
      await pair.sql('primary', 'insert into standby_items values (default)');
      await waitFor(
        () =>
          db.standbys?.states.every((s) => s.state === 'lagging') === true &&
          refusing.standbys?.states.every((s) => s.state === 'lagging') ===
            true,
      );
      expect((await read(db)).recovery).toBe(false);
      expect((await read(db)).recovery).toBe(false);
      const error = await read(refusing).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as ProtocolError).key).toBe('UNAVAILABLE');
      const lagging = log.mock.calls.filter(([line]) =>
        String(line).includes('is lagging'),
      );
      expect(lagging).toHaveLength(1);
      expect(String(lagging[0]?.[0])).not.toContain('postgres://');
    } finally {
      await pair.sql('standby', 'select pg_wal_replay_resume()');
    }
    await waitFor(() => db.standbys?.states[0]?.state === 'up');
    expect((await read(db)).recovery).toBe(true);
    expect(log.mock.calls.at(-1)?.[0]).toMatch(/is up/);
  });

  it('falls back to the primary when the standby is down, and returns to it', async () => {
    const log = vi.fn();
    const db = open({ log });
    expect((await read(db)).recovery).toBe(true);
    pair.stopStandby();
    try {
      // The first read may find the standby gone before any poll did: it still answers.
      expect((await read(db)).recovery).toBe(false);
      await waitFor(() => db.standbys?.states[0]?.state === 'down');
      expect((await read(db)).recovery).toBe(false);
      const up = (await METRICS.standbyUp.get()).values.find(
        (value) => value.labels['standby'] === db.standbys?.states[0]?.label,
      );
      expect(up?.value).toBe(0);
      expect(
        log.mock.calls.filter(([line]) => /is down/.test(String(line))),
      ).toHaveLength(1);
    } finally {
      await pair.startStandby();
    }
    await waitFor(() => db.standbys?.states[0]?.state === 'up');
    expect((await read(db)).recovery).toBe(true);
  });

  it('pulls changes (changes_since) from the primary, and a read after a page that names a change sees it', async () => {
    const db = open({ waitMs: 300 });
    const source = await catalogSource(db);
    const call = { principal: reader, cancellation: { aborted: false } };
    const pull = async (token: string) => {
      const [content] = await readChanges(source, call, {
        token,
        pageSize: 100,
        retentionSeconds: 3600,
      });
      return JSON.parse(
        (JSON.parse(content ?? '{}') as { text: string }).text,
      ) as { changes: { uri: string }[]; token: string };
    };
    const { token } = await pull('');
    await pair.sql('standby', 'select pg_wal_replay_pause()');
    try {
      const uri = `test://standby/pulled-${Date.now()}`;
      await pair.sql(
        'primary',
        `insert into pgmcp.resources (uri, name, text, readers)
         values ('${uri}', 'n', 't', '{public}')`,
      );
      const page = await pull(token);
      expect(page.changes.map((change) => change.uri)).toContain(uri);
      // The paused standby has not replayed what the page named: the read goes to the primary.
      expect((await read(db)).recovery).toBe(false);
    } finally {
      await pair.sql('standby', 'select pg_wal_replay_resume()');
    }
  });

  it('finds a standby that stops answering (lost without a reset) down within the bound, and sends reads to the primary', async () => {
    const db = open({ pollMs: 100 });
    expect((await read(db)).recovery).toBe(true);
    pair.freezeStandby();
    try {
      await waitFor(() => db.standbys?.states[0]?.state === 'down');
      expect((await read(db)).recovery).toBe(false);
    } finally {
      pair.thawStandby();
    }
    await waitFor(() => db.standbys?.states[0]?.state === 'up');
    expect((await read(db)).recovery).toBe(true);
  });

  it('exposes the standby series in a form promtool accepts, with no credentials', async () => {
    const { body } = await metricsExposition();
    const label = new URL(pair.standbyUrl).host;
    expect(body).toContain(`pgmcp_standby_up{standby="${label}"}`);
    expect(body).toContain(`pgmcp_standby_lag_bytes{standby="${label}"}`);
    expect(body).toMatch(
      /pgmcp_standby_reads_total\{server="primary",reason="down"\} [1-9]/,
    );
    expect(body).toMatch(
      new RegExp(
        `pgmcp_standby_transitions_total\\{standby="${label}",state="lagging"\\} [1-9]`,
      ),
    );
    expect(body).not.toContain('postgres://');
    expectPromtoolAccepts(body);
  });

  it('stops reading from a standby that was promoted', async () => {
    const log = vi.fn();
    const db = open({ log });
    expect((await read(db)).recovery).toBe(true);
    await pair.promoteStandby();
    await waitFor(() => db.standbys?.states[0]?.state === 'promoted');
    expect((await read(db)).recovery).toBe(false);
    expect(
      log.mock.calls.some(([line]) => /is promoted/.test(String(line))),
    ).toBe(true);
  });
});
