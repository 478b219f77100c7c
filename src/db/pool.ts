// Connection pools: one for requests (read-only by default) and short-lived admin clients.
import pg from 'pg';
import { ProtocolError } from '../errors.js';
import { METRICS, observePool } from '../observability/index.js';
import { replicaApplicationName } from './connection/application-name.js';
import { toDatabaseError } from './connection/sqlstate.js';
import { useDriverInternals, type RequestPipelines } from './driver/index.js';
import {
  auditPool,
  connectAdminClient,
  dedicatedSession,
  primaryPool,
  requestPipelines,
  watchedPool,
} from './connection/side-pools.js';
import { PrimaryTarget, serverLabel } from './standby/primary-target.js';
import { StandbySet, type ReadFloor } from './standby/standby-set.js';
import type { DatabaseOptions, SessionConfig } from './database-options.js';

export type { DatabaseOptions, SessionConfig } from './database-options.js';

/** The database handle the rest of pgmcp passes around; only db/ looks inside. */
export interface DatabaseHandle {
  /** Pool for request transactions; its sessions default to read-only, UTC and a statement timeout. */
  readonly pool: pg.Pool;
  /** Pipelined connections with the pool's session settings, for PreparedQuery.pipelined; or none. */
  readonly pipelines: RequestPipelines | undefined;
  /**
   * Request transactions go through the driver internals (src/db/driver/: one round trip each),
   * else through pg's public API. Decided once, when the handle is made.
   */
  readonly driverInternals: boolean;
  /** The request pool's size (max connections). */
  readonly poolSize: number;
  /**
   * The change feed's handle: the same database and session settings over a small pool of its own
   * (DatabaseOptions.feedPoolSize) and no pipelines, so no request can hold up live updates. Its
   * `feed` is itself; closing the request handle closes it too.
   */
  readonly feed: FeedHandle;
  /** The session statement timeout of the request pool (PGMCP_STATEMENT_TIMEOUT_MS). */
  readonly statementTimeoutMs: number;
  /** Where audit rows go: db/own-tables/audit-log.ts. */
  readonly audit: AuditChannel;
  /**
   * The standbys this handle's reads go to (db/standby/); undefined: every read runs on this
   * database. The feed's handle has none (FeedHandle).
   */
  readonly standbys: StandbySet | undefined;
  /**
   * The standbys' floor, which the change feed raises as it reads changes (db/own-tables/); the
   * same for the request handle and the feed's; undefined without standbys.
   */
  readonly floor: ReadFloor | undefined;
  /**
   * Which server is the primary now, when standbys are configured and failover follows a promoted
   * one (db/standby/primary-target.ts); undefined: always the configured URL.
   */
  readonly primary: PrimaryTarget | undefined;
  /** A fresh read-write client for migrations, seeds and start-up work; the caller ends it. */
  connectAdmin(): Promise<pg.Client>;
  /** Settings for a dedicated session of this database (the LISTEN connection). */
  sessionConfig(applicationName: string): SessionConfig;
  close(): Promise<void>;
}

/**
 * The change feed's handle: its reads (the log, the feed batches, the access checks of live
 * updates) run on its own pool on the primary, never on a standby: a standby's request pool would
 * make live updates wait behind requests, and with no standby up under whenUnavailable: fail every
 * batch would fail. It raises the standbys' floor (`floor`) all the same.
 */
export type FeedHandle = DatabaseHandle & { readonly standbys: undefined };

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

/** Create the request pool. No connection is opened until the first query. */
export function createDatabase(options: DatabaseOptions): DatabaseHandle {
  const driverInternals = useDriverInternals({
    setting: options.driverPatches,
    shape: options.driverShape,
    warn: (message) =>
      options.onWarning === undefined
        ? options.onError(message, new Error(message))
        : options.onWarning(message),
  });
  const config = requestPoolConfig(options);
  const primary = primaryTarget(options);
  const primaryUrl = () => primary?.url ?? options.connectionString;
  const pool = primaryPool(config, options, primary);
  const pipelines = driverInternals
    ? requestPipelines(config, options, primaryUrl)
    : undefined;
  primary?.onMove(() => pipelines?.reconnect());
  const audit: AuditChannel = {
    pool: auditPool(options, primary),
    textBytes: options.auditTextBytes ?? 4096,
    calls: new Set(),
  };
  const connectAdmin = () => connectAdminClient(options, primaryUrl);
  const sessionConfig = (applicationName: string): SessionConfig =>
    dedicatedSession(primaryUrl, applicationName);
  const standbys = standbySet(config, options, () => feed.pool);
  const feed = feedHandle(config, options, {
    driverInternals,
    audit,
    connectAdmin,
    sessionConfig,
    floor: standbys,
    primary,
  });
  // After a failover the standbys' positions (floor, lag) start again from the new primary.
  primary?.onMove((_from, to) => standbys?.primaryMoved(to));
  standbys?.start();
  primary?.start();
  const forget = observePoolCounts(pool);
  return {
    pool,
    pipelines,
    driverInternals,
    poolSize: options.poolSize,
    feed,
    statementTimeoutMs: options.statementTimeoutMs,
    audit,
    standbys,
    floor: standbys,
    primary,
    connectAdmin,
    sessionConfig,
    close: async () => {
      forget();
      await closePools(pool, { feed, audit, pipelines, standbys, primary });
    },
  };
}

/** Issue 35: pgmcp_pool_connections reads the pool's counts at scrape time; returns its removal. */
function observePoolCounts(pool: pg.Pool): () => void {
  return observePool(() => ({
    total: pool.totalCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount,
  }));
}

