// The connections beside the request pool: the audit's pool, the pipelined connections, admin
// clients and dedicated sessions, and the listeners every pool gets; each reaches the primary at
// the URL `primaryUrl` gives when it connects (db/standby/primary-target.ts follows a failover).
import pg from 'pg';
import { replicaApplicationName } from './application-name.js';
import { RequestPipelines } from '../driver/index.js';
import {
  followingClient,
  followPrimary,
  PrimaryMovedError,
} from '../standby/following-pool.js';
import type { PrimaryTarget } from '../standby/primary-target.js';
import type { DatabaseOptions, SessionConfig } from '../database-options.js';

/** The primary's URL now: undefined lets pg read the PG* environment variables. */
export type PrimaryUrl = () => string | undefined;

/**
 * A pool on the primary: with a target, its new connections go to the target's current URL and
 * its sessions on a former primary are closed (db/standby/following-pool.ts).
 */
export function primaryPool(
  config: pg.PoolConfig,
  options: DatabaseOptions,
  target: PrimaryTarget | undefined,
): pg.Pool {
  const pool = new pg.Pool(
    target === undefined
      ? config
      : { ...config, Client: followingClient(target) },
  );
  if (target !== undefined) followPrimary(pool, target);
  return watchedPool(pool, options, target);
}

/**
 * `pool` with the listeners that keep a lost connection from crashing the process; a lost
 * connection to the primary also has the target checked at once.
 */
export function watchedPool(
  pool: pg.Pool,
  options: DatabaseOptions,
  target: PrimaryTarget | undefined,
): pg.Pool {
  const failed = failures(options, target);
  // An idle client that loses its connection emits here; without a listener the process would crash.
  pool.on('error', failed('idle database connection failed'));
  // pg-pool takes its own 'error' listener off a client while it is checked out. A FATAL that
  // arrives between two statements (a server shutting down, pg_terminate_backend) would then be an
  // uncaught exception: every client gets this listener once, when it connects, and keeps it for
  // life. The next statement on a dead client fails, and the request path releases it as broken.
  pool.on('connect', (client) => {
    client.on('error', failed('database connection failed while in use'));
  });
  return pool;
}

/**
 * Error listeners that log a lost connection and have the target checked at once; a session
 * closed because the primary moved is no failure.
 */
function failures(
  options: DatabaseOptions,
  target: PrimaryTarget | undefined,
): (message: string) => (error: Error) => void {
  return (message) => (error) => {
    if (error instanceof PrimaryMovedError) return;
    options.onError(message, error);
    void target?.check();
  };
}

/** Pipelined connections with the pool's session settings (db/driver/request-pipeline.ts), or none. */
export function requestPipelines(
  config: pg.PoolConfig,
  options: DatabaseOptions,
  primaryUrl: PrimaryUrl,
): RequestPipelines | undefined {
  const connections = options.pipelineConnections ?? 2;
  if (connections === 0) return undefined;
  return new RequestPipelines({
    config: {
      // Read each time a pipelined connection is opened (the pipelines spread this config).
      get connectionString() {
        return primaryUrl();
      },
      connectionTimeoutMillis: config.connectionTimeoutMillis,
      fallback_application_name: replicaApplicationName('pgmcp-pipeline'),
      options: config.options,
      // Many requests wait on one socket: a peer gone silently (failover, NAT) is found by TCP.
      keepAlive: true,
    },
    connections,
    onError: options.onError,
    // Issue 34 point 2: a caller waits one bound at most, the shorter of lock_timeout and
    // statement_timeout (either 0: the other), not one per transaction queued ahead of it.
    waitBoundMs: waitBound(
      options.lockTimeoutMs ?? 2000,
      options.statementTimeoutMs,
    ),
  });
}

/** The shorter of two timeouts, where 0 means none; 0 when both are. */
function waitBound(lockTimeoutMs: number, statementTimeoutMs: number): number {
  const set = [lockTimeoutMs, statementTimeoutMs].filter((ms) => ms > 0);
  return set.length === 0 ? 0 : Math.min(...set);
}

/**
 * The audit's pool: one read-write connection (autocommit; each write is one statement), opened on
 * the first write, with the same wait bound and statement timeout as the request pool.
 */
export function auditPool(
  options: DatabaseOptions,
  target: PrimaryTarget | undefined,
): pg.Pool {
  const audit = new pg.Pool({
    connectionString: options.connectionString,
    max: 1,
    connectionTimeoutMillis: options.poolWaitMs ?? 5000,
    fallback_application_name: replicaApplicationName('pgmcp-audit'),
    options: `-c statement_timeout=${options.statementTimeoutMs} -c TimeZone=UTC`,
    ...(target === undefined ? {} : { Client: followingClient(target) }),
  });
  if (target !== undefined) followPrimary(audit, target);
  const failed = failures(options, target);
  audit.on('error', failed('idle audit connection failed'));
  audit.on('connect', (client) => {
    client.on('error', failed('audit connection failed while in use'));
  });
  return audit;
}

/** A fresh read-write client as the login on the primary (migrations, seeds, start-up work). */
export async function connectAdminClient(
  options: DatabaseOptions,
  primaryUrl: PrimaryUrl,
): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: primaryUrl(),
    fallback_application_name: replicaApplicationName('pgmcp-admin'),
    options: '-c TimeZone=UTC',
    // Some are held long (the WAL reader's writer, idle between transactions): a peer gone
    // without a reset is found by TCP.
    keepAlive: true,
  });
  client.on('error', (error) =>
    options.onError('admin database connection failed', error),
  );
  await client.connect();
  return client;
}

/** Settings for a session on the primary outside the pools (LISTEN, the WAL reader, the leader). */
export function dedicatedSession(
  primaryUrl: PrimaryUrl,
  applicationName: string,
): SessionConfig {
  const url = primaryUrl();
  return {
    ...(url === undefined ? {} : { connectionString: url }),
    fallback_application_name: replicaApplicationName(applicationName),
    options: '-c TimeZone=UTC',
    // Held for the process's life, often idle: a peer gone without a reset is found by TCP.
    keepAlive: true,
  };
}
