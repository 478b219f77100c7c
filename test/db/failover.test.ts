// Failover (issue 36 point 4), against a real primary and a hot standby streaming from it
// (test/setup/standby-pair.ts): a primary that is only down is waited for; a lost primary whose
// standby was promoted is left for the standby, by the pools, the audit, LISTEN and the change
// feed (which resyncs its streams); an old primary started again is not gone back to.
// Serial, in this order: each test moves the pair's state (a promotion cannot be undone).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactConnectionString } from '../../src/config/index.js';
import {
  createDatabase,
  type DatabaseHandle,
  type StandbyOptions,
} from '../../src/db/index.js';
import {
  followingClient,
  followPrimary,
} from '../../src/db/standby/following-pool.js';
import { PrimaryTarget } from '../../src/db/standby/primary-target.js';
import { METRICS, metricsExposition } from '../../src/observability/index.js';
import pg from 'pg';
import {
  call,
  listen,
  startTestServer,
  type ListenStream,
  type TestServer,
} from '../setup/harness.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { expectPromtoolAccepts } from '../setup/promtool.js';
import {
  pairStandbys,
  startStandbyPair,
  waitFor,
  type StandbyPair,
} from '../setup/standby-pair.js';

const ROLE = 'failover_reader';
const URI = 'test://failover/watched';
let pair: StandbyPair;
/** The pair's URLs with a password (trust auth ignores it): it must never reach a log. */
let primaryUrl: string;
let standbyUrl: string;
let server: TestServer | undefined;
let stream: ListenStream | undefined;
const logLines: string[] = [];
const opened: DatabaseHandle[] = [];

const withPassword = (url: string) =>
  url.replace('postgres@', 'postgres:failover-secret@');
const portOf = (url: string) => Number(new URL(url).port);

function standbySettings(log: (line: string) => void): StandbyOptions {
  return pairStandbys(
    { standbyUrl },
    {
      failover: 'follow',
      database: 'failover',
      redact: redactConnectionString,
      failoverCheckMs: 200,
      log,
    },
  );
}

/**
 * A pool of `max` following a target configured with the standby first (a check finds it in
 * recovery and moves to the primary, logging to `log`); only a move may close its idle sessions.
 */
function standbyFirstPool(
  database: string,
  max: number,
  log: string[],
): { target: PrimaryTarget; pool: pg.Pool } {
  const target = new PrimaryTarget({
    candidates: [standbyUrl, primaryUrl],
    database,
    checkMs: 3_600_000,
    probeTimeoutMs: 2000,
    redact: redactConnectionString,
    log: (line) => log.push(line),
  });
  const pool = new pg.Pool({
    connectionString: 'postgres://nobody@127.0.0.1:1/unused',
    max,
    idleTimeoutMillis: 0,
    Client: followingClient(target),
  });
  pool.on('error', () => undefined);
  followPrimary(pool, target);
  return { target, pool };
}

async function switches(): Promise<number> {
  const metric = await METRICS.primarySwitches.get();
  return (
    metric.values.find((value) => value.labels['database'] === 'failover')
      ?.value ?? 0
  );
}

/** The port of the server a fresh admin client of `db` reaches, and whether it takes writes. */
async function adminServer(
  db: DatabaseHandle,
): Promise<{ port: number; writable: boolean }> {
  const client = await db.connectAdmin();
  try {
    const { rows } = await client.query<{ port: number; writable: boolean }>(
      'select inet_server_port() as port, not pg_is_in_recovery() as writable',
    );
    return rows[0] as { port: number; writable: boolean };
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  pair = await startStandbyPair();
  primaryUrl = withPassword(pair.primaryUrl);
  standbyUrl = withPassword(pair.standbyUrl);
  await migrateDatabase(pair.primaryUrl, async (admin) => {
    await admin.query(`create role ${ROLE}`);
    await admin.query(
      `insert into pgmcp.resources (uri, name, text, readers) values ($1, 'watched', 'v0', '{${ROLE}}')`,
      [URI],
    );
  });
  await pair.caughtUp();
}, 120_000);

afterAll(async () => {
  stream?.close();
  await server?.close();
  for (const db of opened) await db.close().catch(() => undefined);
  pair?.close();
});

