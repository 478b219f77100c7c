// A private PostgreSQL cluster with wal_level = logical, for the WAL change source's tests: the
// shared test server need not be one (and a test that restarts PostgreSQL must own its cluster).
// It is pgmcp's own embedded PostgreSQL (the binaries npm installed; root runs them as postgres).
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  createDatabase,
  startEmbeddedPostgres,
  startWalCapture,
  type DatabaseHandle,
  type EmbeddedPostgres,
  type WalCapture,
} from '../../src/db/index.js';
import { METRICS } from '../../src/observability/index.js';

/**
 * The WAL change source on `db` as tests run it: a replica that finds the slot busy tries again
 * every 200 ms, the slot's bound is checked only when a test asks, and its log lines (warnings
 * marked WARN) go to `lines`.
 */
export function startTestWalCapture(
  db: DatabaseHandle,
  lines: string[],
  slotMaxBytes = 256 * 1024 * 1024,
): Promise<WalCapture> {
  return startWalCapture({
    db,
    name: 'main',
    slotMaxBytes,
    log: (line) => lines.push(line),
    warn: (line) => lines.push(`WARN ${line}`),
    retryMs: 200,
    watchMs: 3_600_000,
  });
}

/** The WAL readers' handle on `url` (a database of a logical cluster), one connection. */
export function captureDatabase(url: string): DatabaseHandle {
  return createDatabase({
    connectionString: url,
    poolSize: 1,
    statementTimeoutMs: 10_000,
    onError: () => undefined,
  });
}

/** The database's capture epoch (a new one: every stream resyncs). */
export async function captureEpochIn(sql: pg.ClientBase): Promise<bigint> {
  const { rows } = await sql.query<{ epoch: string }>(
    'select epoch::text from pgmcp.change_capture',
  );
  return BigInt(rows[0]?.epoch ?? -1);
}

/** Logged changes of `relation` by the first value of their key, with their kind, in log order. */
export async function loggedKeysIn(
  sql: pg.ClientBase,
  relation: string,
): Promise<string[]> {
  const { rows } = await sql.query<{ key: string }>(
    `select detail->'key'->>0 || ':' || kind as key from pgmcp.changes
      where relation = $1 order by seq`,
    [relation],
  );
  return rows.map((row) => row.key);
}

/** pgmcp_wal_resyncs_total for the test WAL source (named main) and `reason`. */
export async function walResyncs(
  reason: 'large_transaction' | 'unnamed_key',
): Promise<number> {
  const { values } = await METRICS.walResyncs.get();
  return (
    values.find(
      (value) =>
        value.labels['database'] === 'main' &&
        value.labels['reason'] === reason,
    )?.value ?? 0
  );
}

export interface LogicalCluster {
  /** The cluster's postgres database, as its superuser. */
  readonly url: string;
  /** Stop PostgreSQL and start it again on the same port (a fast shutdown: sessions are cut). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Start a fresh cluster in a temporary folder, configured for logical replication. */
export async function startLogicalCluster(): Promise<LogicalCluster> {
  const stateDirectory = path.join(
    os.tmpdir(),
    `pgmcp-logical-${randomBytes(6).toString('hex')}`,
  );
  const log = (): void => undefined;
  let server: EmbeddedPostgres = await startEmbeddedPostgres({
    stateDirectory,
    log,
  });
  const admin = new pg.Client({ connectionString: server.connectionString });
  await admin.connect();
  try {
    await admin.query('alter system set wal_level = logical');
    await admin.query('alter system set max_wal_senders = 20');
    await admin.query('alter system set max_replication_slots = 20');
    // Keepalives soon enough that an idle slot's confirmed position moves within a test.
    await admin.query("alter system set wal_sender_timeout = '4s'");
  } finally {
    await admin.end();
  }
  const restart = async (): Promise<void> => {
    const { port } = server;
    await server.stop();
    server = await startEmbeddedPostgres({ stateDirectory, log, port });
    if (server.port !== port)
      throw new Error(
        `the cluster came back on port ${server.port}, not ${port}`,
      );
  };
  await restart();
  return {
    get url() {
      return server.connectionString;
    },
    restart,
    async stop() {
      await server.stop();
      rmSync(stateDirectory, { recursive: true, force: true });
    },
  };
}
