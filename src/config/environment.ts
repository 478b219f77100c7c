// Flags, then environment variables, then defaults: the raw settings SettingsSchema checks, and the
// checks that need more than one value.
import { ConfigError } from '../errors.js';

/** Command-line flags that override environment variables (undefined = not given). */
export interface ConfigFlags {
  port?: string | undefined;
  host?: string | undefined;
  stdio?: boolean | undefined;
  migrate?: boolean | undefined;
  seed?: string | undefined;
  role?: string | undefined;
  allowUnsafeLogin?: boolean | undefined;
  /** The config file (JSON): catalog scope and row collections. */
  config?: string | undefined;
  /** More databases, each "name=postgres://…" (--database, repeatable). */
  databases?: string[] | undefined;
}

type Env = NodeJS.ProcessEnv;

/** Every setting as flags and environment give it (strings, before validation), with defaults. */
export function rawSettings(flags: ConfigFlags, env: Env) {
  return {
    database: databaseSetting(env),
    port: flags.port ?? env['PORT'] ?? '3000',
    host: hostSetting(flags, env),
    stdio: flags.stdio ?? false,
    migrate: flags.migrate ?? true,
    seed: flags.seed,
    stateDirectory: env['PGMCP_STATE_DIR'] ?? '.pgmcp',
    pageSize: env['PGMCP_PAGE_SIZE'] ?? '100',
    poolSize: env['PGMCP_POOL_SIZE'] ?? '10',
    poolWaitMs: env['PGMCP_POOL_WAIT_MS'] ?? '5000',
    statementTimeoutMs: env['PGMCP_STATEMENT_TIMEOUT_MS'] ?? '10000',
    maxBodyBytes: env['PGMCP_MAX_BODY_BYTES'] ?? String(1024 * 1024),
    maxDirectoryEntries: env['PGMCP_MAX_DIRECTORY_ENTRIES'] ?? '500',
    consentMinutes: env['PGMCP_CONSENT_MINUTES'] ?? '10',
    promptLimits: {
      maxArguments: env['PGMCP_PROMPT_MAX_ARGUMENTS'] ?? '32',
      maxArgumentBytes: env['PGMCP_PROMPT_MAX_ARGUMENT_BYTES'] ?? '8192',
      maxTables: env['PGMCP_PROMPT_MAX_TABLES'] ?? '20',
    },
    cursorSecrets: csv(env['PGMCP_CURSOR_SECRETS']),
    allowedHosts: (
      csv(env['PGMCP_ALLOWED_HOSTS']) ?? ['localhost', '127.0.0.1', '[::1]']
    ).map((name) => name.toLowerCase()),
    allowedOrigins: csv(env['PGMCP_ALLOWED_ORIGINS']) ?? [],
    auth: authSettings(env),
    live: liveSettings(env),
    limits: {
      toolCallsPerToken: env['PGMCP_TOOL_CALLS_PER_TOKEN'] ?? '2',
      toolCallsPerRole: env['PGMCP_TOOL_CALLS_PER_ROLE'] ?? '4',
      toolConnections: nonEmpty(env['PGMCP_TOOL_CONNECTIONS']),
      toolWaitMs: env['PGMCP_TOOL_WAIT_MS'] ?? '1000',
      feedPoolSize: env['PGMCP_FEED_POOL_SIZE'] ?? '2',
      lockTimeoutMs: env['PGMCP_LOCK_TIMEOUT_MS'] ?? '2000',
    },
    query: {
      maxBytes: env['PGMCP_QUERY_MAX_BYTES'] ?? '24576',
      maxCost: env['PGMCP_QUERY_MAX_COST'] ?? '1000000000',
      tempFileLimitKb: env['PGMCP_QUERY_TEMP_FILE_LIMIT_KB'] ?? '1048576',
      auditTextBytes: env['PGMCP_AUDIT_TEXT_BYTES'] ?? '4096',
    },
    role: flags.role ?? nonEmpty(env['PGMCP_ROLE']),
    tokenlessScopes: nonEmpty(env['PGMCP_SCOPES'])?.trim().split(/\s+/),
    allowUnsafeLogin:
      flags.allowUnsafeLogin ?? env['PGMCP_ALLOW_UNSAFE_LOGIN'] === '1',
    operations: operationsSettings(env),
    changeCapture: {
      source: env['PGMCP_CHANGE_SOURCE'] ?? 'triggers',
      slotMaxBytes: env['PGMCP_WAL_SLOT_MAX_BYTES'] ?? String(1024 ** 3),
      maxTransactionRows: env['PGMCP_WAL_MAX_TRANSACTION_ROWS'] ?? '10000',
      maxPendingRows: env['PGMCP_WAL_MAX_PENDING_ROWS'] ?? '100000',
    },
  };
}

/** Issue 35: the admin listener (metrics, probes) and the drain on SIGTERM. */
function operationsSettings(env: Env) {
  return {
    adminPort: nonEmpty(env['PGMCP_ADMIN_PORT']),
    adminHost: env['PGMCP_ADMIN_HOST'] ?? '127.0.0.1',
    drainDelayMs: env['PGMCP_DRAIN_DELAY_MS'] ?? '5000',
    shutdownGraceMs: env['PGMCP_SHUTDOWN_GRACE_MS'] ?? '30000',
  };
}

