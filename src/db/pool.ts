// Connection pools: one for requests (read-only by default) and short-lived admin clients.
import pg from 'pg';
import { ProtocolError } from '../errors.js';
import { METRICS, observePool } from '../observability/index.js';
import { RequestPipelines } from './request-pipeline.js';
import { toDatabaseError } from './sqlstate.js';
import {
  installedPipelineDriver,
  pipelineDriverProblem,
  type PipelineDriver,
} from './implicit-transaction.js';

// PGMCP_DRIVER_PATCHES, read once at start-up: "off" sends request transactions through pg's
// public API (a round trip per statement) instead of db/implicit-transaction.ts, which drives pg
// internals: the way to run on a pg the pipeline was not verified with. Read here, not in config/:
// it picks the driver path of every pool, the CLI's, the bench's and the tests' included.
const DRIVER_PATCHES = process.env['PGMCP_DRIVER_PATCHES'] ?? 'on';
/** Whether request transactions go out through db/implicit-transaction.ts. */
export const PIPELINE = DRIVER_PATCHES !== 'off';

/** Refuse to start when the pipeline is on and `driver` is not the pg it was verified with. */
export function assertDriverPatches(
  driver: PipelineDriver = installedPipelineDriver(),
): void {
  if (DRIVER_PATCHES !== 'on' && DRIVER_PATCHES !== 'off')
    throw new Error(
      `PGMCP_DRIVER_PATCHES is "${DRIVER_PATCHES}"; it must be on or off`,
    );
  if (!PIPELINE) return;
  const problem = pipelineDriverProblem(driver);
  if (problem !== undefined)
    throw new Error(
      `pgmcp's request pipeline (db/implicit-transaction.ts) cannot run: ${problem}. ` +
        `Install the pinned pg (npm ci), or set PGMCP_DRIVER_PATCHES=off to send each statement ` +
        `through pg's public API (a round trip each).`,
    );
}

export interface DatabaseOptions {
  /** A postgres:// URL; undefined lets pg read the standard PG* environment variables. */
  readonly connectionString: string | undefined;
  readonly poolSize: number;
  readonly statementTimeoutMs: number;
  /** Longest a request waits for a pooled connection (queued or connecting); default 5000. */
  readonly poolWaitMs?: number;
  readonly onError: (message: string, error: unknown) => void;
  /**
   * Connections in pg's pipeline mode for statements on pgmcp's own tables (db/request-pipeline.ts),
   * beside the pool; 0 sends those through the pool too. Default 2.
   */
  readonly pipelineConnections?: number;
}

/** The database handle the rest of pgmcp passes around; only db/ looks inside. */
export interface DatabaseHandle {
  /** Pool for request transactions; its sessions default to read-only, UTC and a statement timeout. */
  readonly pool: pg.Pool;
  /** Pipelined connections with the pool's session settings, for PreparedQuery.pipelined; or none. */
  readonly pipelines: RequestPipelines | undefined;
  /** A fresh read-write client for migrations, seeds and start-up work; the caller ends it. */
  connectAdmin(): Promise<pg.Client>;
  /** Settings for a dedicated session of this database (the LISTEN connection). */
  sessionConfig(applicationName: string): SessionConfig;
  close(): Promise<void>;
}

/** Connection settings for a session outside the pool; pg.ClientConfig without importing pg. */
export interface SessionConfig {
  readonly connectionString?: string;
  readonly application_name: string;
  readonly options: string;
}

