// The WAL change source keeps bounded memory whatever the transactions (PGMCP_WAL_MAX_TRANSACTION_ROWS,
// PGMCP_WAL_MAX_PENDING_ROWS): a transaction past the cap is logged as a new capture epoch (every
// stream resyncs) instead of its rows, batches are logged in bounded chunks, and the socket is not
// read while the backlog is over its bound. Own cluster: it needs wal_level = logical.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startWalCapture,
  type DatabaseHandle,
  type WalCapture,
} from '../../src/db/index.js';
import {
  openReplicationStream,
  type DecodedTransaction,
  type ReplicationStream,
} from '../../src/db/wal/replication-stream.js';
import type { CollectionConfig } from '../../src/resources/index.js';
import { rowUri } from '../../src/resources/catalog-uri.js';
import {
  listenFresh,
  startTestServer,
  until,
  type ListenStream,
  type TestServer,
} from '../setup/harness.js';
import {
  walResyncs,
  captureDatabase,
  captureEpochIn,
  loggedKeysIn,
  startLogicalCluster,
  type LogicalCluster,
} from '../setup/logical-cluster.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';

const DATABASE = 'pgmcp_wal_bounds_test';
const ROLE = 'pgmcp_wal_bounds';
const CHUNK_SLOTS = ['pgmcp_bounds_chunks', 'pgmcp_bounds_pause'] as const;
const CHUNK_PUBLICATION = 'pgmcp_bounds_chunks';
const COLLECTIONS: CollectionConfig[] = [
  {
    database: undefined,
    schema: 'inv',
    table: 'docs',
    list: true,
    titleColumn: 'body',
  },
];

let cluster: LogicalCluster;
let databaseUrl: string;
let sql: pg.Client;
let captureDb: DatabaseHandle;
let server: TestServer | undefined;
const streams: ListenStream[] = [];
const captures: WalCapture[] = [];
const replication: ReplicationStream[] = [];
const lines: string[] = [];

const doc = (id: number) =>
  rowUri(DATABASE, { schema: 'inv', table: 'docs' }, [String(id)]);

const captureEpoch = (): Promise<bigint> => captureEpochIn(sql);

/** Logged changes of inv.docs by key, in log order. */
const loggedKeys = (): Promise<string[]> => loggedKeysIn(sql, 'inv.docs');

async function currentLsn(): Promise<string> {
  const { rows } = await sql.query<{ lsn: string }>(
    'select pg_current_wal_lsn()::text as lsn',
  );
  return rows[0]?.lsn ?? '0/0';
}

