// Server lifecycle: open the database (embedded or configured), migrate, seed, serve, shut down.
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createApp, createAuthenticate } from './app.js';
import { createProgress } from './cli/progress.js';
import {
  redactConnectionString,
  type CollectionConfig,
  type Config,
} from './config.js';
import { ConfigError } from './errors.js';
import {
  AUTHENTICATOR_ROLE,
  createDatabase,
  createRoleChecker,
  enableAuthenticatorLogin,
  inspectCollection,
  inspectLogin,
  loadSeed,
  loadSharedSecret,
  runMigrations,
  seedLoaded,
  startEmbeddedPostgres,
  type DatabaseHandle,
  type EmbeddedPostgres,
} from './db/index.js';
import { LOGIN_PRINCIPAL } from './auth/index.js';
import type { Logger } from './log.js';
import { startChangeFeed, type ChangeFeed } from './notifications/index.js';
import { catalogSource, type CatalogSource } from './resources/index.js';
import {
  createLineChannel,
  startHttpTransport,
  startStdioTransport,
  type HttpSecurity,
  type HttpTransport,
  type StdioTransport,
} from './transport/index.js';
import { PROJECT_ROOT } from './version.js';

export const MIGRATIONS_DIRECTORY = path.join(PROJECT_ROOT, 'migrations');
export const SEEDS_DIRECTORY = path.join(PROJECT_ROOT, 'seeds');

/** An open database: the configured one, or the embedded one this process started. */
export interface OpenDatabase {
  readonly db: DatabaseHandle;
  readonly embedded: EmbeddedPostgres | undefined;
  close(): Promise<void>;
}

/** Open the database named by config, starting the embedded PostgreSQL when none is configured. */
export async function openDatabase(
  config: Config,
  logger: Logger,
): Promise<OpenDatabase> {
  let embedded: EmbeddedPostgres | undefined;
  let connectionString: string | undefined;
  if (config.database.mode === 'embedded') {
    embedded = await startEmbeddedPostgres({
      stateDirectory: config.stateDirectory,
      log: (line) => logger.info(line),
      port: config.database.port,
    });
    connectionString = embedded.connectionString;
    logger.info(
      `embedded PostgreSQL on 127.0.0.1:${embedded.port} (data in ${path.resolve(config.stateDirectory, 'data')})`,
    );
  } else {
    connectionString = config.database.connectionString;
    logger.info(
      `database ${connectionString === undefined ? 'from PG* environment variables' : redactConnectionString(connectionString)}`,
    );
  }
  const db = configuredDatabase(config, connectionString, logger);
  return {
    db,
    embedded,
    async close() {
      await db
        .close()
        .catch((error: unknown) =>
          logger.error('closing the pool failed', error),
        );
      if (embedded !== undefined) {
        logger.info('stopping embedded PostgreSQL');
        await embedded.stop();
      }
    },
  };
}

/** A pool on `connectionString` (PG* variables when undefined) with the configured settings. */
export function configuredDatabase(
  config: Config,
  connectionString: string | undefined,
  logger: Logger,
): DatabaseHandle {
  return createDatabase({
    connectionString,
    poolSize: config.poolSize,
    poolWaitMs: config.poolWaitMs,
    statementTimeoutMs: config.statementTimeoutMs,
    onError: (message, error) => logger.error(message, error),
  });
}

type AdminClient = Awaited<ReturnType<DatabaseHandle['connectAdmin']>>;

async function applyMigrations(
  client: AdminClient,
  logger: Logger,
): Promise<void> {
  const report = await runMigrations(client, MIGRATIONS_DIRECTORY, (line) =>
    logger.info(line),
  );
  if (report.applied.length === 0)
    logger.info(`migrations up to date (${report.alreadyApplied} applied)`);
}

/** Apply pending migrations through one admin connection (another database's, say). */
async function migrateDatabase(
  db: DatabaseHandle,
  logger: Logger,
): Promise<void> {
  const client = await db.connectAdmin();
  try {
    await applyMigrations(client, logger);
  } finally {
    await client.end();
  }
}

