// BENCH_ONLY=wal (issue 36 point 3): what the WAL change source costs writers. Single-row updates
// of an exposed table, by several writers at once, measured while pgmcp's WAL source reads the
// slot and logs each change, against the same writes while an inert pgoutput consumer decodes a
// publication of the same table and does nothing with it; the two alternate in ABBA order in one
// run. Then commit → notification latency: from an UPDATE's commit to the NOTIFY the source sends
// once it has logged the change (what wakes every replica's change feed).
import pg from 'pg';
import {
  createDatabase,
  runMigrations,
  startWalCapture,
  type DatabaseHandle,
} from '../src/db/index.js';
import { openReplicationStream } from '../src/db/wal/replication-stream.js';
import { MIGRATIONS_DIRECTORY } from '../src/config/index.js';
import type { Logger } from '../src/log.js';
import { startLogicalCluster } from '../test/setup/logical-cluster.js';
import { recreateDatabase } from '../test/setup/recreate-database.js';
import { alternate } from './alternate.js';
import { percentile } from './notify-latency.js';

const WRITERS = 4;
const ROWS = 1000;
const INERT_SLOT = 'bench_inert';
const INERT_PUBLICATION = 'bench_inert';

export interface WalFigures {
  /** Updates a second with pgmcp's WAL source over the same with the inert consumer, per round. */
  readonly throughputRatio: number;
  readonly rounds: readonly {
    readonly inertPerSecond: number;
    readonly capturePerSecond: number;
  }[];
  /** Milliseconds from an UPDATE's commit to the source's NOTIFY for it. */
  readonly commitToNotify: { readonly p50: number; readonly p99: number };
  readonly samples: number;
}

/**
 * The figures, on the server at `serverUrl` when it runs wal_level = logical, else on a private
 * logical cluster started for them.
 */
export async function walFigures(
  serverUrl: string,
  options: { logger: Logger; durationMs: number; rounds: number },
): Promise<WalFigures> {
  const cluster = (await isLogical(serverUrl))
    ? undefined
    : await startLogicalCluster();
  await dropSlots(cluster?.url ?? serverUrl);
  const url = await recreateDatabase(
    cluster?.url ?? serverUrl,
    'pgmcp_bench_wal',
  );
  const db = createDatabase({
    connectionString: url,
    poolSize: WRITERS,
    statementTimeoutMs: 60_000,
    onError: (message, error) => options.logger.error(message, error),
  });
  try {
    await prepare(db);
    const sides = walSides(db);
    const pairs = await alternate(
      options.rounds,
      () => sides.inert(() => writeFor(url, options.durationMs)),
      () => sides.capture(() => writeFor(url, options.durationMs)),
    );
    const rounds = pairs.map(([inert, capture]) => ({
      inertPerSecond: inert,
      capturePerSecond: capture,
    }));
    const ratios = rounds
      .map((round) => round.capturePerSecond / round.inertPerSecond)
      .sort((a, b) => a - b);
    const latency = await sides.capture(() => notifyLatency(url));
    return {
      throughputRatio: percentile(ratios, 0.5),
      rounds,
      commitToNotify: { p50: latency.p50, p99: latency.p99 },
      samples: latency.samples,
    };
  } finally {
    await db.close();
    await dropSlots(cluster?.url ?? serverUrl);
    await cluster?.stop();
  }
}

/** The bench database's slots (a database with slots cannot be dropped), ending their readers. */
async function dropSlots(serverUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(
      `select pg_terminate_backend(active_pid) from pg_replication_slots
        where database = 'pgmcp_bench_wal' and active_pid is not null`,
    );
    await client.query(
      `select pg_drop_replication_slot(slot_name) from pg_replication_slots
        where database = 'pgmcp_bench_wal'`,
    );
  } finally {
    await client.end();
  }
}

async function isLogical(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ wal_level: string }>(
      'show wal_level',
    );
    return rows[0]?.wal_level === 'logical';
  } finally {
    await client.end();
  }
}

