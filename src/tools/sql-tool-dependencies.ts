// What the query and explain tools are built from: the database, the schemas they may read, the
// audit's settings, the bounds on each call, the consent gate and the statement guard.
import type { DatabaseHandle } from '../db/index.js';
import type { ConsentCheck } from '../protocol/index.js';
import type { SqlGuard } from './sql-guard/index.js';

/** What query and explain share: the database, which schemas they may read, the audit's settings. */
export interface SqlToolDependencies {
  readonly db: DatabaseHandle;
  /** The only schemas query and explain may read (null: any the role may). */
  readonly schemas: readonly string[] | null;
  readonly auditRetentionSeconds: number;
  /** Logs an audit write that failed (the call itself still answers). */
  readonly log: (line: string) => void;
  /**
   * Tables (or tables with columns) the config file marks sensitive, and the consent gate a
   * statement reading one must pass (issue 17); absent or empty: no statement asks.
   */
  readonly consent?: SqlConsent;
  /** The bounds on each call (PGMCP_QUERY_*, issue 32 point 5). */
  readonly limits: QueryLimits;
  /** The statement guard (sql-guard/): what a statement reaches, refused before anything runs. */
  readonly guard: SqlGuard;
}

/** The PGMCP_QUERY_* settings. */
export interface QueryLimits {
  /** Most bytes of rows' JSON text a query call fetches. */
  readonly maxBytes: number;
  /** Planned-cost ceiling; 0: none. */
  readonly maxCost: number;
  /** temp_file_limit (kB) per call's transaction; 0: the server's own. */
  readonly tempFileLimitKb: number;
}

/** What query needs of the consent gate: the sensitive tables and the check (resources/ consent.ts). */
export interface SqlConsent {
  readonly tables: readonly {
    readonly schema: string;
    readonly table: string;
  }[];
  readonly check: ConsentCheck;
}
