// Connection pools: one for requests (read-only by default) and short-lived admin clients.
import pg from 'pg';
import { ProtocolError } from '../errors.js';
import { METRICS, observePool } from '../observability/index.js';
import { RequestPipelines } from './request-pipeline.js';
import { replicaApplicationName } from './application-name.js';
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
   * Most bytes of a statement's text (or any audited target) an audit row keeps
   * (PGMCP_AUDIT_TEXT_BYTES); default 4096.
   */
  readonly auditTextBytes?: number;
  /**
   * Connections in pg's pipeline mode for statements on pgmcp's own tables (db/request-pipeline.ts),
   * beside the pool; 0 sends those through the pool too. Default 2.
   */
  readonly pipelineConnections?: number;
  /**
   * Connections of the change feed's own pool (reading the change log, pruning it, the access
   * checks before a change is delivered), so live updates never wait behind requests. Default 2.
   */
  readonly feedPoolSize?: number;
  /**
   * Longest any statement on these sessions waits for a lock (lock_timeout), so a caller holding a
   * lock pgmcp needs cannot stall pgmcp's own work; past it the statement fails with 55P03, which
   * maps to UNAVAILABLE (db/sqlstate.ts). Default 2000; 0: no bound.
   */
  readonly lockTimeoutMs?: number;
}

/** The database handle the rest of pgmcp passes around; only db/ looks inside. */
export interface DatabaseHandle {
  /** Pool for request transactions; its sessions default to read-only, UTC and a statement timeout. */
  readonly pool: pg.Pool;
  /** Pipelined connections with the pool's session settings, for PreparedQuery.pipelined; or none. */
  readonly pipelines: RequestPipelines | undefined;
  /** The request pool's size (max connections). */
  readonly poolSize: number;
  /**
   * The change feed's handle: the same database and session settings over a small pool of its own
   * (DatabaseOptions.feedPoolSize) and no pipelines, so no request can hold up live updates. Its
   * `feed` is itself; closing the request handle closes it too.
   */
  readonly feed: DatabaseHandle;
  /** The session statement timeout of the request pool (PGMCP_STATEMENT_TIMEOUT_MS). */
  readonly statementTimeoutMs: number;
  /** Where audit rows go: db/audit-log.ts. */
  readonly audit: AuditChannel;
  /** A fresh read-write client for migrations, seeds and start-up work; the caller ends it. */
  connectAdmin(): Promise<pg.Client>;
  /** Settings for a dedicated session of this database (the LISTEN connection). */
  sessionConfig(applicationName: string): SessionConfig;
  close(): Promise<void>;
}

/**
 * The audit's own connection (one, beside the request pool: a call that found the pool full is
 * audited too), the text cap, and the audited calls under way, which close() waits for so that a
 * call cut by shutdown still leaves its row (issue 32 point 3).
 */
export interface AuditChannel {
  readonly pool: pg.Pool;
  readonly textBytes: number;
  readonly calls: Set<Promise<unknown>>;
}

/** Connection settings for a session outside the pool; pg.ClientConfig without importing pg. */
export interface SessionConfig {
  readonly connectionString?: string;
  /** This replica's name for the session (db/application-name.ts); the user's own wins. */
  readonly fallback_application_name: string;
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
    // Issue 34 point 4: which replica and pool, unless the URL or PGAPPNAME names the application.
    fallback_application_name: replicaApplicationName('pgmcp'),
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
    // lock_timeout: a caller that holds a lock pgmcp's own statements need (issue 32 point 8)
    // delays them by at most this much.
    options: `-c default_transaction_read_only=on -c statement_timeout=${options.statementTimeoutMs} -c lock_timeout=${options.lockTimeoutMs ?? 2000} -c TimeZone=UTC -c extra_float_digits=1 -c plan_cache_mode=force_generic_plan -c jit=off -c max_parallel_workers_per_gather=0`,
  };
  const pool = watchedPool(new pg.Pool(config), options);
  const pipelines = requestPipelines(config, options);
  const audit: AuditChannel = {
    pool: auditPool(options),
    textBytes: options.auditTextBytes ?? 4096,
    calls: new Set(),
  };
  const connectAdmin = () => connectAdminClient(options);
  const sessionConfig = (applicationName: string): SessionConfig =>
    dedicatedSession(options, applicationName);
  const feed = feedHandle(config, options, {
    audit,
    connectAdmin,
    sessionConfig,
  });
  // Issue 35: pgmcp_pool_connections reads the pool's counts at scrape time.
  const forget = observePool(() => ({
    total: pool.totalCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount,
  }));
  return {
    pool,
    pipelines,
    poolSize: options.poolSize,
    feed,
    statementTimeoutMs: options.statementTimeoutMs,
    audit,
    connectAdmin,
    sessionConfig,
    close: async () => {
      forget();
      await Promise.allSettled([...audit.calls]);
      await pipelines?.close();
      await pool.end();
      await feed.close();
      await audit.pool.end();
    },
  };
}