/** The request pool's settings, which the feed's pool and the standbys' pools start from. */
function requestPoolConfig(options: DatabaseOptions): pg.PoolConfig {
  return {
    connectionString: options.connectionString,
    max: options.poolSize,
    // Bounds both the wait in pg-pool's queue for a busy pool and the opening of a new connection.
    // A waiter that times out is taken off the queue (no client is handed to it later), so the
    // pool recovers once the load falls; the error maps to POOL_EXHAUSTED (db/connection/sqlstate.ts).
    connectionTimeoutMillis: options.poolWaitMs ?? 5000,
    // Issue 34 point 4: which replica and pool, unless the URL or PGAPPNAME names the application.
    fallback_application_name: replicaApplicationName('pgmcp'),
    // Session defaults, set once per connection at start-up: every request statement is read-only
    // unless a transaction says otherwise, and none runs longer than the timeout. Request
    // statements are prepared once per connection and run with their generic plan: they are
    // keyset pages and lookups by key, whose plan does not depend on the values. Left to choose,
    // PostgreSQL plans a statement with a LIMIT parameter again on every execution (it prices
    // the generic plan as if the limit were 10% of the table), which for the resources list
    // (resources/statements/resource-statements.ts) costs more than running it. No JIT and no parallel workers: a generic plan
    // is priced for parameters it cannot see, which can cross jit_above_cost (compiling on every
    // execution) or choose a parallel scan (starting workers on every execution). No request
    // statement runs long enough to gain from either. Figures: docs/benchmarks.md "History".
    // float8 prints in its shortest exact form (list entries, rendered by pgmcp.list_entry() when
    // a page is read, migration 0023), whatever the database or role defaults to.
    // lock_timeout: a caller that holds a lock pgmcp's own statements need (issue 32 point 8)
    // delays them by at most this much.
    options: `-c default_transaction_read_only=on -c statement_timeout=${options.statementTimeoutMs} -c lock_timeout=${options.lockTimeoutMs ?? 2000} -c TimeZone=UTC -c extra_float_digits=1 -c plan_cache_mode=force_generic_plan -c jit=off -c max_parallel_workers_per_gather=0`,
  };
}

/**
 * Close in order: the primary's checks stop, audited calls finish, then pipelines, standbys, the
 * pool, the feed, the audit.
 */
async function closePools(
  pool: pg.Pool,
  {
    feed,
    audit,
    pipelines,
    standbys,
    primary,
  }: Pick<
    DatabaseHandle,
    'feed' | 'audit' | 'pipelines' | 'standbys' | 'primary'
  >,
): Promise<void> {
  await primary?.close();
  await Promise.allSettled([...audit.calls]);
  await pipelines?.close();
  await standbys?.close();
  await pool.end();
  await feed.close();
  await audit.pool.end();
}

/**
 * The change feed's handle: the request pool's settings over a small pool of its own, no pipelines
 * and no standbys, sharing the audit channel, the admin and session helpers and the floor.
 */
function feedHandle(
  config: pg.PoolConfig,
  options: DatabaseOptions,
  shared: Pick<
    DatabaseHandle,
    | 'driverInternals'
    | 'audit'
    | 'connectAdmin'
    | 'sessionConfig'
    | 'floor'
    | 'primary'
  >,
): FeedHandle {
  const feedPool = primaryPool(
    {
      ...config,
      max: options.feedPoolSize ?? 2,
      fallback_application_name: replicaApplicationName('pgmcp-feed'),
    },
    options,
    shared.primary,
  );
  const feed: FeedHandle = {
    ...shared,
    pool: feedPool,
    pipelines: undefined,
    standbys: undefined,
    poolSize: options.feedPoolSize ?? 2,
    statementTimeoutMs: options.statementTimeoutMs,
    get feed() {
      return feed;
    },
    close: () => feedPool.end(),
  };
  return feed;
}

/**
 * The standbys' set, or none: each standby gets a pool with the request pool's settings, and the
 * primary's WAL position is read on the feed's pool (issue 36 point 1).
 */
function standbySet(
  config: pg.PoolConfig,
  options: DatabaseOptions,
  primary: () => pg.Pool,
): StandbySet | undefined {
  if (options.standbys === undefined || options.standbys.urls.length === 0)
    return undefined;
  return new StandbySet(options.standbys, {
    poolFor: (url) =>
      watchedPool(
        new pg.Pool({
          ...config,
          connectionString: url,
          fallback_application_name: replicaApplicationName('pgmcp-standby'),
          // A standby lost without a reset: its pooled sessions end when TCP finds it gone.
          keepAlive: true,
        }),
        options,
        undefined,
      ),
    primaryLsn: async () => {
      const { rows } = await primary().query<{ lsn: string }>(
        "select (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as lsn",
      );
      return BigInt(rows[0]?.lsn ?? '0');
    },
  });
}

/**
 * The database's primary target: with standbys configured and failover not off, the configured
 * primary and then the standbys are its candidates.
 */
function primaryTarget(options: DatabaseOptions): PrimaryTarget | undefined {
  const standbys = options.standbys;
  if (
    standbys === undefined ||
    standbys.urls.length === 0 ||
    standbys.failover === 'off' ||
    options.connectionString === undefined
  )
    return undefined;
  return new PrimaryTarget({
    candidates: [options.connectionString, ...standbys.urls],
    database: standbys.database ?? 'main',
    checkMs: standbys.failoverCheckMs ?? 1000,
    probeTimeoutMs: 2000,
    redact: standbys.redact ?? serverLabel,
    log: (message) => standbys.log(message, false),
  });
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
    // The primary may be gone: check it now rather than at the next tick.
    if (mapped instanceof ProtocolError && mapped.key === 'UNAVAILABLE')
      void db.primary?.check();
    if (mapped instanceof ProtocolError && mapped.key === 'POOL_EXHAUSTED')
      METRICS.poolExhaustions.inc();
    throw mapped;
  }
}