/** Create the request pool. No connection is opened until the first query. */
export function createDatabase(options: DatabaseOptions): DatabaseHandle {
  assertDriverPatches();
  const config: pg.PoolConfig = {
    connectionString: options.connectionString,
    max: options.poolSize,
    // Bounds both the wait in pg-pool's queue for a busy pool and the opening of a new connection.
    // A waiter that times out is taken off the queue (no client is handed to it later), so the
    // pool recovers once the load falls; the error maps to POOL_EXHAUSTED (db/sqlstate.ts).
    connectionTimeoutMillis: options.poolWaitMs ?? 5000,
    application_name: 'pgmcp',
    // Session defaults, set once per connection at start-up: every request statement is read-only
    // unless a transaction says otherwise, and none runs longer than the timeout. Request
    // statements are prepared once per connection and run with their generic plan: they are
    // keyset pages and lookups by key, whose plan does not depend on the values. Left to choose,
    // PostgreSQL plans a statement with a LIMIT parameter again on every execution (it prices
    // the generic plan as if the limit were 10% of the table), which for the resources list
    // (db/queries.ts) costs more than running it. No JIT and no parallel workers: a generic plan
    // is priced for parameters it cannot see, which can cross jit_above_cost (compiling on every
    // execution) or choose a parallel scan (starting workers on every execution). No request
    // statement runs long enough to gain from either. Figures: docs/benchmarks.md "History".
    // float8 prints in its shortest exact form (list entries, rendered by pgmcp.list_entry() when
    // a page is read, migration 0023), whatever the database or role defaults to.
    options: `-c default_transaction_read_only=on -c statement_timeout=${options.statementTimeoutMs} -c TimeZone=UTC -c extra_float_digits=1 -c plan_cache_mode=force_generic_plan -c jit=off -c max_parallel_workers_per_gather=0`,
  };
  const pool = new pg.Pool(config);
  const pipelines = requestPipelines(config, options);
  // An idle client that loses its connection emits here; without a listener the process would crash.
  pool.on('error', (error) =>
    options.onError('idle database connection failed', error),
  );
  // pg-pool takes its own 'error' listener off a client while it is checked out. A FATAL that
  // arrives between two statements (a server shutting down, pg_terminate_backend) would then be an
  // uncaught exception: every client gets this listener once, when it connects, and keeps it for
  // life. The next statement on a dead client fails, and the request path releases it as broken.
  pool.on('connect', (client) => {
    client.on('error', (error) =>
      options.onError('database connection failed while in use', error),
    );
  });

  async function connectAdmin(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: options.connectionString,
      application_name: 'pgmcp-admin',
      options: '-c TimeZone=UTC',
    });
    client.on('error', (error) =>
      options.onError('admin database connection failed', error),
    );
    await client.connect();
    return client;
  }

  // Issue 35: pgmcp_pool_connections reads the pool's counts at scrape time.
  const forget = observePool(() => ({
    total: pool.totalCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount,
  }));
  return {
    pool,
    pipelines,
    connectAdmin,
    sessionConfig: (applicationName) => ({
      ...(options.connectionString === undefined
        ? {}
        : { connectionString: options.connectionString }),
      application_name: applicationName,
      options: '-c TimeZone=UTC',
    }),
    close: async () => {
      forget();
      await pipelines?.close();
      await pool.end();
    },
  };
}

/** Pipelined connections with the pool's session settings (db/request-pipeline.ts), or none. */
function requestPipelines(
  config: pg.PoolConfig,
  options: DatabaseOptions,
): RequestPipelines | undefined {
  const connections = PIPELINE ? (options.pipelineConnections ?? 2) : 0;
  if (connections === 0) return undefined;
  return new RequestPipelines(
    {
      connectionString: config.connectionString,
      connectionTimeoutMillis: config.connectionTimeoutMillis,
      application_name: 'pgmcp',
      options: config.options,
      // Many requests wait on one socket: a peer gone silently (failover, NAT) is found by TCP.
      keepAlive: true,
    },
    connections,
    options.onError,
  );
}

/** A pool connection; failing to get one (unreachable, pool exhausted) is a mapped ProtocolError. */
export async function connectClient(
  db: DatabaseHandle,
): Promise<pg.PoolClient> {
  const started = performance.now();
  try {
    const client = await db.pool.connect();
    METRICS.poolWait.observe((performance.now() - started) / 1000);
    return client;
  } catch (error) {
    const mapped = toDatabaseError(error);
    if (mapped instanceof ProtocolError && mapped.key === 'POOL_EXHAUSTED')
      METRICS.poolExhaustions.inc();
    throw mapped;
  }
}
