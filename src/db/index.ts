// Public surface of db/: pools, the request transaction, migrations, seeds, pgmcp's own tables, and
// the statement toolkit the features' statements/ folders build on (prepared statements, the
// compile-only Kysely builder and its sql tag, the table types, clients and write transactions).
export {
  createDatabase,
  type DatabaseHandle,
  type DatabaseOptions,
  type SessionConfig,
} from './pool.js';
export {
  withAdminClient,
  type AdminClient,
} from './connection/admin-client.js';
export { runRequestQuery, type Cancellation } from './request-transaction.js';
export type { ReadServer, StandbyOptions } from './standby/standby-options.js';
export type { PrimaryTarget } from './standby/primary-target.js';
export {
  explainSql,
  runReadOnlySql,
  SqlStatementError,
  storeRoleFunctions,
  type AdHocSqlOptions,
  type SqlColumn,
  type SqlRows,
  tablesOfSql,
} from './ad-hoc/index.js';
export {
  pruneAudit,
  trackAuditedCall,
  writeAudit,
  type AuditEntry,
} from './own-tables/audit-log.js';
export {
  loginMaySetTempFileLimit,
  statementDeadline,
  type StatementLimits,
} from './ad-hoc/statement-limits.js';
export {
  builder,
  pipelined,
  prepare,
  type PreparedQuery,
} from './connection/prepared.js';
export { sql } from 'kysely';
export type { Database } from './connection/schema.js';
export { writeOneStatement } from './connection/write-transaction.js';
export {
  HIDDEN_SCHEMAS,
  IN_SCOPE,
  RELATION_PRIVILEGE,
  VISIBLE_RELATION,
} from './catalog-visibility.js';
export {
  MigrationChangedError,
  migrationChecksum,
  runMigrations,
  type MigrationReport,
} from './setup/migrate.js';
export {
  listDatasets,
  loadSeed,
  seedLoaded,
  type SeedProgress,
} from './setup/seed.js';
export { loadSharedSecret } from './own-tables/secrets.js';
export { toDatabaseError } from './connection/sqlstate.js';
export {
  EmbeddedPostgresError,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from './setup/embedded.js';
export {
  AUTHENTICATOR_ROLE,
  authenticatorLogin,
  checkPoolRole,
  checkRequestRole,
  createRoleChecker,
  type RoleChecker,
  type RoleCheckerOptions,
  ENABLE_AUTHENTICATOR_LOGIN_HINT,
  enableAuthenticatorLogin,
  grantToAuthenticator,
  inspectLogin,
  inspectRequestLogin,
  ROLE_REFUSALS,
  type LoginFacts,
  type RoleVerdict,
} from './connection/login.js';
export {
  CHANGES_SINCE,
  type PulledChangeRow,
  CHANGE_VISIBILITY,
  READABLE_URIS,
  currentHorizon,
  changeLogBytes,
  pruneChanges,
  readChangePage,
  type ChangeKind,
  type ChangePage,
  type DatabaseHistory,
  type ChangePosition,
  type ChangeRow,
} from './own-tables/changes.js';
export {
  createFeedLeadership,
  latestChange,
  latestFeedBatch,
  readFeedBatches,
  registerFeedReplica,
  unregisterFeedReplica,
  type FeedBatch,
  type FeedLeadership,
} from './own-tables/feed-batches.js';
export {
  createClientSessionStore,
  type ClientSessionCheck,
  type ClientSessionRow,
  type ClientSessionStore,
} from './client-sessions.js';
export {
  CLIENT_SESSIONS_CHANNEL,
  type ClientSessionStreams,
  type ClientSessionStreamState,
  type ClientSubscribeOutcome,
} from './client-session-streams.js';
export {
  startWalCapture,
  type WalCapture,
  type WalCaptureOptions,
} from './wal/wal-capture.js';
export { useTriggerSource } from './wal/trigger-source.js';
export { type ChangeSourceKind } from './wal/capture-slot.js';
