// Server lifecycle: open the databases (embedded or configured), migrate, seed, build the app
// (app/ wires it), start the transports, and stop everything in order.
import {
  appOptions,
  createApp,
  createRoleDecisions,
  createSources,
  signingSecretSettings,
  startChangeFeeds,
  startTransports,
  type App,
  type Transports,
} from './app/index.js';
import { jwtSecret, stateSecret } from './auth/index.js';
import { redactConnectionString, type Config } from './config/index.js';
import { ConfigError } from './errors.js';
import {
  AUTHENTICATOR_ROLE,
  enableAuthenticatorLogin,
  inspectRequestLogin,
  withAdminClient,
  type DatabaseHandle,
  type RoleChecker,
} from './db/index.js';
import type { Logger } from './log.js';
import type { ChangeFeed } from './notifications/index.js';
import {
  configuredDatabase,
  migrateDatabase,
  openDatabase,
  prepareDatabase,
  type OpenDatabase,
} from './open-database.js';

export interface RunningServer {
  /** The HTTP endpoint, or undefined over stdio. */
  readonly url: string | undefined;
  /** Resolves when the transport ends on its own (stdio: stdin closed). */
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

/** What a server has started so far, stopped in reverse order (stopServer, abandon). */
interface Started {
  readonly open: OpenDatabase;
  requestDb: DatabaseHandle | undefined;
  readonly moreDbs: DatabaseHandle[];
  readonly feeds: ChangeFeed[];
}

/** Start serving per config. The caller owns signals and calls stop(). */
export async function startServer(
  config: Config,
  logger: Logger,
): Promise<RunningServer> {
  refuseMissingAuthentication(config);
  const started: Started = {
    open: await openDatabase(config, logger),
    requestDb: undefined,
    moreDbs: [],
    feeds: [],
  };
  try {
    const { app, transports } = await serve(config, started, logger);
    let stopping: Promise<void> | undefined;
    return {
      url: transports.http?.url,
      done:
        transports.stdio?.closed ??
        new Promise<void>((resolve) =>
          transports.http?.server.once('close', () => resolve()),
        ),
      stop() {
        stopping ??= stopServer(app, transports, started);
        return stopping;
      },
    };
  } catch (error) {
    await abandon(started);
    throw error;
  }
}

/** An app with its change feeds and no transport: `pgmcp selftest` sends it requests itself. */
export interface RunningApp {
  readonly app: App;
  /** The administrative login's database (the self-test commits its probe change there). */
  readonly adminDb: DatabaseHandle;
  stop(): Promise<void>;
}

/** Start what serving starts (databases, migrations, seed, app, change feeds), but no transport. */
export async function startApp(
  config: Config,
  logger: Logger,
): Promise<RunningApp> {
  const started: Started = {
    open: await openDatabase(config, logger),
    requestDb: undefined,
    moreDbs: [],
    feeds: [],
  };
  try {
    const { app } = await prepareApp(config, started, logger, {
      serving: false,
    });
    return {
      app,
      adminDb: started.open.db,
      stop: () =>
        stopServer(app, { http: undefined, stdio: undefined }, started),
    };
  } catch (error) {
    await abandon(started);
    throw error;
  }
}

/** Prepare the databases, build the app, start its feeds and transports, in that order. */
async function serve(
  config: Config,
  started: Started,
  logger: Logger,
): Promise<{ app: App; transports: Transports }> {
  const { app, roleDecisions } = await prepareApp(config, started, logger, {
    serving: true,
  });
  const transports = await startTransports(
    config,
    app,
    roleDecisions,
    started.feeds,
    logger,
  );
  return { app, transports };
}

/**
 * Prepare the databases, build the app and start its change feeds. `serving`: HTTP will be
 * served, so a login that bypasses row-level security is refused.
 */
async function prepareApp(
  config: Config,
  started: Started,
  logger: Logger,
  { serving }: { serving: boolean },
): Promise<{ app: App; roleDecisions: RoleChecker }> {
  const { open } = started;
  const { cursorSecret } = await prepareDatabase(open.db, logger, {
    migrate: config.migrate,
    seed: config.seed,
    seedUnlessLoaded: open.embedded !== undefined ? 'demo' : undefined,
  });
  const requestDb =
    open.embedded === undefined
      ? open.db
      : await authenticatorDatabase(config, open, logger);
  started.requestDb = requestDb;
  if (serving && !config.stdio)
    await refuseUnsafeLogin(config, requestDb, logger);
  const more = await openMoreDatabases(config, started.moreDbs, logger);
  const sources = await createSources(
    config,
    { main: requestDb, more },
    logger,
  );
  const roleDecisions = createRoleDecisions(config, requestDb);
  const app = createApp(
    appOptions(config, requestDb, sources, cursorSecret, logger, roleDecisions),
  );
  await startChangeFeeds(app, sources, started.feeds, logger);
  return { app, roleDecisions };
}

/** Every listen stream gets its graceful result before the transports close; the pools close last. */
async function stopServer(
  app: App,
  transports: Transports,
  started: Started,
): Promise<void> {
  const { stdio, http } = transports;
  app.fanout.closeAll();
  await Promise.all(started.feeds.map((feed) => feed.stop()));
  stdio?.close();
  await stdio?.closed;
  await http?.close();
  if (started.requestDb !== undefined && started.requestDb !== started.open.db)
    await started.requestDb.close().catch(() => undefined);
  for (const db of started.moreDbs) await db.close().catch(() => undefined);
  await started.open.close();
}

/** Start-up failed: stop whatever had started, quietly (the start-up error is what is reported). */
async function abandon(started: Started): Promise<void> {
  for (const feed of started.feeds) await feed.stop().catch(() => undefined);
  for (const db of started.moreDbs) await db.close().catch(() => undefined);
  if (started.requestDb !== undefined && started.requestDb !== started.open.db)
    await started.requestDb.close().catch(() => undefined);
  await started.open.close().catch(() => undefined);
}

/** HTTP needs a way to authenticate before anything starts (the embedded default makes a secret). */
function refuseMissingAuthentication(config: Config): void {
  if (
    !config.stdio &&
    config.auth.mode === 'jwt' &&
    jwtSecret(signingSecretSettings(config)) === undefined &&
    config.auth.jwksUrl === undefined
  ) {
    throw new ConfigError(
      'HTTP requests need authentication: set PGMCP_JWT_SECRET (HS256, 32+ characters) or PGMCP_JWKS_URL (your identity provider), ' +
        'or PGMCP_AUTH=none to serve every caller as one role (PGMCP_ROLE). See README "Authorization".',
    );
  }
}

/**
 * Each --database: a pool (pushed onto `opened` as it opens, for the caller to close), migrated
 * and checked like the main one. Only migrations: cursors are signed with the main database's secret.
 */
async function openMoreDatabases(
  config: Config,
  opened: DatabaseHandle[],
  logger: Logger,
): Promise<{ name: string; db: DatabaseHandle }[]> {
  const more = [];
  for (const database of config.databases) {
    const db = configuredDatabase(config, database.connectionString, logger);
    opened.push(db);
    logger.info(
      `database ${database.name}: ${redactConnectionString(database.connectionString)}`,
    );
    if (config.migrate) await migrateDatabase(db, logger);
    if (!config.stdio) await refuseUnsafeLogin(config, db, logger);
    more.push({ name: database.name, db });
  }
  return more;
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
  const password = stateSecret(config.stateDirectory, 'authenticator-password');
  await withAdminClient(open.db, (client) =>
    enableAuthenticatorLogin(client, password),
  );
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
  const facts = await inspectRequestLogin(db);
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
