// What a query or explain call works with: its options, its outcome, the caller's errors, and the
// pooled connection lent to it (ToolSession) with what its clean-up must undo.
import type pg from 'pg';
import type { ImplicitTransaction } from '../driver/index.js';
import { type Cancellation } from '../request-transaction.js';
import { type StatementLimits } from './statement-limits.js';
import type { ReadServer } from '../standby/standby-options.js';

/** A column of a result: its name and PostgreSQL type (format_type). */
export interface SqlColumn {
  readonly name: string;
  readonly type: string;
}

/** A statement's outcome: each row's values as text as JSON renders them (null for NULL). */
export interface SqlRows {
  readonly columns: readonly SqlColumn[];
  readonly rows: readonly (readonly (string | null)[])[];
  /** More rows existed than `maxRows`, or their text passed `maxBytes`. */
  readonly truncated: boolean;
  /** Which bound cut the rows, when they were cut. */
  readonly truncatedBy?: 'max_rows' | 'max_bytes';
  /** Which server answered, when the database has standbys (docs/databases.md "Standbys"). */
  readonly server?: ReadServer;
}

/** A PostgreSQL error the caller's statement caused: shown to the caller, never a JSON-RPC error. */
export class SqlStatementError extends Error {
  /**
   * Where in PostgreSQL's source the error was raised (its untranslated routine and file), when
   * the server raised it: what tells a refusal of a server in recovery from the statement's own.
   */
  origin: { readonly routine?: string; readonly file?: string } | undefined;

  constructor(
    readonly sqlstate: string,
    message: string,
    readonly position: number | undefined,
  ) {
    super(message);
  }
}

export interface AdHocSqlOptions extends StatementLimits {
  readonly sql: string;
  /** Parameter values as PostgreSQL text (null for NULL). */
  readonly params: readonly (string | null)[];
  /** Schemas the statement may read (null: any the role may); also its search_path. */
  readonly schemas: readonly string[] | null;
  /** The request: once it is cancelled, the running statement is cancelled in PostgreSQL. */
  readonly cancellation?: Cancellation | { readonly aborted: boolean };
  /**
   * Runs on the primary before the statement goes to a standby (the call's audit row there); when
   * it fails, the call fails with it and nothing runs anywhere.
   */
  readonly beforeStandby?: (server: ReadServer) => Promise<void>;
}

/** A connection's functions for one role (see the file comment). */
export interface RoleFunctions {
  readonly fetch: string;
  readonly explain: string;
}

/** What a query call reads at most: rows, and bytes of their JSON text. */
export type FetchOptions = AdHocSqlOptions & {
  readonly maxRows: number;
  readonly maxBytes: number;
};

/** A pooled connection lent to one tool call, and what its clean-up must undo. */
export interface ToolSession {
  readonly client: pg.PoolClient;
  readonly functions: RoleFunctions;
  /** The call's transaction ended, its locks released: nothing to clean up. */
  ended: boolean;
  /** pgmcp_tool_statement may exist (explain with analyze). */
  prepared: boolean;
  /** A pipeline whose new prepared statements may be half-made (an error on their first use). */
  halfParsed?: ImplicitTransaction;
  /** What pgmcp put before the caller's text in the statement running now (error positions). */
  prefixLength: number;
  /** Why the connection cannot go back to the pool, found after the call ended. */
  tamperedWith?: Error;
  /** The per-request settings as pgmcp set them (beginReadOnly). */
  settings?: RequestSettings;
  /** The server the connection is on, when the database has standbys. */
  readonly server?: ReadServer | undefined;
}

/** The settings pgmcp sets per request, as set_config returned them (search_path when set). */
export interface RequestSettings {
  readonly role: string;
  readonly claims: string | null;
  readonly search_path?: string | null;
  /** current_user (SETTINGS_NOW only). */
  readonly user?: string;
}