/** pgmcp's schema, an exposed table, and the inert consumer's own publication. */
async function prepare(db: DatabaseHandle): Promise<void> {
  const admin = await db.connectAdmin();
  try {
    await runMigrations(admin, MIGRATIONS_DIRECTORY, () => undefined);
    await admin.query(`
      create schema bench;
      create table bench.items (id int primary key, v int not null default 0);
      insert into bench.items (id) select generate_series(1, ${ROWS});
      select pgmcp.expose_table('bench.items');
      create publication ${INERT_PUBLICATION} for table bench.items;
    `);
  } finally {
    await admin.end();
  }
}

/** Run `work` with one side reading the WAL: the inert consumer, or pgmcp's source. */
function walSides(db: DatabaseHandle): {
  inert<T>(work: () => Promise<T>): Promise<T>;
  capture<T>(work: () => Promise<T>): Promise<T>;
} {
  return {
    async inert(work) {
      // A fresh slot each round: what the other side's round wrote is no backlog for this one.
      await freshSlot(db, INERT_SLOT);
      const stream = openReplicationStream({
        session: db.sessionConfig('bench-inert'),
        slot: INERT_SLOT,
        publication: INERT_PUBLICATION,
        onTransactions: () => Promise.resolve(),
      });
      try {
        return await work();
      } finally {
        await stream.stop();
      }
    },
    async capture(work) {
      const capture = await startWalCapture({
        db,
        name: 'bench',
        slotMaxBytes: 2 ** 40,
        log: () => undefined,
        warn: () => undefined,
        retryMs: 100,
      });
      try {
        while (!capture.consuming)
          await new Promise((resolve) => setTimeout(resolve, 20));
        return await work();
      } finally {
        await capture.stop();
        // Likewise: the next capture round creates its slot anew.
        await freshSlot(db, capture.slot, false);
      }
    },
  };
}

/** Drop `slot` if it exists, and create it again unless `create` is false. */
async function freshSlot(
  db: DatabaseHandle,
  slot: string,
  create = true,
): Promise<void> {
  const admin = await db.connectAdmin();
  try {
    await admin.query(
      'select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = $1',
      [slot],
    );
    if (create)
      await admin.query(
        `select pg_create_logical_replication_slot($1, 'pgoutput')`,
        [slot],
      );
  } finally {
    await admin.end();
  }
}

/** Single-row updates by WRITERS connections for `durationMs`; updates committed a second. */
async function writeFor(url: string, durationMs: number): Promise<number> {
  const clients = await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      return client;
    }),
  );
  const started = performance.now();
  const deadline = started + durationMs;
  let committed = 0;
  try {
    await Promise.all(
      clients.map(async (client, writer) => {
        for (let n = writer; performance.now() < deadline; n += WRITERS) {
          await client.query({
            name: 'bench_wal_update',
            text: 'update bench.items set v = v + 1 where id = $1',
            values: [1 + (n % ROWS)],
          });
          committed += 1;
        }
      }),
    );
    return committed / ((performance.now() - started) / 1000);
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}

/** 200 updates one after another, each timed from its commit to the source's NOTIFY. */
async function notifyLatency(
  url: string,
): Promise<{ p50: number; p99: number; samples: number }> {
  const listener = new pg.Client({ connectionString: url });
  const writer = new pg.Client({ connectionString: url });
  await Promise.all([listener.connect(), writer.connect()]);
  let heard: (() => void) | undefined;
  listener.on('notification', () => heard?.());
  await listener.query('listen pgmcp_changes');
  const latencies: number[] = [];
  try {
    for (let sample = 0; sample < 200; sample += 1) {
      const notified = new Promise<void>((resolve) => {
        heard = resolve;
      });
      await writer.query('update bench.items set v = v + 1 where id = $1', [
        1 + sample,
      ]);
      const committed = performance.now();
      await notified;
      latencies.push(performance.now() - committed);
    }
  } finally {
    await Promise.all([listener.end(), writer.end()]);
  }
  latencies.sort((a, b) => a - b);
  return {
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    samples: latencies.length,
  };
}
