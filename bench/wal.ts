// BENCH_ONLY=wal (issue 36 point 3): what the WAL change source costs writers. Single-row updates
// of an exposed table by four connections of another process (bench/wal-writers.ts), measured while
// pgmcp's WAL source reads the slot and logs each change, against the same writes while an inert
// pgoutput consumer decodes a publication of the same table and does nothing with it, and (context)
// while nothing reads the WAL. Where the source's cost goes: CPU of its walsender, of its log
// session and of the Node process that decodes, and the batches it logged. Then commit →
// notification latency: from an UPDATE's commit to the NOTIFY the source sends once it logged it.
import pg from 'pg';
import {
  createDatabase,
  runMigrations,
  type DatabaseHandle,
} from '../src/db/index.js';
import { MIGRATIONS_DIRECTORY } from '../src/config/index.js';
import type { Logger } from '../src/log.js';
import { startLogicalCluster } from '../test/setup/logical-cluster.js';
import { recreateDatabase } from '../test/setup/recreate-database.js';
import { percentile } from './notify-latency.js';
import {
  walSides,
  type Side,
  type SideRound,
  INERT_PUBLICATION,
} from './wal-sides.js';
import { writeElsewhere } from './wal-writers.js';
import { clientLatency, type ClientLatency } from './wal-client-latency.js';

const WRITERS = 4;
const ROWS = 1000;
const DATABASE = 'pgmcp_bench_wal';

export interface WalFigures {
  /** Seconds of writes per side and round, and the program that wrote. */
  readonly seconds: number;
  readonly writer: 'pgbench' | 'node';
  /** Median of the per-round ratios: pgmcp's source over the inert consumer. */
  readonly throughputRatio: number;
  /** The same, pgmcp's source over no WAL reader (context). */
  readonly vsNoneRatio: number;
  readonly ratios: readonly number[];
  readonly vsNoneRatios: readonly number[];
  readonly rounds: readonly Record<Side, SideRound>[];
  /** Milliseconds from an UPDATE's commit to the source's NOTIFY for it. */
  readonly commitToNotify: { readonly p50: number; readonly p99: number };
  readonly samples: number;
  /** From an UPDATE's commit to a listen stream's notification, served with each source. */
  readonly commitToClient: Record<'wal' | 'triggers', ClientLatency>;
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
  const url = await recreateDatabase(cluster?.url ?? serverUrl, DATABASE);
  const db = createDatabase({
    connectionString: url,
    poolSize: 2,
    statementTimeoutMs: 60_000,
    onError: (message, error) => options.logger.error(message, error),
  });
  try {
    await prepare(db);
    return await measure(db, { ...options, url });
  } finally {
    await db.close();
    await dropSlots(cluster?.url ?? serverUrl);
    await cluster?.stop();
  }
}

/** The rounds, then the latency; each round runs the three sides, every other round reversed. */
async function measure(
  db: DatabaseHandle,
  options: { logger: Logger; durationMs: number; rounds: number; url: string },
): Promise<WalFigures> {
  const seconds = Math.max(1, Math.round(options.durationMs / 1000));
  const sides = walSides(db, options.url);
  let writer: 'pgbench' | 'node' = 'pgbench';
  const write = async () => {
    const written = await writeElsewhere({
      url: options.url,
      clients: WRITERS,
      rows: ROWS,
      seconds,
    });
    writer = written.writer;
    return written.perSecond;
  };
  const order: Side[] = ['none', 'inert', 'capture'];
  const rounds: Record<Side, SideRound>[] = [];
  for (let round = 0; round < options.rounds; round += 1) {
    // ABBA over three sides: whatever drifts during a round falls on each side in turn.
    const sequence = round % 2 === 0 ? order : [...order].reverse();
    const figures: Partial<Record<Side, SideRound>> = {};
    for (const side of sequence) figures[side] = await sides.run(side, write);
    rounds.push(figures as Record<Side, SideRound>);
    options.logger.info(
      `wal bench round ${round + 1}: ${JSON.stringify(figures)}`,
    );
  }
  const ratio = (of: Side, to: Side) =>
    rounds.map((round) => round[of].perSecond / round[to].perSecond);
  const ratios = ratio('capture', 'inert');
  const vsNoneRatios = ratio('capture', 'none');
  const latency = await sides.withCapture(() => notifyLatency(options.url));
  const commitToClient = await clientLatency(options.url, DATABASE);
  return {
    seconds,
    writer,
    throughputRatio: median(ratios),
    vsNoneRatio: median(vsNoneRatios),
    ratios,
    vsNoneRatios,
    rounds,
    commitToNotify: { p50: latency.p50, p99: latency.p99 },
    samples: latency.samples,
    commitToClient,
  };
}

const median = (values: readonly number[]): number =>
  percentile(
    [...values].sort((a, b) => a - b),
    0.5,
  );

/** The bench database's slots (a database with slots cannot be dropped), ending their readers. */
async function dropSlots(serverUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(
      `select pg_terminate_backend(active_pid) from pg_replication_slots
        where database = $1 and active_pid is not null`,
      [DATABASE],
    );
    await client.query(
      `select pg_drop_replication_slot(slot_name) from pg_replication_slots
        where database = $1`,
      [DATABASE],
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
      -- Exposed under the wal source from the start: with capture triggers, the sides measured
      -- before the source's first round would pay for them.
      select pgmcp.use_change_source('wal');
      select pgmcp.expose_table('bench.items');
      create publication ${INERT_PUBLICATION} for table bench.items;
    `);
  } finally {
    await admin.end();
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