/** Apply migrations, then load `dataset` if given, through one admin connection. */
export async function prepareDatabase(
  db: DatabaseHandle,
  logger: Logger,
  options: {
    migrate: boolean;
    seed?: string | undefined;
    seedUnlessLoaded?: string | undefined;
  },
): Promise<{ cursorSecret: string }> {
  const client = await db.connectAdmin();
  try {
    if (options.migrate) await applyMigrations(client, logger);
    const dataset = options.seed ?? options.seedUnlessLoaded;
    if (
      dataset !== undefined &&
      (options.seed !== undefined || !(await seedLoaded(client, dataset)))
    ) {
      logger.info(`loading dataset ${dataset}`);
      await loadSeed(
        client,
        SEEDS_DIRECTORY,
        dataset,
        createProgress(`seed ${dataset}`),
      );
    }
    return { cursorSecret: await loadSharedSecret(client, 'cursor') };
  } finally {
    await client.end();
  }
}

export interface RunningServer {
  /** The HTTP endpoint, or undefined over stdio. */
  readonly url: string | undefined;
  /** Resolves when the transport ends on its own (stdio: stdin closed). */
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

/** A secret kept in the state folder (.pgmcp/), created on first use, readable by root only. */
export function stateSecret(config: Config, name: string): string {
  const file = path.join(config.stateDirectory, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(config.stateDirectory, { recursive: true });
  const value = randomBytes(32).toString('base64url');
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  return value;
}

/**
 * The audience tokens must carry: this server's resource URL (RFC 8707), on `port` (the port
 * bound, which differs from config.port when that is 0).
 */
export function tokenAudience(config: Config, port = config.port): string {
  return (
    config.auth.audience ??
    `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}/mcp`
  );
}

/** The HS256 secret: configured, or (embedded default, no JWKS) generated once in .pgmcp/. */
export function jwtSecret(
  config: Config,
  options: { create: boolean } = { create: true },
): string | undefined {
  if (config.auth.secret !== undefined || config.auth.jwksUrl !== undefined)
    return config.auth.secret;
  if (config.database.mode !== 'embedded') return undefined;
  const file = path.join(config.stateDirectory, 'jwt-secret');
  if (!options.create && !existsSync(file)) {
    throw new ConfigError(
      `no development signing secret at ${path.resolve(file)}: run pgmcp token in the folder where npm start runs (after starting it once), or set PGMCP_JWT_SECRET.`,
    );
  }
  return stateSecret(config, 'jwt-secret');
}

/** Start serving per config. The caller owns signals and calls stop(). */
export async function startServer(
  config: Config,
  logger: Logger,
): Promise<RunningServer> {
  if (
    !config.stdio &&
    config.auth.mode === 'jwt' &&
    jwtSecret(config) === undefined &&
    config.auth.jwksUrl === undefined
  ) {
    throw new ConfigError(
      'HTTP requests need authentication: set PGMCP_JWT_SECRET (HS256, 32+ characters) or PGMCP_JWKS_URL (your identity provider), ' +
        'or PGMCP_AUTH=none to serve every caller as one role (PGMCP_ROLE). See README "Authorization".',
    );
  }
  const open = await openDatabase(config, logger);
  let requestDb: DatabaseHandle | undefined;
  const feeds: ChangeFeed[] = [];
  const extraDbs: DatabaseHandle[] = [];
  try {
    const { cursorSecret } = await prepareDatabase(open.db, logger, {
      migrate: config.migrate,
      seed: config.seed,
      seedUnlessLoaded: open.embedded !== undefined ? 'demo' : undefined,
    });
    requestDb =
      open.embedded === undefined
        ? open.db
        : await authenticatorDatabase(config, open, logger);
    if (!config.stdio) await refuseUnsafeLogin(config, requestDb, logger);
    const sources = [
      await catalogSource(requestDb, {
        scope: config.catalog,
        collections: config.collections.filter(
          (collection) => collection.database === undefined,
        ),
      }),
    ];
    for (const database of config.databases) {
      const db = configuredDatabase(config, database.connectionString, logger);
      extraDbs.push(db);
      logger.info(
        `database ${database.name}: ${redactConnectionString(database.connectionString)}`,
      );
      // Only migrations: cursors are signed with the main database's secret.
      if (config.migrate) await migrateDatabase(db, logger);
      if (!config.stdio) await refuseUnsafeLogin(config, db, logger);
      sources.push(
        await catalogSource(db, {
          name: database.name,
          scope: config.catalog,
          collections: config.collections.filter(
            (collection) => collection.database === database.name,
          ),
        }),
      );
    }
    const named = new Set<string>();
    for (const source of sources) {
      if (named.has(source.name))
        throw new ConfigError(
          `two databases are named ${source.name}: give --database another name (the main database is named after itself).`,
        );
      named.add(source.name);
      for (const collection of source.collections)
        await checkCollection(source, collection, logger);
    }
    const app = createApp({
      db: requestDb,
      sources,
      cursorSecrets: config.cursorSecrets ?? [cursorSecret],
      pageSize: config.pageSize,
      maxDirectoryEntries: config.maxDirectoryEntries,
      live: config.live,
      logger,
    });
    for (const source of sources) {
      feeds.push(
        await startChangeFeed({
          db: source.db,
          publish: (changes) => app.publish(source, changes),
          resync: () => app.resync(source),
          retentionSeconds: config.live.changeRetentionSeconds,
          log: (line) =>
            logger.info(
              sources.length === 1 ? line : `${source.name}: ${line}`,
            ),
        }),
      );
    }
    logger.info(
      `live updates: listening for changes on pgmcp_changes${sources.length === 1 ? '' : ` in ${sources.length} databases`}`,
    );
    let http: HttpTransport | undefined;
    let stdio: StdioTransport | undefined;
    if (config.stdio) {
      stdio = startStdioTransport({
        input: process.stdin,
        output: process.stdout,
        // Both eras on stdio (issue 14): the process is the legacy session.
        dispatcher: app.stdioDispatcher(createLineChannel(process.stdout)),
        principal:
          config.role === undefined
            ? LOGIN_PRINCIPAL
            : { role: config.role, claims: {} },
        maxMessageBytes: config.maxBodyBytes,
      });
    } else {
      const canAssume = createRoleChecker(requestDb, 10_000);
      http = await startHttpTransport({
        host: config.host,
        port: config.port,
        path: '/mcp',
        dispatcher: app.dispatcher,
        maxBodyBytes: config.maxBodyBytes,
        allowedHosts: config.allowedHosts,
        allowedOrigins: config.allowedOrigins,
        securityFor: (url) =>
          httpSecurity(
            config,
            tokenAudience(config, Number(new URL(url).port)),
            {
              canAssume,
              logger,
            },
          ),
        keepAliveMs: config.live.keepAliveMs,
        ready: () => readiness(feeds),
        log: (line) => logger.warn(line),
        // Issue 14: 2025-11-25 sessions on the same endpoint.
        legacy: app.legacyHttp,
      });
    }
    let stopping: Promise<void> | undefined;
    const requests = requestDb;
    return {
      url: http?.url,
      done:
        stdio?.closed ??
        new Promise<void>((resolve) =>
          http?.server.once('close', () => resolve()),
        ),
      stop() {
        stopping ??= (async () => {
          // Every listen stream gets its graceful result before the transports close.
          app.fanout.closeAll();
          await Promise.all(feeds.map((feed) => feed.stop()));
          stdio?.close();
          await stdio?.closed;
          await http?.close();
          if (requests !== open.db)
            await requests.close().catch(() => undefined);
          for (const db of extraDbs) await db.close().catch(() => undefined);
          await open.close();
        })();
        return stopping;
      },
    };
  } catch (error) {
    for (const feed of feeds) await feed.stop().catch(() => undefined);
    for (const db of extraDbs) await db.close().catch(() => undefined);
    if (requestDb !== undefined && requestDb !== open.db)
      await requestDb.close().catch(() => undefined);
    await open.close().catch(() => undefined);
    throw error;
  }
}

/** Token checks and the protected-resource metadata for the server's own URL, `audience`. */
function httpSecurity(
  config: Config,
  audience: string,
  deps: { canAssume: ReturnType<typeof createRoleChecker>; logger: Logger },
): HttpSecurity {
  return {
    authenticate: createAuthenticate({
      config,
      secret: jwtSecret(config),
      audience,
      canAssume: deps.canAssume,
      logger: deps.logger,
    }),
    protectedResource:
      config.auth.mode === 'jwt'
        ? {
            metadataUrl: `${new URL(audience).origin}/.well-known/oauth-protected-resource/mcp`,
            document: {
              resource: audience,
              authorization_servers: [
                config.auth.issuer ?? new URL(audience).origin,
              ],
              bearer_methods_supported: ['header'],
            },
          }
        : undefined,
  };
}

/** Ready when every database's feed is: the first that is not says why. */
function readiness(
  feeds: readonly ChangeFeed[],
): ReturnType<ChangeFeed['readiness']> {
  const states = feeds.map((feed) => feed.readiness());
  return (
    states.find((state) => !state.ok) ??
    (states[0] as ReturnType<ChangeFeed['readiness']>)
  );
}

/**
 * A configured collection must name a table with a primary key (its rows are named by it); one
 * without capture triggers is served, but its changes are not heard of, so say how to fix that.
 */
async function checkCollection(
  source: CatalogSource,
  collection: CollectionConfig,
  logger: Logger,
): Promise<void> {
  const where = `collection ${collection.schema}.${collection.table} (database ${source.name})`;
  const facts = await inspectCollection(
    source.db,
    collection.schema,
    collection.table,
  );
  if (!facts.exists)
    throw new ConfigError(
      `${where}: no such table. Check "schema" and "table" in the config file (exact names, not quoted).`,
    );
  if (!facts.hasPrimaryKey)
    throw new ConfigError(
      `${where}: the table has no primary key, and rows are named by it. Add one, or remove the collection.`,
    );
  if (!facts.exposed)
    logger.warn(
      `${where}: changes are not captured, so subscribers will not hear of them; run pgmcp expose '${sqlName(collection.schema)}.${sqlName(collection.table)}'`,
    );
}

/** An identifier as SQL writes it: bare when it may be, else double-quoted. */
function sqlName(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name)
    ? name
    : `"${name.replace(/"/g, '""')}"`;
}

/**
 * The embedded default serves requests as pgmcp_authenticator (NOINHERIT, granted the demo roles),
 * never as the superuser that owns the cluster: row-level security applies to every request.
 */
async function authenticatorDatabase(
  config: Config,
  open: OpenDatabase,
  logger: Logger,
): Promise<DatabaseHandle> {
  const password = stateSecret(config, 'authenticator-password');
  const client = await open.db.connectAdmin();
  try {
    await enableAuthenticatorLogin(client, password);
  } finally {
    await client.end();
  }
  const url = new URL(open.embedded?.connectionString ?? '');
  url.username = AUTHENTICATOR_ROLE;
  url.password = password;
  logger.info(
    `requests run as ${AUTHENTICATOR_ROLE} and the roles granted to it`,
  );
  return configuredDatabase(config, url.toString(), logger);
}

/** Superusers and table owners bypass row-level security: refuse to serve HTTP as one, unless told to. */
async function refuseUnsafeLogin(
  config: Config,
  db: DatabaseHandle,
  logger: Logger,
): Promise<void> {
  const client = await db.pool.connect();
  let facts;
  try {
    facts = await inspectLogin(client);
  } finally {
    client.release();
  }
  if (!facts.superuser && !facts.ownsResources) return;
  const why = facts.superuser ? 'a superuser' : 'the owner of pgmcp.resources';
  if (config.allowUnsafeLogin) {
    logger.warn(
      `serving HTTP as ${why}: row-level security does not apply to the login itself (--allow-unsafe-login)`,
    );
    return;
  }
  throw new ConfigError(
    `refusing to serve HTTP while logged in as ${why}: PostgreSQL lets it bypass row-level security. ` +
      `Log in as ${AUTHENTICATOR_ROLE} (README "Authorization": ALTER ROLE ${AUTHENTICATOR_ROLE} LOGIN PASSWORD '…', ` +
      `then pgmcp role grant <role>), or pass --allow-unsafe-login if every caller may see everything.`,
  );
}
