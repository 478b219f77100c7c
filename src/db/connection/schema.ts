// Kysely table types for what pgmcp owns (schema `pgmcp`); must match migrations/.
import type { ColumnType, Generated } from 'kysely';

export interface ResourcesTable {
  id: Generated<string>;
  uri: string;
  name: string;
  title: string | null;
  description: string | null;
  mime_type: string | null;
  text: string | null;
  blob: Buffer | null;
  size: ColumnType<string, never, never>;
  tags: string[];
  audience: string[] | null;
  priority: number | null;
  readers: string[];
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
  sensitive: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface ResourceTemplatesTable {
  id: Generated<string>;
  uri_template: string;
  name: string;
  title: string | null;
  description: string | null;
  mime_type: string | null;
  readers: string[];
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface PromptsTable {
  id: Generated<string>;
  name: string;
  title: string | null;
  description: string | null;
  // jsonb arrays (the table's checks); written as JSON text, since node-pg sends a JS array as a
  // Postgres array literal.
  arguments: ColumnType<unknown[], string | undefined, string>;
  messages: ColumnType<unknown[], string, string>;
  readers: string[];
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface MigrationsTable {
  name: string;
  applied_at: ColumnType<Date, never, never>;
}

export interface ServerSecretsTable {
  name: string;
  secret: string;
  created_at: ColumnType<Date, never, never>;
}

export interface ChangesTable {
  seq: Generated<string>;
  txid: ColumnType<string, never, never>;
  relation: string;
  uri: string | null;
  kind: 'created' | 'updated' | 'deleted' | 'schema';
  readers_before: string[] | null;
  readers_after: string[] | null;
  detail: unknown;
  changed_at: ColumnType<Date, never, never>;
}

/** Client sessions by id (migration 0012); the login reads only the keys and expiry. */
export interface ClientSessionsTable {
  id_hash: Buffer;
  principal_hash: Buffer;
  role: string | null;
  protocol_version: string;
  client_info: Record<string, unknown>;
  client_capabilities: Record<string, unknown>;
  log_level: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  last_seen_at: ColumnType<Date, Date | undefined, Date>;
  expires_at: Date;
}

export interface Database {
  'pgmcp.changes': ChangesTable;
  'pgmcp.legacy_sessions': ClientSessionsTable;
  'pgmcp.prompts': PromptsTable;
  'pgmcp.resources': ResourcesTable;
  'pgmcp.resource_templates': ResourceTemplatesTable;
  'pgmcp.migrations': MigrationsTable;
  'pgmcp.server_secrets': ServerSecretsTable;
}
