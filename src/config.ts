// Flags, then environment, then the optional config file → one zod-validated, frozen config, read
// once at start-up.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { PROJECT_ROOT } from './version.js';

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

/** The demo's config file, used by the embedded default when no other is given. */
export const DEMO_CONFIG_FILE = path.join(
  PROJECT_ROOT,
  'seeds',
  'demo',
  'pgmcp.config.json',
);

const identifier = z
  .string()
  .min(1, 'names must not be empty')
  .max(63, 'PostgreSQL names are at most 63 bytes');

/** The config file's shape (docs/databases.md "The config file"); unknown keys are mistakes, not ignored. */
const ConfigFileSchema = z
  .object({
    $schema: z.string().optional(),
    catalog: z
      .object({
        includeSchemas: z.array(identifier).optional(),
        excludeSchemas: z.array(identifier).optional(),
      })
      .strict()
      .optional(),
    collections: z
      .array(
        z
          .object({
            database: z.string().min(1).optional(),
            schema: identifier,
            table: identifier,
            list: z.boolean().optional(),
            titleColumn: identifier.optional(),
          })
          .strict(),
      )
      .optional(),
  })
  .strict();

/** A table whose rows are resources pg://{database}/{schema}/{table}/rows/{key}. */
export interface CollectionConfig {
  /** The database's name (its URI authority); undefined: the main database. */
  readonly database: string | undefined;
  readonly schema: string;
  readonly table: string;
  /** Whether resources/list lists its rows (after the catalog). */
  readonly list: boolean;
  /** A column whose text becomes each listed row's title. */
  readonly titleColumn: string | undefined;
}

/** Which schemas the catalog shows: `include` (all when null) minus `exclude`. */
export interface CatalogScope {
  readonly include: readonly string[] | null;
  readonly exclude: readonly string[];
}

const csv = (value: string | undefined): string[] | undefined =>
  value === undefined || value.trim() === ''
    ? undefined
    : value
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part !== '');

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

