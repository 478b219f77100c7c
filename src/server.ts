// Server lifecycle: open the database (embedded or configured), migrate, seed, serve, shut down.
import path from 'node:path';
import { createApp } from './app.js';
import { createProgress } from './cli/progress.js';
import { redactConnectionString, type Config } from './config.js';
import {
  createDatabase,
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
import { startHttpTransport, type HttpTransport } from './transport/http.js';
import { startStdioTransport, type StdioTransport } from './transport/stdio.js';
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
export async function openDatabase(config: Config, logger: Logger): Promise<OpenDatabase> {
  let embedded: EmbeddedPostgres | undefined;
  let connectionString: string | undefined;
  if (config.database.mode === 'embedded') {
    embedded = await startEmbeddedPostgres({ stateDirectory: config.stateDirectory, log: (line) => logger.info(line) });
    connectionString = embedded.connectionString;
    logger.info(`embedded PostgreSQL on 127.0.0.1:${embedded.port} (data in ${path.resolve(config.stateDirectory, 'data')})`);
  } else {
    connectionString = config.database.connectionString;
    logger.info(`database ${connectionString === undefined ? 'from PG* environment variables' : redactConnectionString(connectionString)}`);
  }
  const db = createDatabase({
    connectionString,
    poolSize: config.poolSize,
    statementTimeoutMs: config.statementTimeoutMs,
    onError: (message, error) => logger.error(message, error),
  });
  return {
    db,
    embedded,
    async close() {
      await db.close().catch((error: unknown) => logger.error('closing the pool failed', error));
      if (embedded !== undefined) {
        logger.info('stopping embedded PostgreSQL');
        await embedded.stop();
      }
    },
  };
}

/** Apply migrations, then load `dataset` if given, through one admin connection. */
export async function prepareDatabase(
  db: DatabaseHandle,
  logger: Logger,
  options: { migrate: boolean; seed?: string | undefined; seedUnlessLoaded?: string | undefined },
): Promise<{ cursorSecret: string }> {
  const client = await db.connectAdmin();
  try {
    if (options.migrate) {
      const report = await runMigrations(client, MIGRATIONS_DIRECTORY, (line) => logger.info(line));
      if (report.applied.length === 0) logger.info(`migrations up to date (${report.alreadyApplied} applied)`);
    }
    const dataset = options.seed ?? options.seedUnlessLoaded;
    if (dataset !== undefined && (options.seed !== undefined || !(await seedLoaded(client, dataset)))) {
      logger.info(`loading dataset ${dataset}`);
      await loadSeed(client, SEEDS_DIRECTORY, dataset, createProgress(`seed ${dataset}`));
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

/** Start serving per config. The caller owns signals and calls stop(). */
export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const open = await openDatabase(config, logger);
  try {
    const { cursorSecret } = await prepareDatabase(open.db, logger, {
      migrate: config.migrate,
      seed: config.seed,
      seedUnlessLoaded: open.embedded !== undefined ? 'demo' : undefined,
    });
    const app = createApp({
      db: open.db,
      cursorSecrets: config.cursorSecrets ?? [cursorSecret],
      pageSize: config.pageSize,
      maxDirectoryEntries: config.maxDirectoryEntries,
      logger,
    });
    let http: HttpTransport | undefined;
    let stdio: StdioTransport | undefined;
    if (config.stdio) {
      stdio = startStdioTransport({
        input: process.stdin,
        output: process.stdout,
        dispatcher: app.dispatcher,
        principal: LOGIN_PRINCIPAL,
        maxMessageBytes: config.maxBodyBytes,
      });
    } else {
      http = await startHttpTransport({
        host: config.host,
        port: config.port,
        path: '/mcp',
        dispatcher: app.dispatcher,
        maxBodyBytes: config.maxBodyBytes,
        allowedHosts: config.allowedHosts,
        allowedOrigins: config.allowedOrigins,
        principalFor: () => LOGIN_PRINCIPAL,
        log: (line) => logger.warn(line),
      });
    }
    let stopping: Promise<void> | undefined;
    return {
      url: http?.url,
      done: stdio?.closed ?? new Promise<void>((resolve) => http?.server.once('close', () => resolve())),
      stop() {
        stopping ??= (async () => {
          stdio?.close();
          await stdio?.closed;
          await http?.close();
          await open.close();
        })();
        return stopping;
      },
    };
  } catch (error) {
    await open.close().catch(() => undefined);
    throw error;
  }
}
