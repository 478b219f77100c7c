// The settings read from flags and the environment, as one zod schema: every value checked at
// start-up, each message naming the variable (or flag) and its bounds.
import { z } from 'zod';

const integer = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, `${name} must be at least ${min}`)
        .max(max, `${name} must be at most ${max}`),
    );

export const SettingsSchema = z.object({
  database: z.discriminatedUnion('mode', [
    z.object({
      mode: z.literal('embedded'),
      port: integer('PGMCP_EMBEDDED_PORT', 1, 65535).optional(),
    }),
    z.object({
      mode: z.literal('external'),
      connectionString: z.string().optional(),
    }),
  ]),
  port: integer('PORT (--port)', 0, 65535),
  host: z.string().min(1, 'HOST (--host) must not be empty'),
  stdio: z.boolean(),
  migrate: z.boolean(),
  seed: z
    .string()
    .regex(
      /^[a-z0-9_-]+$/,
      'the --seed dataset name may use a-z, 0-9, "_" and "-"',
    )
    .optional(),
  stateDirectory: z.string().min(1),
  pageSize: integer('PGMCP_PAGE_SIZE', 1, 1000),
  poolSize: integer('PGMCP_POOL_SIZE', 1, 1000),
  poolWaitMs: integer('PGMCP_POOL_WAIT_MS', 1, 600_000),
  statementTimeoutMs: integer('PGMCP_STATEMENT_TIMEOUT_MS', 1, 3_600_000),
  maxBodyBytes: integer('PGMCP_MAX_BODY_BYTES', 1024, 64 * 1024 * 1024),
  maxDirectoryEntries: integer('PGMCP_MAX_DIRECTORY_ENTRIES', 1, 10_000),
  consentMinutes: integer('PGMCP_CONSENT_MINUTES', 1, 1440),
  promptLimits: z.object({
    maxArguments: integer('PGMCP_PROMPT_MAX_ARGUMENTS', 1, 1000),
    maxArgumentBytes: integer('PGMCP_PROMPT_MAX_ARGUMENT_BYTES', 1, 1_048_576),
    maxTables: integer('PGMCP_PROMPT_MAX_TABLES', 1, 1000),
  }),
  cursorSecrets: z
    .array(
      z
        .string()
        .min(
          16,
          'each PGMCP_CURSOR_SECRETS entry must be at least 16 characters',
        ),
    )
    .optional(),
  allowedHosts: z.array(z.string()),
  allowedOrigins: z.array(
    z
      .string()
      .regex(
        /^(\*|https?:\/\/[^/\s]+)$/,
        'PGMCP_ALLOWED_ORIGINS entries look like https://app.example.com',
      ),
  ),
  auth: z.object({
    /** jwt: every HTTP request needs a bearer token; none: every caller runs as `role` (or the login). */
    mode: z.enum(['jwt', 'none'], {
      message: 'PGMCP_AUTH must be "jwt" or "none"',
    }),
    secret: z
      .string()
      .min(32, 'PGMCP_JWT_SECRET must be at least 32 characters')
      .optional(),
    jwksUrl: z.url({ message: 'PGMCP_JWKS_URL must be a URL' }).optional(),
    issuer: z.string().min(1).optional(),
    audience: z.string().min(1).optional(),
    roleClaim: z.string().min(1),
    anonymousRole: z.string().min(1).optional(),
    /** Verified tokens kept, so a token's signature is checked once, not per request; 0: off. */
    cacheMaxEntries: integer('PGMCP_JWT_CACHE_MAX_ENTRIES', 0, 1_000_000),
    cacheMaxLifetimeSeconds: integer(
      'PGMCP_JWT_CACHE_MAX_LIFETIME_SECONDS',
      0,
      86_400,
    ),
    /** Role decisions kept (does the role exist, may the login assume it); 0: off. */
    roleCacheMaxEntries: integer('PGMCP_ROLE_CACHE_MAX_ENTRIES', 0, 1_000_000),
    roleCacheMaxAgeSeconds: integer(
      'PGMCP_ROLE_CACHE_MAX_AGE_SECONDS',
      0,
      3600,
    ),
  }),
  live: z.object({
    maxStreams: integer('PGMCP_MAX_STREAMS', 0, 1_000_000),
    maxStreamsPerRole: integer('PGMCP_MAX_STREAMS_PER_ROLE', 0, 1_000_000),
    maxSubscriptionUris: integer('PGMCP_MAX_SUBSCRIPTION_URIS', 1, 100_000),
    keepAliveMs: integer('PGMCP_KEEPALIVE_MS', 1000, 3_600_000),
    maxPendingBytes: integer('PGMCP_MAX_PENDING_BYTES', 4096, 1024 ** 3),
    stallTimeoutMs: integer('PGMCP_STALL_TIMEOUT_MS', 100, 3_600_000),
    listChangedIntervalMs: integer(
      'PGMCP_LIST_CHANGED_INTERVAL_MS',
      0,
      3_600_000,
    ),
    changeRetentionSeconds: integer(
      'PGMCP_CHANGE_RETENTION_SECONDS',
      60,
      365 * 86_400,
    ),
    /** Issue 34 point 3: one replica decides who may hear each change for all (on), or each itself. */
    sharedDelivery: z.enum(['on', 'off'], {
      message: 'PGMCP_SHARED_DELIVERY must be "on" or "off"',
    }),
    /** How long pgmcp.audit keeps query and explain calls (issue 15). */
    auditRetentionSeconds: integer(
      'PGMCP_AUDIT_RETENTION_SECONDS',
      60,
      10 * 365 * 86_400,
    ),
    // Legacy (2025-11-25) HTTP sessions (issue 14): idle expiry and caps.
    legacySessionIdleSeconds: integer(
      'PGMCP_LEGACY_SESSION_IDLE_SECONDS',
      1,
      7 * 86_400,
    ),
    maxLegacySessions: integer('PGMCP_MAX_LEGACY_SESSIONS', 0, 1_000_000),
    maxLegacySessionsPerRole: integer(
      'PGMCP_MAX_LEGACY_SESSIONS_PER_ROLE',
      0,
      1_000_000,
    ),
  }),
  /** Issue 32 points 4 and 8: what one caller may hold, and how long pgmcp waits for a lock. */
  limits: z.object({
    /** query/explain calls in flight per token (its sub, else a digest of its claims). */
    toolCallsPerToken: integer('PGMCP_TOOL_CALLS_PER_TOKEN', 1, 10_000),
    /** query/explain calls in flight per role, every token of it together. */
    toolCallsPerRole: integer('PGMCP_TOOL_CALLS_PER_ROLE', 1, 100_000),
    /** Request pool connections query/explain may hold together; undefined: half the pool, at least 1. */
    toolConnections: integer('PGMCP_TOOL_CONNECTIONS', 1, 1000).optional(),
    /** Longest a query/explain call waits for one of those connections before it is refused. */
    toolWaitMs: integer('PGMCP_TOOL_WAIT_MS', 0, 60_000),
    /** The change feed's own pool, per database. */
    feedPoolSize: integer('PGMCP_FEED_POOL_SIZE', 1, 100),
    /** Longest any pooled statement waits for a lock (lock_timeout); 0: no bound. */
    lockTimeoutMs: integer('PGMCP_LOCK_TIMEOUT_MS', 0, 600_000),
  }),
  /** Bounds on each query and explain call (issue 32 point 5) and on its audit row (point 3). */
  query: z.object({
    /** Most bytes of rows (their JSON text) a query call fetches; the rest is cut, and said so. */
    maxBytes: integer('PGMCP_QUERY_MAX_BYTES', 1024, 64 * 1024 * 1024),
    /** Planned total cost above which a statement is refused before it runs; 0: no ceiling. */
    maxCost: integer('PGMCP_QUERY_MAX_COST', 0, 1e15),
    /** temp_file_limit (kB) of each call's transaction, when the login may set it; 0: not set. */
    tempFileLimitKb: integer('PGMCP_QUERY_TEMP_FILE_LIMIT_KB', 0, 2 ** 31 - 1),
    /** Most bytes of a statement's (or any audited) text an audit row keeps. */
    auditTextBytes: integer('PGMCP_AUDIT_TEXT_BYTES', 256, 1024 * 1024),
  }),
  /** The role stdio requests (and PGMCP_AUTH=none HTTP requests) run as; undefined = the login role. */
  role: z.string().min(1).optional(),
  /**
   * PGMCP_SCOPES: the OAuth scopes callers without a token hold (stdio, PGMCP_AUTH=none) when the
   * config file maps scopes; undefined: scopes do not limit them.
   */
  tokenlessScopes: z
    .array(
      z
        .string()
        .regex(
          /^[\x21\x23-\x5B\x5D-\x7E]+$/,
          'PGMCP_SCOPES is space-separated scopes without quotes or backslashes',
        ),
    )
    .optional(),
  allowUnsafeLogin: z.boolean(),
  /** Issue 35: the admin listener (metrics and probes; off unless a port is given) and the drain. */
  operations: z.object({
    adminPort: integer('PGMCP_ADMIN_PORT', 0, 65535).optional(),
    adminHost: z.string().min(1, 'PGMCP_ADMIN_HOST must not be empty'),
    drainDelayMs: integer('PGMCP_DRAIN_DELAY_MS', 0, 600_000),
    shutdownGraceMs: integer('PGMCP_SHUTDOWN_GRACE_MS', 0, 3_600_000),
  }),
  /**
   * Issue 36 point 2: where exposed tables' row changes come from, per database: capture triggers
   * (default) or the WAL (logical replication, pgoutput). "wal" or "triggers" for every database,
   * then name=wal / name=triggers for a --database name (the main database is "main").
   */
  changeCapture: z.object({
    source: z
      .string()
      .regex(
        /^\s*(triggers|wal|[A-Za-z0-9][A-Za-z0-9._-]*=(triggers|wal))?(\s+[A-Za-z0-9][A-Za-z0-9._-]*=(triggers|wal))*\s*$/,
        'PGMCP_CHANGE_SOURCE is "triggers" or "wal", optionally followed by name=triggers or name=wal for single databases (main for the main one), e.g. "triggers main=wal"',
      )
      .transform(parseChangeSource),
    /** Most WAL the slot may hold back before a running pgmcp drops it (and listeners resync). */
    slotMaxBytes: integer('PGMCP_WAL_SLOT_MAX_BYTES', 1024 * 1024, 2 ** 50),
    /** Most row changes kept of one transaction; a larger one is logged as a resync. */
    maxTransactionRows: integer(
      'PGMCP_WAL_MAX_TRANSACTION_ROWS',
      1,
      10_000_000,
    ),
    /** Most row changes waiting to be logged before the slot is not read until they are. */
    maxPendingRows: integer('PGMCP_WAL_MAX_PENDING_ROWS', 1, 100_000_000),
  }),
});

/** Where one database's row changes come from. */
export type ChangeSource = 'triggers' | 'wal';

/** PGMCP_CHANGE_SOURCE: the default, and the databases that differ from it. */
function parseChangeSource(value: string): {
  readonly default: ChangeSource;
  readonly databases: Readonly<Record<string, ChangeSource>>;
} {
  let fallback: ChangeSource = 'triggers';
  const databases: Record<string, ChangeSource> = {};
  for (const word of value.trim().split(/\s+/)) {
    if (word === '') continue;
    const [name, source] = word.split('=');
    if (source === undefined) fallback = name as ChangeSource;
    else if (name !== undefined) databases[name] = source as ChangeSource;
  }
  return { default: fallback, databases };
}

export type Settings = z.infer<typeof SettingsSchema>;
