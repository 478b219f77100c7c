// What a database handle is made from (db/pool.ts), and the settings of a session outside its pools;
// apart from pool.ts so that the modules it builds on can name them without importing it.
import type { DriverShape } from './driver/index.js';
import type { StandbyOptions } from './standby/standby-options.js';

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
   * Connections in pg's pipeline mode for statements on pgmcp's own tables
   * (db/driver/request-pipeline.ts), beside the pool; 0 sends those through the pool too. Default 2.
   * None when the handle drives no driver internals.
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
   * maps to UNAVAILABLE (db/connection/sqlstate.ts). Default 2000; 0: no bound.
   */
  readonly lockTimeoutMs?: number;
  /**
   * Whether request transactions may drive pg's internals (src/db/driver/): "on" or "off";
   * default PGMCP_DRIVER_PATCHES. On, they still go through pg's public API when the start-up probe
   * finds the internals are not what it expects.
   */
  readonly driverPatches?: 'on' | 'off';
  /** The pg the probe checks; default the one loaded (tests simulate another pg with it). */
  readonly driverShape?: DriverShape;
  /** Where a warning goes (the internals turned off by the probe); default onError. */
  readonly onWarning?: (message: string) => void;
  /** Hot standbys that take this database's reads (docs/databases.md "Standbys"); none by default. */
  readonly standbys?: StandbyOptions | undefined;
}

/** Connection settings for a session outside the pool; pg.ClientConfig without importing pg. */
export interface SessionConfig {
  readonly connectionString?: string;
  /** This replica's name for the session (db/connection/application-name.ts); the user's own wins. */
  readonly fallback_application_name: string;
  readonly options: string;
  /** TCP keepalives on the session's socket. */
  readonly keepAlive: boolean;
}
