// Opening pgmcp's databases for serve and the CLI: the configured one or the embedded PostgreSQL,
// the pools on them, and the migrations and seeds applied through an administrative client.
import path from 'node:path';
import { createProgress } from './progress.js';
import {
  MIGRATIONS_DIRECTORY,
  SEEDS_DIRECTORY,
  redactConnectionString,
  type Config,
} from '../config/index.js';
import {
  createDatabase,
  loadSeed,
  loadSharedSecret,
  runMigrations,
  seedLoaded,
  startEmbeddedPostgres,
  withAdminClient,
  type AdminClient,
  type DatabaseHandle,
  type EmbeddedPostgres,
  type StandbyOptions,
} from '../db/index.js';
import type { Logger } from '../log.js';

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
  const db = configuredDatabase(
    config,
    { connectionString, database: undefined },
    logger,
  );
  // With failover, the first survey of the candidates finds the primary before anything connects.
  await db.primary?.check();
  return { db, embedded, close: () => closeOpenDatabase(db, embedded, logger) };
}

async function closeOpenDatabase(
  db: DatabaseHandle,
  embedded: EmbeddedPostgres | undefined,
  logger: Logger,
): Promise<void> {
  await db
    .close()
    .catch((error: unknown) => logger.error('closing the pool failed', error));
  if (embedded !== undefined) {
    logger.info('stopping embedded PostgreSQL');
    await embedded.stop();
  }
}

/**
 * A pool on `connectionString` (PG* variables when undefined) with the configured settings, and
 * the standbys the config file gives `database` (undefined: the main database).
 */
export function configuredDatabase(
  config: Config,
  {
    connectionString,
    database,
  }: {
    readonly connectionString: string | undefined;
    readonly database: string | undefined;
  },
  logger: Logger,
): DatabaseHandle {
  return createDatabase({
    standbys: standbysOf(config, database, logger),
    connectionString,
    poolSize: config.poolSize,
    poolWaitMs: config.poolWaitMs,
    statementTimeoutMs: config.statementTimeoutMs,
    feedPoolSize: config.limits.feedPoolSize,
    lockTimeoutMs: config.limits.lockTimeoutMs,
    auditTextBytes: config.query.auditTextBytes,
    onError: (message, error) => logger.error(message, error),
    onWarning: (message) => logger.warn(message),
  });
}

/** The standbys of `database` (undefined: the main one) as the config file gives them, if any. */
function standbysOf(
  config: Config,
  database: string | undefined,
  logger: Logger,
): StandbyOptions | undefined {
  const settings = config.standbys;
  const urls = (settings?.servers ?? [])
    .filter((server) => server.database === database)
    .map((server) => server.url);
  if (settings === undefined || urls.length === 0) return undefined;
  return {
    urls,
    maxLagMs: settings.maxLagMs,
    maxLagBytes: settings.maxLagBytes,
    waitMs: settings.waitMs,
    pollMs: settings.pollMs,
    whenUnavailable: settings.whenUnavailable,
    failover: settings.failover,
    database: database ?? 'main',
    redact: redactConnectionString,
    log: (message, up) => {
      const line = `${database ?? 'main database'}: ${message}`;
      if (up) logger.info(line);
      else logger.warn(line);
    },
  };
}

/** A --database entry by name, opened alone (expose --database NAME). */
export function namedDatabase(
  config: Config,
  name: string,
  logger: Logger,
): DatabaseHandle | undefined {
  const database = config.databases.find((entry) => entry.name === name);
  return database === undefined
    ? undefined
    : configuredDatabase(
        config,
        { connectionString: database.connectionString, database: name },
        logger,
      );
}

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
export async function migrateDatabase(
  db: DatabaseHandle,
  logger: Logger,
): Promise<void> {
  await withAdminClient(db, (client) => applyMigrations(client, logger));
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
  return withAdminClient(db, async (client) => {
    if (options.migrate) await applyMigrations(client, logger);
    const dataset = options.seed ?? options.seedUnlessLoaded;
    if (
      dataset !== undefined &&
      (options.seed !== undefined || !(await seedLoaded(client, dataset)))
    ) {
      logger.info(`loading dataset ${dataset}`);
      await loadSeed(
        client,
        { seedsDirectory: SEEDS_DIRECTORY, dataset },
        createProgress(`seed ${dataset}`),
      );
    }
    return { cursorSecret: await loadSharedSecret(client, 'cursor') };
  });
}