describe('failover', () => {
  it('leaves a configured primary found in recovery for the writable candidate, closing idle sessions at once and a checked-out one when released', async () => {
    const log: string[] = [];
    // The "primary" configured is the standby: a check finds it in recovery.
    const { target, pool } = standbyFirstPool('failover-pool', 4, log);
    const where = async (client: pg.ClientBase) =>
      (
        await client.query<{ recovery: boolean; pid: number }>(
          'select pg_is_in_recovery() as recovery, pg_backend_pid() as pid',
        )
      ).rows[0] as { recovery: boolean; pid: number };
    const onStandby = async (pid: number) =>
      (
        await pair.sql(
          'standby',
          `select count(*)::int as n from pg_stat_activity where pid = ${pid}`,
        )
      )[0]?.['n'] === 1;
    try {
      const idle = await pool.connect();
      const held = await pool.connect();
      const idleAt = await where(idle);
      const heldAt = await where(held);
      expect([idleAt.recovery, heldAt.recovery]).toEqual([true, true]);
      idle.release();
      await target.check();
      expect(target.url).toBe(primaryUrl);
      expect(log).toEqual([
        `primary moved from ${redactConnectionString(standbyUrl)} to ${redactConnectionString(primaryUrl)} (timeline 1)`,
      ]);
      await waitFor(async () => !(await onStandby(idleAt.pid)));
      // The checked-out session still answers its holder, and is closed once released.
      expect((await where(held)).pid).toBe(heldAt.pid);
      held.release();
      await waitFor(async () => !(await onStandby(heldAt.pid)));
      const fresh = await pool.connect();
      try {
        expect((await where(fresh)).recovery).toBe(false);
      } finally {
        fresh.release();
      }
    } finally {
      await target.close();
      await pool.end();
    }
  }, 120_000);

  it('gives a request waiting for a full pool a session on the new primary, not the one released on the former', async () => {
    const { target, pool } = standbyFirstPool('failover-queue', 1, []);
    try {
      const held = await pool.connect();
      await target.check();
      expect(target.url).toBe(primaryUrl);
      const waiting = pool.connect();
      held.release();
      const next = await waiting;
      try {
        const { rows } = await next.query<{ recovery: boolean }>(
          'select pg_is_in_recovery() as recovery',
        );
        expect(rows[0]?.recovery).toBe(false);
      } finally {
        next.release();
      }
    } finally {
      await target.close();
      await pool.end();
    }
  }, 120_000);

  it('keeps the primary while it is only down, with no standby promoted, and uses it again when it is back', async () => {
    const log: string[] = [];
    const db = createDatabase({
      connectionString: primaryUrl,
      poolSize: 2,
      statementTimeoutMs: 30_000,
      onError: () => undefined,
      standbys: standbySettings((line) => log.push(line)),
    });
    opened.push(db);
    expect(await adminServer(db)).toEqual({
      port: portOf(primaryUrl),
      writable: true,
    });
    const before = await switches();
    pair.stopPrimary('fast');
    try {
      // Its only other candidate is a standby still in recovery: nothing to move to.
      await db.primary?.check();
      await db.primary?.check();
      expect(db.primary?.url).toBe(primaryUrl);
      await expect(db.connectAdmin()).rejects.toThrow();
    } finally {
      await pair.startPrimary();
    }
    await db.primary?.check();
    expect(db.primary?.url).toBe(primaryUrl);
    expect(await adminServer(db)).toEqual({
      port: portOf(primaryUrl),
      writable: true,
    });
    expect(await switches()).toBe(before);
    expect(log.filter((line) => line.includes('primary moved'))).toEqual([]);
    // Closed here: the next test's switch is counted under the same database label.
    await db.close();
  });

  it('follows a promoted standby when the primary is lost: writes, the audit, LISTEN, and a resync of every stream', async () => {
    await pair.caughtUp();
    server = await startTestServer({
      databaseUrl: primaryUrl,
      principal: { role: ROLE, claims: {} },
      standbys: standbySettings((line) => logLines.push(line)),
      live: {},
      // Polled this seldom, the feed hears of a change by LISTEN alone.
      changePath: { pollIntervalMs: 600_000 },
      logLines,
    });
    const db = server.db;
    stream = await listen(server.url, {
      resourceSubscriptions: [URI],
      resourcesListChanged: true,
    });
    await stream.waitFor((messages) => messages.length >= 1, 60_000);
    await pair.sql(
      'primary',
      `update pgmcp.resources set text = 'v1' where uri = '${URI}'`,
    );
    await stream.waitFor(
      () => stream?.updated().includes(URI) === true,
      60_000,
    );
    const heard = stream.updated().length;
    const listChanges = stream.listChanges();
    // Committed and replayed on the standby, then the primary is lost: delivered before the loss,
    // or covered by the resync.
    await pair.sql(
      'primary',
      `update pgmcp.resources set text = 'v2' where uri = '${URI}'`,
    );
    await pair.caughtUp();
    const before = await switches();
    pair.stopPrimary('immediate');
    await pair.promoteStandby();

    await waitFor(() => db.primary?.url === standbyUrl);
    expect(await switches()).toBe(before + 1);
    const moved = logLines.filter((line) =>
      line.includes('primary moved from'),
    );
    expect(moved).toHaveLength(1);
    expect(moved[0]).toContain(
      `primary moved from ${redactConnectionString(primaryUrl)} to ${redactConnectionString(standbyUrl)} (timeline 2)`,
    );
    expect(logLines.join('')).not.toContain('failover-secret');

    // The stream hears that what it watches may have changed: the feed read the log on the new
    // primary, on another timeline.
    await stream.waitFor(
      () =>
        stream !== undefined &&
        stream.listChanges() > listChanges &&
        stream.updated().slice(heard).includes(URI),
      60_000,
    );
    await waitFor(() =>
      logLines.some((line) => line.includes("the database's history changed")),
    );
    expect(logLines.join('')).toContain('timeline 1 → 2');

    // LISTEN is on the new primary: a change committed there reaches the stream.
    await waitFor(
      async () =>
        (
          await pair.sql(
            'standby',
            `select count(*)::int as n from pg_stat_activity where application_name like 'pgmcp-listener%'`,
          )
        )[0]?.['n'] === 1,
    );
    const afterResync = stream.updated().length;
    await pair.sql(
      'standby',
      `update pgmcp.resources set text = 'v3' where uri = '${URI}'`,
    );
    await stream.waitFor(
      () => stream?.updated().slice(afterResync).includes(URI) === true,
      60_000,
    );

    // A write on the primary: the query tool's audit rows land on the new one.
    const sql = `select current_user::text as who /* failover ${Date.now()} */`;
    const { error, result } = await call(server.url, 'tools/call', {
      name: 'query',
      arguments: { sql },
    });
    expect(error).toBeUndefined();
    expect(result?.['structuredContent']).toMatchObject({ rows: [[ROLE]] });
    const audit = await pair.sql(
      'standby',
      `select role from pgmcp.audit where target = '${sql.replace(/'/g, "''")}'`,
    );
    expect(audit).toEqual([{ role: ROLE }]);
    expect(await adminServer(db)).toEqual({
      port: portOf(standbyUrl),
      writable: true,
    });
  }, 180_000);

  it('stays on the promoted standby when the old primary comes back writable, even while the new one is down', async () => {
    const db = server?.db as DatabaseHandle;
    const before = await switches();
    await pair.startPrimary();
    expect(
      (await pair.sql('primary', 'select pg_is_in_recovery() as r'))[0]?.['r'],
    ).toBe(false);
    await db.primary?.check();
    expect(db.primary?.url).toBe(standbyUrl);
    // The new primary goes down: the old one is writable, but on an earlier timeline.
    pair.stopStandby();
    try {
      await db.primary?.check();
      await db.primary?.check();
      expect(db.primary?.url).toBe(standbyUrl);
    } finally {
      await pair.startStandby();
    }
    await db.primary?.check();
    expect(db.primary?.url).toBe(standbyUrl);
    expect(await switches()).toBe(before);
    expect(await adminServer(db)).toEqual({
      port: portOf(standbyUrl),
      writable: true,
    });
  });

  it('starts on the promoted standby when started after the failover with the old primary, writable again, configured', async () => {
    const log: string[] = [];
    const db = createDatabase({
      connectionString: primaryUrl,
      poolSize: 2,
      statementTimeoutMs: 30_000,
      onError: () => undefined,
      standbys: {
        ...standbySettings((line) => log.push(line)),
        database: 'failover-restart',
      },
    });
    opened.push(db);
    await db.primary?.check();
    expect(db.primary?.url).toBe(standbyUrl);
    expect(log.filter((line) => line.includes('primary moved'))).toHaveLength(
      1,
    );
    expect(await adminServer(db)).toEqual({
      port: portOf(standbyUrl),
      writable: true,
    });
  });

  it('exposes the failover series in a form promtool accepts, with no credentials', async () => {
    const { body } = await metricsExposition();
    const promoted = new URL(standbyUrl).host;
    const old = new URL(primaryUrl).host;
    expect(body).toMatch(
      /pgmcp_primary_switches_total\{database="failover"\} [1-9]/,
    );
    expect(body).toContain(
      `pgmcp_primary_candidate{database="failover",server="${promoted}"} 1`,
    );
    expect(body).toContain(
      `pgmcp_primary_candidate{database="failover",server="${old}"} 0`,
    );
    expect(body).not.toContain('failover-secret');
    expectPromtoolAccepts(body);
  });
});