const ConfigSchema = z.object({
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
  }),
  live: z.object({
    maxStreams: integer('PGMCP_MAX_STREAMS', 0, 1_000_000),
    maxStreamsPerRole: integer('PGMCP_MAX_STREAMS_PER_ROLE', 0, 1_000_000),
    maxSubscriptionUris: integer('PGMCP_MAX_SUBSCRIPTION_URIS', 1, 100_000),
    keepAliveMs: integer('PGMCP_KEEPALIVE_MS', 1000, 3_600_000),
    maxPendingBytes: integer('PGMCP_MAX_PENDING_BYTES', 4096, 1024 ** 3),
    stallTimeoutMs: integer('PGMCP_STALL_TIMEOUT_MS', 100, 3_600_000),
    changeRetentionSeconds: integer(
      'PGMCP_CHANGE_RETENTION_SECONDS',
      60,
      365 * 86_400,
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
  /** The role stdio requests (and PGMCP_AUTH=none HTTP requests) run as; undefined = the login role. */
  role: z.string().min(1).optional(),
  allowUnsafeLogin: z.boolean(),
});

/** A database served besides the main one: its catalog and collections, under `name`. */
export interface DatabaseConfig {
  readonly name: string;
  readonly connectionString: string;
}

export type Config = Readonly<
  z.infer<typeof ConfigSchema> & {
    /** More databases (--database name=url, PGMCP_DATABASES): catalog, rows, live schema. */
    databases: readonly DatabaseConfig[];
    /** The config file read, if any. */
    configFile: string | undefined;
    catalog: CatalogScope;
    collections: readonly CollectionConfig[];
  }
>;

const LOOPBACK_BIND = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/**
 * Resolve configuration from flags and environment. Throws ConfigError whose message names the
 * setting and how to fix it; nothing is validated later, on a request.
 */
export function loadConfig(flags: ConfigFlags, env: NodeJS.ProcessEnv): Config {
  const usesPgVariables = [
    'PGHOST',
    'PGDATABASE',
    'PGUSER',
    'PGPORT',
    'PGSERVICE',
  ].some((name) => env[name] !== undefined && env[name] !== '');
  const databaseUrl = env['DATABASE_URL'];
  const host = flags.host ?? env['HOST'] ?? '127.0.0.1';
  const raw = {
    database:
      databaseUrl !== undefined && databaseUrl !== ''
        ? { mode: 'external', connectionString: databaseUrl }
        : usesPgVariables
          ? { mode: 'external' }
          : { mode: 'embedded', port: nonEmpty(env['PGMCP_EMBEDDED_PORT']) },
    port: flags.port ?? env['PORT'] ?? '3000',
    host,
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
    cursorSecrets: csv(env['PGMCP_CURSOR_SECRETS']),
    allowedHosts: (
      csv(env['PGMCP_ALLOWED_HOSTS']) ?? ['localhost', '127.0.0.1', '[::1]']
    ).map((name) => name.toLowerCase()),
    allowedOrigins: csv(env['PGMCP_ALLOWED_ORIGINS']) ?? [],
    auth: {
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
    },
    live: {
      maxStreams: env['PGMCP_MAX_STREAMS'] ?? '20000',
      maxStreamsPerRole: env['PGMCP_MAX_STREAMS_PER_ROLE'] ?? '5000',
      maxSubscriptionUris: env['PGMCP_MAX_SUBSCRIPTION_URIS'] ?? '1000',
      keepAliveMs: env['PGMCP_KEEPALIVE_MS'] ?? '15000',
      maxPendingBytes: env['PGMCP_MAX_PENDING_BYTES'] ?? String(1024 * 1024),
      stallTimeoutMs: env['PGMCP_STALL_TIMEOUT_MS'] ?? '30000',
      changeRetentionSeconds: env['PGMCP_CHANGE_RETENTION_SECONDS'] ?? '86400',
      legacySessionIdleSeconds:
        env['PGMCP_LEGACY_SESSION_IDLE_SECONDS'] ?? '1800',
      maxLegacySessions: env['PGMCP_MAX_LEGACY_SESSIONS'] ?? '10000',
      maxLegacySessionsPerRole:
        env['PGMCP_MAX_LEGACY_SESSIONS_PER_ROLE'] ?? '1000',
    },
    role: flags.role ?? nonEmpty(env['PGMCP_ROLE']),
    allowUnsafeLogin:
      flags.allowUnsafeLogin ?? env['PGMCP_ALLOW_UNSAFE_LOGIN'] === '1',
  };
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `  - ${issue.message}`)
      .join('\n');
    throw new ConfigError(
      `invalid configuration:\n${problems}\nSee README "Configuration" for every setting.`,
    );
  }
  if (
    databaseUrl !== undefined &&
    databaseUrl !== '' &&
    !/^postgres(ql)?:\/\//.test(databaseUrl)
  ) {
    throw new ConfigError(
      'DATABASE_URL must be a postgres:// or postgresql:// URL, e.g. postgres://user:password@host:5432/dbname',
    );
  }
  if (!LOOPBACK_BIND.has(host) && env['PGMCP_ALLOWED_HOSTS'] === undefined) {
    throw new ConfigError(
      `HOST ${host} is not loopback, so clients will reach pgmcp by other names: list them in PGMCP_ALLOWED_HOSTS (e.g. PGMCP_ALLOWED_HOSTS=mcp.example.com), or "*" to accept any Host header (DNS rebinding protection then relies on Origin checks alone).`,
    );
  }
  const configFile =
    flags.config ??
    nonEmpty(env['PGMCP_CONFIG']) ??
    (parsed.data.database.mode === 'embedded' ? DEMO_CONFIG_FILE : undefined);
  const file = configFile === undefined ? {} : readConfigFile(configFile);
  const databases = parseDatabases(
    flags.databases ??
      nonEmpty(env['PGMCP_DATABASES'])?.trim().split(/\s+/) ??
      [],
  );
  const collections = (file.collections ?? []).map((collection) => ({
    database: collection.database,
    schema: collection.schema,
    table: collection.table,
    list: collection.list ?? false,
    titleColumn: collection.titleColumn,
  }));
  const seen = new Set<string>();
  for (const { database, schema, table } of collections) {
    const key = JSON.stringify([database, schema, table]);
    if (seen.has(key))
      throw new ConfigError(
        `${configFile}: collection ${schema}.${table} is listed twice.`,
      );
    seen.add(key);
    if (
      database !== undefined &&
      !databases.some((entry) => entry.name === database)
    )
      throw new ConfigError(
        `${configFile}: collection ${schema}.${table} names database "${database}", which is not given with --database ${database}=… (or PGMCP_DATABASES).`,
      );
  }
  return Object.freeze({
    ...parsed.data,
    configFile,
    databases,
    catalog: {
      include: file.catalog?.includeSchemas ?? null,
      exclude: file.catalog?.excludeSchemas ?? [],
    },
    collections,
  });
}

/** "name=postgres://…" entries → databases; names are URI authorities, so a plain word each. */
function parseDatabases(entries: readonly string[]): DatabaseConfig[] {
  const databases: DatabaseConfig[] = [];
  for (const entry of entries) {
    const equals = entry.indexOf('=');
    const name = entry.slice(0, Math.max(equals, 0));
    const connectionString = entry.slice(equals + 1);
    if (
      equals <= 0 ||
      !/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(name) ||
      !/^postgres(ql)?:\/\//.test(connectionString)
    )
      throw new ConfigError(
        `--database (PGMCP_DATABASES) takes name=postgres://user:password@host/db, the name made of letters, digits, ".", "_" and "-" (got ${JSON.stringify(redactConnectionString(entry).slice(0, 80))}).`,
      );
    if (databases.some((database) => database.name === name))
      throw new ConfigError(`--database ${name} is given twice.`);
    databases.push({ name, connectionString });
  }
  return databases;
}

/** Read and validate the JSON config file; every problem says which file and which field. */
function readConfigFile(file: string): z.infer<typeof ConfigFileSchema> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(
      `cannot read the config file ${file} (PGMCP_CONFIG / --config): ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(
      `the config file ${file} is not valid JSON: ${(error as Error).message}`,
    );
  }
  const parsed = ConfigFileSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map(
        (issue) =>
          `  - ${issue.path.length === 0 ? '(top level)' : issue.path.join('.')}: ${issue.message}`,
      )
      .join('\n');
    throw new ConfigError(
      `invalid config file ${file}:\n${problems}\nSee docs/databases.md "The config file".`,
    );
  }
  return parsed.data;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/** A connection string safe to print: the password replaced. */
export function redactConnectionString(connectionString: string): string {
  return connectionString.replace(/(\/\/[^:/@]+:)[^@]*@/, '$1***@');
}