/** A fresh read-write client as the login (migrations, seeds, start-up work). */
async function connectAdminClient(
  options: DatabaseOptions,
): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: options.connectionString,
    fallback_application_name: replicaApplicationName('pgmcp-admin'),
    options: '-c TimeZone=UTC',
  });
  client.on('error', (error) =>
    options.onError('admin database connection failed', error),
  );
  await client.connect();
  return client;
}

/**
 * The change feed's handle: the request pool's settings over a small pool of its own and no
 * pipelines, sharing the audit channel and the admin and session helpers.
 */
function feedHandle(
  config: pg.PoolConfig,
  options: DatabaseOptions,
  shared: Pick<DatabaseHandle, 'audit' | 'connectAdmin' | 'sessionConfig'>,
): DatabaseHandle {
  const feedPool = watchedPool(
    new pg.Pool({
      ...config,
      max: options.feedPoolSize ?? 2,
      fallback_application_name: replicaApplicationName('pgmcp-feed'),
    }),
    options,
  );
  const feed: DatabaseHandle = {
    ...shared,
    pool: feedPool,
    pipelines: undefined,
    poolSize: options.feedPoolSize ?? 2,
    statementTimeoutMs: options.statementTimeoutMs,
    get feed() {
      return feed;
    },
    close: () => feedPool.end(),
  };
  return feed;
}

/** Settings for a session outside the pools (the LISTEN connection). */
function dedicatedSession(
  options: DatabaseOptions,
  applicationName: string,
): SessionConfig {
  return {
    ...(options.connectionString === undefined
      ? {}
      : { connectionString: options.connectionString }),
    fallback_application_name: replicaApplicationName(applicationName),
    options: '-c TimeZone=UTC',
  };
}

/** `pool` with the listeners that keep a lost connection from crashing the process. */
function watchedPool(pool: pg.Pool, options: DatabaseOptions): pg.Pool {
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
  return pool;
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
      fallback_application_name: replicaApplicationName('pgmcp-pipeline'),
      options: config.options,
      // Many requests wait on one socket: a peer gone silently (failover, NAT) is found by TCP.
      keepAlive: true,
    },
    connections,
    options.onError,
    // Issue 34 point 2: a caller waits one lock_timeout at most (one statement_timeout when
    // lock_timeout is off), not one per transaction queued ahead of it on its connection.
    (options.lockTimeoutMs ?? 2000) || options.statementTimeoutMs,
  );
}

/**
 * The audit's pool: one read-write connection (autocommit; each write is one statement), opened on
 * the first write, with the same wait bound and statement timeout as the request pool.
 */
function auditPool(options: DatabaseOptions): pg.Pool {
  const audit = new pg.Pool({
    connectionString: options.connectionString,
    max: 1,
    connectionTimeoutMillis: options.poolWaitMs ?? 5000,
    fallback_application_name: replicaApplicationName('pgmcp-audit'),
    options: `-c statement_timeout=${options.statementTimeoutMs} -c TimeZone=UTC`,
  });
  audit.on('error', (error) =>
    options.onError('idle audit connection failed', error),
  );
  audit.on('connect', (client) => {
    client.on('error', (error) =>
      options.onError('audit connection failed while in use', error),
    );
  });
  return audit;
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