/** DATABASE_URL, else the PG* variables, else the embedded PostgreSQL. */
function databaseSetting(env: Env) {
  const usesPgVariables = [
    'PGHOST',
    'PGDATABASE',
    'PGUSER',
    'PGPORT',
    'PGSERVICE',
  ].some((name) => env[name] !== undefined && env[name] !== '');
  const databaseUrl = env['DATABASE_URL'];
  return databaseUrl !== undefined && databaseUrl !== ''
    ? { mode: 'external', connectionString: databaseUrl }
    : usesPgVariables
      ? { mode: 'external' }
      : { mode: 'embedded', port: nonEmpty(env['PGMCP_EMBEDDED_PORT']) };
}

function hostSetting(flags: ConfigFlags, env: Env): string {
  return flags.host ?? env['HOST'] ?? '127.0.0.1';
}

function authSettings(env: Env) {
  return {
    // Bearer tokens by default over HTTP; `none` must be asked for.
    mode: env['PGMCP_AUTH'] ?? 'jwt',
    secret: nonEmpty(env['PGMCP_JWT_SECRET']),
    jwksUrl: nonEmpty(env['PGMCP_JWKS_URL']),
    issuer: nonEmpty(env['PGMCP_JWT_ISSUER']),
    audience: nonEmpty(env['PGMCP_JWT_AUDIENCE']),
    roleClaim: env['PGMCP_ROLE_CLAIM'] ?? 'role',
    anonymousRole: nonEmpty(env['PGMCP_ANONYMOUS_ROLE']),
    cacheMaxEntries: env['PGMCP_JWT_CACHE_MAX_ENTRIES'] ?? '1000',
    cacheMaxLifetimeSeconds:
      env['PGMCP_JWT_CACHE_MAX_LIFETIME_SECONDS'] ?? '300',
    roleCacheMaxEntries: env['PGMCP_ROLE_CACHE_MAX_ENTRIES'] ?? '1000',
    roleCacheMaxAgeSeconds: env['PGMCP_ROLE_CACHE_MAX_AGE_SECONDS'] ?? '10',
  };
}

function liveSettings(env: Env) {
  return {
    maxStreams: env['PGMCP_MAX_STREAMS'] ?? '20000',
    maxStreamsPerRole: env['PGMCP_MAX_STREAMS_PER_ROLE'] ?? '5000',
    maxSubscriptionUris: env['PGMCP_MAX_SUBSCRIPTION_URIS'] ?? '1000',
    keepAliveMs: env['PGMCP_KEEPALIVE_MS'] ?? '15000',
    maxPendingBytes: env['PGMCP_MAX_PENDING_BYTES'] ?? String(1024 * 1024),
    stallTimeoutMs: env['PGMCP_STALL_TIMEOUT_MS'] ?? '30000',
    listChangedIntervalMs: env['PGMCP_LIST_CHANGED_INTERVAL_MS'] ?? '1000',
    changeRetentionSeconds: env['PGMCP_CHANGE_RETENTION_SECONDS'] ?? '86400',
    sharedDelivery: env['PGMCP_SHARED_DELIVERY'] ?? 'on',
    auditRetentionSeconds: env['PGMCP_AUDIT_RETENTION_SECONDS'] ?? '7776000',
    legacySessionIdleSeconds:
      env['PGMCP_LEGACY_SESSION_IDLE_SECONDS'] ?? '1800',
    maxLegacySessions: env['PGMCP_MAX_LEGACY_SESSIONS'] ?? '10000',
    maxLegacySessionsPerRole:
      env['PGMCP_MAX_LEGACY_SESSIONS_PER_ROLE'] ?? '1000',
  };
}

const LOOPBACK_BIND = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** Checks across settings: DATABASE_URL's scheme, and a public bind's Host allow-list. */
export function checkEnvironment(flags: ConfigFlags, env: Env): void {
  const databaseUrl = env['DATABASE_URL'];
  if (
    databaseUrl !== undefined &&
    databaseUrl !== '' &&
    !/^postgres(ql)?:\/\//.test(databaseUrl)
  ) {
    throw new ConfigError(
      'DATABASE_URL must be a postgres:// or postgresql:// URL, e.g. postgres://user:password@host:5432/dbname',
    );
  }
  const host = hostSetting(flags, env);
  if (!LOOPBACK_BIND.has(host) && env['PGMCP_ALLOWED_HOSTS'] === undefined) {
    throw new ConfigError(
      `HOST ${host} is not loopback, so clients will reach pgmcp by other names: list them in PGMCP_ALLOWED_HOSTS (e.g. PGMCP_ALLOWED_HOSTS=mcp.example.com), or "*" to accept any Host header (DNS rebinding protection then relies on Origin checks alone).`,
    );
  }
}

/** The config file: --config, PGMCP_CONFIG, or `fallback` (the embedded default's demo file). */
export function configFileSetting(
  flags: ConfigFlags,
  env: Env,
  fallback: string | undefined,
): string | undefined {
  return flags.config ?? nonEmpty(env['PGMCP_CONFIG']) ?? fallback;
}

/** --database entries, or PGMCP_DATABASES split on blanks. */
export function databaseEntries(flags: ConfigFlags, env: Env): string[] {
  return (
    flags.databases ??
    nonEmpty(env['PGMCP_DATABASES'])?.trim().split(/\s+/) ??
    []
  );
}

function csv(value: string | undefined): string[] | undefined {
  return value === undefined || value.trim() === ''
    ? undefined
    : value
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part !== '');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
