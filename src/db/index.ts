// Public surface of db/: pools, the request transaction, prepared queries, migrations, seeds.
export {
  createDatabase,
  type DatabaseHandle,
  type DatabaseOptions,
  type SessionConfig,
} from './pool.js';
export { withAdminClient, type AdminClient } from './admin-client.js';
export { commitProbeResource } from './probe-resource.js';
export { runRequestQuery, type Cancellation } from './request-transaction.js';
export {
  explainSql,
  runReadOnlySql,
  SqlStatementError,
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
} from './audit-log.js';
export {
  loginMaySetTempFileLimit,
  statementDeadline,
  type StatementLimits,
} from './statement-limits.js';
export { useConsentState } from './consent-states.js';
export {
  missingSensitiveEntries,
  resolveGuardNames,
  type GuardCatalog,
  type GuardLookup,
  type QualifiedName,
  type ReachedFunction,
  type SensitiveEntry,
} from './sql-guard-statements.js';
export {
  SEARCH_CATALOG,
  SEARCH_COLLECTION_ROWS,
  SEARCH_RESOURCES,
  type CatalogMatchRow,
  type SearchMatchRow,
} from './search-statements.js';
export {
  LIST_RESOURCES_PAGE,
  LIST_TEMPLATES_PAGE,
  READ_DIRECTORY,
  READ_RESOURCE,
  type ResourceContentRow,
  type ResourceListingRow,
  COLUMN,
  type TemplateListingRow,
} from './queries.js';
export { type PreparedQuery } from './prepared.js';
export {
  MigrationChangedError,
  migrationChecksum,
  runMigrations,
  type MigrationReport,
} from './migrate.js';
export {
  listDatasets,
  loadSeed,
  seedLoaded,
  type SeedProgress,
} from './seed.js';
export { loadSharedSecret } from './secrets.js';
export { toDatabaseError } from './sqlstate.js';
export {
  EmbeddedPostgresError,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from './embedded.js';
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
} from './login.js';
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
} from './changes.js';
export { TEMPLATE_COMPLETION_CANDIDATES } from './completion-statements.js';
export {
  CATALOG_NAMES,
  currentDatabaseName,
  DESCRIBE_NAMED_RELATIONS,
  DESCRIBE_RELATION,
  DESCRIBE_SCHEMA_RELATIONS,
  LIST_CATALOG_PAGE,
  DESCRIBE_SCHEMA,
  SAMPLE_VALUES,
  VISIBLE_TABLES,
  type SampledColumn,
} from './catalog-statements.js';
export {
  GET_PROMPT,
  LIST_PROMPTS_PAGE,
  RESOURCE_TAGS,
  TAGGED_RESOURCES,
  type PromptListingRow,
} from './prompt-statements.js';
export {
  DIRECTORY_ENTRIES,
  type DirectoryEntry,
} from './directory-statements.js';
export {
  NAVIGATOR,
  type NavigatorFacts,
  type NavigatorGroup,
  type NavigatorSchema,
} from './navigator-statements.js';
export {
  inspectCollection,
  LIST_COLLECTION_ROWS,
  READ_COLLECTION_ROW,
  setExposed,
} from './row-statements.js';
export {
  createLegacySessionStore,
  type LegacySessionRow,
  type LegacySessionStore,
} from './legacy-sessions.js';