beforeAll(async () => {
  cluster = await startLogicalCluster();
  databaseUrl = await recreateDatabase(cluster.url, DATABASE);
  await migrateDatabase(databaseUrl, async (admin) => {
    await admin.query(`
      create role ${ROLE} nologin;
      create schema inv;
      create table inv.docs (id int primary key, body text);
      insert into inv.docs select n, format('doc %s', n) from generate_series(1, 10) as n;
      create table inv.chunked (id serial primary key, v int);
      grant usage on schema inv to ${ROLE};
      grant select on inv.docs to ${ROLE};
      select pgmcp.expose_table('inv.docs');
      create publication ${CHUNK_PUBLICATION} for table inv.chunked;
    `);
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  sql.on('error', () => undefined);
  await sql.connect();
  captureDb = captureDatabase(databaseUrl);
  // A small cap: a transaction of more than 50 row changes keeps none of them.
  captures.push(
    await startWalCapture({
      db: captureDb,
      name: 'main',
      slotMaxBytes: 256 * 1024 * 1024,
      log: (line) => lines.push(line),
      warn: (line) => lines.push(`WARN ${line}`),
      retryMs: 200,
      watchMs: 3_600_000,
      maxTransactionRows: 50,
      maxPendingRows: 200,
    }),
  );
  server = await startTestServer({
    databaseUrl,
    principal: { role: ROLE, claims: {} },
    collections: COLLECTIONS,
    live: {},
    logLines: lines,
  });
}, 120_000);

afterAll(async () => {
  for (const stream of streams) stream.close();
  for (const stream of replication) await stream.stop();
  for (const running of captures) await running.stop();
  await server?.close();
  await captureDb?.close();
  await sql?.end().catch(() => undefined);
  await cluster?.stop();
});

describe('the wal source with bounded memory', () => {
  it('logs a transaction past PGMCP_WAL_MAX_TRANSACTION_ROWS as a new epoch, moves the slot past it, and logs later changes row by row', async () => {
    const [capture] = captures;
    const stream = await listenFresh(server as TestServer, {
      resourceSubscriptions: [doc(3)],
    });
    streams.push(stream);
    await sql.query(`update inv.docs set body = 'first' where id = 3`);
    await stream.waitFor(() => stream.updated().includes(doc(3)));
    const epoch = await captureEpoch();
    const logged = (await loggedKeys()).length;
    const heard = stream.updated().length;
    const resyncs = await walResyncs('large_transaction');
    // One transaction of 300 row changes, six times the cap.
    await sql.query(
      `insert into inv.docs select n, 'bulk' from generate_series(100, 399) as n`,
    );
    const after = await currentLsn();
    await until(
      async () => (await captureEpoch()) > epoch,
      30_000,
      'the large transaction to start a new epoch',
    );
    // Every stream is told its resources may have changed, though doc 3 was not in it.
    await stream.waitFor(() => stream.updated().length > heard, 30_000);
    expect(stream.updated().slice(heard)).toContain(doc(3));
    expect((await loggedKeys()).length).toBe(logged);
    expect(await walResyncs('large_transaction')).toBe(resyncs + 1);
    expect(
      lines.some((line) =>
        /WARN .*more than 50 rows \(PGMCP_WAL_MAX_TRANSACTION_ROWS\)/.test(
          line,
        ),
      ),
    ).toBe(true);
    await until(
      async () => {
        const { rows } = await sql.query<{ past: boolean }>(
          `select confirmed_flush_lsn >= $2::pg_lsn as past
             from pg_replication_slots where slot_name = $1`,
          [capture?.slot, after],
        );
        return rows[0]?.past === true ? true : undefined;
      },
      30_000,
      'the slot to be confirmed past the large transaction',
    );
    // The reader goes on as before: the next change is logged as its row.
    const resynced = stream.updated().length;
    await sql.query(`update inv.docs set body = 'later' where id = 3`);
    await stream.waitFor(
      () => stream.updated().slice(resynced).includes(doc(3)),
      30_000,
    );
    expect((await loggedKeys()).slice(logged)).toEqual(['3:updated']);
    expect(capture?.consuming).toBe(true);
  });

  it('hands over a backlog in batches of at most PGMCP_WAL_MAX_TRANSACTION_ROWS row changes', async () => {
    const gated = await gatedStream(CHUNK_SLOTS[0], 10_000);
    await writeBacklog(gated.application);
    // Nothing stopped the reading: the whole backlog waits.
    await until(
      () => (gated.stream.pendingRows === 300 ? true : undefined),
      30_000,
      () => `the backlog to be read (${gated.stream.pendingRows})`,
    );
    gated.open();
    const sizes = await handedOver(gated.batches);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(50);
  });

  it('stops reading the slot while the backlog is over PGMCP_WAL_MAX_PENDING_ROWS, and reads it again once it drains', async () => {
    const gated = await gatedStream(CHUNK_SLOTS[1], 40);
    await writeBacklog(gated.application);
    await until(
      () => (gated.stream.pendingRows > 40 ? true : undefined),
      30_000,
      () => `the backlog to pass the bound (${gated.stream.pendingRows})`,
    );
    // A reader that went on reading its socket would soon hold all 300 rows.
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Past the bound by at most the transaction that crossed it.
    expect(gated.stream.pendingRows).toBeLessThanOrEqual(50);
    gated.open();
    await handedOver(gated.batches);
    expect(gated.stream.pendingRows).toBe(0);
  });

  it('checks the slot on one session at a time, and gives up on a server that does not answer', async () => {
    // No stream or server opens sessions meanwhile: each session waiting below is a check's.
    for (const stream of streams.splice(0)) stream.close();
    await server?.close();
    server = undefined;
    // Checks every 50 ms, each bounded by 5 s (far past the 500 ms looked at below); it never
    // takes the slot (the first capture has it).
    const checking = await startWalCapture({
      db: captureDb,
      name: 'main',
      slotMaxBytes: 256 * 1024 * 1024,
      log: (line) => lines.push(line),
      warn: (line) => lines.push(`WARN ${line}`),
      retryMs: 3_600_000,
      watchMs: 50,
      checkTimeoutMs: 5000,
    });
    captures.push(checking);
    const locker = new pg.Client({ connectionString: databaseUrl });
    await locker.connect();
    // A new session waits for this lock while it starts: a server that does not answer.
    await locker.query('begin');
    await locker.query(
      'lock table pg_catalog.pg_database in access exclusive mode',
    );
    try {
      // Sessions starting (not yet in pg_stat_activity) that wait for the lock.
      const starting = async (): Promise<number> => {
        const { rows } = await locker.query<{ count: number }>(
          `select count(*)::int as count from pg_locks l
            where not l.granted and l.relation = 'pg_catalog.pg_database'::regclass
              and not exists (select from pg_stat_activity a where a.pid = l.pid)`,
        );
        return rows[0]?.count ?? 0;
      };
      await until(
        async () => ((await starting()) > 0 ? true : undefined),
        10_000,
        'a check to wait for the server',
      );
      // Ticks meanwhile start no second check.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await starting()).toBe(1);
      // The check gives up at its timeout and says so; the next tick checks again.
      await until(
        () =>
          lines.some((line) =>
            /WARN .*checking slot .* failed \(timeout expired\)/.test(line),
          )
            ? true
            : undefined,
        20_000,
        'the waiting check to time out',
      );
    } finally {
      await locker.query('rollback');
      await locker.end();
    }
    await checking.stop();
    captures.splice(captures.indexOf(checking), 1);
  });
});

interface GatedStream {
  readonly stream: ReplicationStream;
  readonly application: string;
  /** Each hand-over, in order. */
  readonly batches: DecodedTransaction[][];
  /** Let the first hand-over (and so every later one) finish. */
  open(): void;
}

/** A stream on a new `slot` whose first hand-over waits until opened, once it has begun. */
async function gatedStream(
  slot: string,
  maxPendingRows: number,
): Promise<GatedStream> {
  await sql.query(`select pg_create_logical_replication_slot($1, 'pgoutput')`, [
    slot,
  ]);
  const application = `pgmcp-bounds-${slot}`;
  const batches: DecodedTransaction[][] = [];
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const stream = openReplicationStream({
    session: {
      connectionString: databaseUrl,
      fallback_application_name: application,
      options: '',
      keepAlive: true,
    },
    slot,
    publication: CHUNK_PUBLICATION,
    maxTransactionRows: 50,
    maxPendingRows,
    onTransactions: async (transactions) => {
      batches.push([...transactions]);
      await gate;
    },
  });
  replication.push(stream);
  await sql.query('insert into inv.chunked (v) values (0)');
  await until(() => batches.length > 0, 30_000, 'the first hand-over');
  return { stream, application, batches, open };
}

/**
 * 30 transactions of 10 rows while the first hand-over waits, until the walsender of
 * `application` has sent them all (small enough for the sockets' buffers).
 */
async function writeBacklog(application: string): Promise<void> {
  for (let n = 1; n <= 30; n += 1)
    await sql.query(
      'insert into inv.chunked (v) select $1 from generate_series(1, 10)',
      [n],
    );
  const end = await currentLsn();
  await until(
    async () => {
      const { rows } = await sql.query<{ sent: boolean }>(
        `select sent_lsn >= $2::pg_lsn as sent from pg_stat_replication
          where application_name = $1`,
        [application, end],
      );
      return rows[0]?.sent === true ? true : undefined;
    },
    30_000,
    'the walsender to send every transaction',
  );
}

/** Wait for every transaction of the backlog (and the first) to be handed over; each batch's rows. */
async function handedOver(
  batches: readonly DecodedTransaction[][],
): Promise<number[]> {
  await until(
    () => (batches.flat().length >= 31 ? true : undefined),
    30_000,
    () => `every transaction handed over (${batches.flat().length})`,
  );
  const sizes = batches.map((batch) =>
    batch.reduce((sum, transaction) => sum + transaction.changes.length, 0),
  );
  expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(301);
  return sizes;
}
