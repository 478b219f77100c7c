// Flags, then environment → one zod-validated, frozen config, read once at start-up.
import { z } from 'zod';
import { ConfigError } from './errors.js';

/** Command-line flags that override environment variables (undefined = not given). */
export interface ConfigFlags {
  port?: string | undefined;
  host?: string | undefined;
  stdio?: boolean | undefined;
  migrate?: boolean | undefined;
  seed?: string | undefined;
  role?: string | undefined;
  allowUnsafeLogin?: boolean | undefined;
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
    z.object({ mode: z.literal('embedded') }),
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
  }),
  /** The role stdio requests (and PGMCP_AUTH=none HTTP requests) run as; undefined = the login role. */
  role: z.string().min(1).optional(),
  allowUnsafeLogin: z.boolean(),
});

export type Config = Readonly<z.infer<typeof ConfigSchema>>;

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
          : { mode: 'embedded' },
    port: flags.port ?? env['PORT'] ?? '3000',
    host,
    stdio: flags.stdio ?? false,
    migrate: flags.migrate ?? true,
    seed: flags.seed,
    stateDirectory: env['PGMCP_STATE_DIR'] ?? '.pgmcp',
    pageSize: env['PGMCP_PAGE_SIZE'] ?? '100',
    poolSize: env['PGMCP_POOL_SIZE'] ?? '10',
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
    },
    live: {
      maxStreams: env['PGMCP_MAX_STREAMS'] ?? '20000',
      maxStreamsPerRole: env['PGMCP_MAX_STREAMS_PER_ROLE'] ?? '5000',
      maxSubscriptionUris: env['PGMCP_MAX_SUBSCRIPTION_URIS'] ?? '1000',
      keepAliveMs: env['PGMCP_KEEPALIVE_MS'] ?? '15000',
      maxPendingBytes: env['PGMCP_MAX_PENDING_BYTES'] ?? String(1024 * 1024),
      stallTimeoutMs: env['PGMCP_STALL_TIMEOUT_MS'] ?? '30000',
      changeRetentionSeconds: env['PGMCP_CHANGE_RETENTION_SECONDS'] ?? '86400',
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
  const config = parsed.data;
  return Object.freeze(config);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/** A connection string safe to print: the password replaced. */
export function redactConnectionString(connectionString: string): string {
  return connectionString.replace(/(\/\/[^:/@]+:)[^@]*@/, '$1***@');
}
