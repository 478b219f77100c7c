// Server lifecycle, in order: open the databases, migrate and seed, build the app, start its change
// feeds and transports; stop them in reverse. What each step does is app/'s.
import {
  appOptions,
  createApp,
  createRoleDecisions,
  createSources,
  openDatabase,
  openMoreDatabases,
  prepareDatabase,
  readiness,
  refuseUnsafeLogin,
  requestDatabase,
  requireAuthentication,
  startChangeFeeds,
  startChangeSources,
  startTransports,
  type App,
  type AppExtension,
  type OpenDatabase,
  type Transports,
} from './app/index.js';
import type { Config } from './config/index.js';
import {
  changeLogBytes,
  type DatabaseHandle,
  type RoleChecker,
  type WalCapture,
} from './db/index.js';
import type { Logger } from './log.js';
import type { ChangeFeed } from './notifications/index.js';
import {
  forgetSources,
  METRICS,
  observeSources,
  startAdminListener,
  type AdminListener,
} from './observability/index.js';

export interface RunningServer {
  /** The HTTP endpoint, or undefined over stdio. */
  readonly url: string | undefined;
  /** Resolves when the transport ends on its own (stdio: stdin closed). */
  readonly done: Promise<void>;
  /** The admin listener (metrics, probes), when PGMCP_ADMIN_PORT is set. */
  readonly adminUrl: string | undefined;
  stop(): Promise<void>;
  /**
   * Issue 35, SIGTERM: /readyz fails at once; after the drain delay no new connections are
   * accepted; requests being answered finish (up to the grace period); then stop().
   */
  drain(): Promise<void>;
}

/** What a server has started so far, stopped in reverse order (stopServer, abandon). */
interface Started {
  readonly open: OpenDatabase;
  requestDb: DatabaseHandle | undefined;
  readonly moreDbs: DatabaseHandle[];
  readonly feeds: ChangeFeed[];
  /** The WAL readers (PGMCP_CHANGE_SOURCE=wal), stopped after the feeds. */
  readonly captures: WalCapture[];
  /** Set when a drain begins: /readyz answers 503 from then on. */
  draining: boolean;
  admin: AdminListener | undefined;
}

/**
 * Start serving per config, with `extension`'s tools and prompts when given (code only: the
 * conformance runner's fixtures). The caller owns signals and calls stop().
 */
export async function startServer(
  config: Config,
  logger: Logger,
  extension?: AppExtension,
): Promise<RunningServer> {
  requireAuthentication(config);
  const started: Started = {
    open: await openDatabase(config, logger),
    requestDb: undefined,
    moreDbs: [],
    feeds: [],
    captures: [],
    draining: false,
    admin: undefined,
  };
  try {
    const { app, transports } = await serve(config, started, {
      logger,
      extension,
    });
    await startAdmin(config, started, logger);
    observeApp(app, started);
    let stopping: Promise<void> | undefined;
    let draining: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= stopServer(app, transports, started);
      return stopping;
    };
    return {
      url: transports.http?.url,
      adminUrl: started.admin?.url,
      done:
        transports.stdio?.closed ??
        new Promise<void>((resolve) =>
          transports.http?.server.once('close', () => resolve()),
        ),
      stop,
      drain() {
        draining ??= drainServer(config, { transports, started }, logger).then(
          stop,
        );
        return draining;
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
    captures: [],
    draining: false,
    admin: undefined,
  };
  try {
    const { app } = await prepareApp(config, started, {
      logger,
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
  { logger, extension }: { logger: Logger; extension?: AppExtension },
): Promise<{ app: App; transports: Transports }> {
  const { app, roleDecisions } = await prepareApp(config, started, {
    logger,
    serving: true,
    extension,
  });
  const transports = await startTransports(config, app, {
    canAssume: roleDecisions,
    health: { feeds: started.feeds, draining: () => started.draining },
    logger,
  });
  return { app, transports };
}

/**
 * Prepare the databases, build the app and start its change feeds. `serving`: HTTP will be
 * served, so a login that bypasses row-level security is refused.
 */
async function prepareApp(
  config: Config,
  started: Started,
  {
    logger,
    serving,
    extension,
  }: { logger: Logger; serving: boolean; extension?: AppExtension | undefined },
): Promise<{ app: App; roleDecisions: RoleChecker }> {
  const { open } = started;
  const { cursorSecret } = await prepareDatabase(open.db, logger, {
    migrate: config.migrate,
    seed: config.seed,
    seedUnlessLoaded: open.embedded !== undefined ? 'demo' : undefined,
  });
  const requestDb = await requestDatabase(config, open, logger);
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
  const app = createApp({
    ...appOptions(config, {
      db: requestDb,
      sources,
      cursorSecret,
      logger,
      roleDecisions,
    }),
    extension,
  });
  // The sources first: a slot created now starts its epoch before the feeds read the log.
  await startChangeSources(
    config,
    { main: open.db, more },
    { captures: started.captures, logger },
  );
  await startChangeFeeds(app, started.feeds, { sources, logger });
  return { app, roleDecisions };
}

/** The admin listener (PGMCP_ADMIN_PORT): metrics and probes, with the MCP endpoint's readiness. */
async function startAdmin(
  config: Config,
  started: Started,
  logger: Logger,
): Promise<void> {
  const { adminPort, adminHost } = config.operations;
  if (adminPort === undefined) return;
  started.admin = await startAdminListener({
    host: adminHost,
    port: adminPort,
    ready: () =>
      readiness({ feeds: started.feeds, draining: () => started.draining }),
    log: (line) => logger.warn(line),
  });
  logger.info(`admin listener (metrics, probes) on ${started.admin.url}`);
}

/** The gauges read at scrape time: streams, sessions, the change log's size. */
function observeApp(app: App, started: Started): void {
  const db = started.requestDb ?? started.open.db;
  observeSources({
    changeLogBytes: () => changeLogBytes(db),
    ...app.gauges,
  });
}

/**
 * The drain before stopServer (issue 35): /readyz fails at once, load balancers get the drain
 * delay to notice, then the listener closes and the requests being answered get the grace period.
 */
async function drainServer(
  config: Config,
  { transports, started }: { transports: Transports; started: Started },
  logger: Logger,
): Promise<void> {
  const { drainDelayMs, shutdownGraceMs } = config.operations;
  started.draining = true;
  METRICS.draining.set(1);
  const { http } = transports;
  if (http === undefined) return;
  logger.info(
    `draining: /readyz answers 503; new connections are refused in ${drainDelayMs} ms`,
  );
  await new Promise((resolve) => setTimeout(resolve, drainDelayMs));
  http.stopAccepting();
  if (!(await http.settle(shutdownGraceMs)))
    logger.warn(
      `draining: requests still being answered after ${shutdownGraceMs} ms (PGMCP_SHUTDOWN_GRACE_MS) are cut`,
    );
}

/** Every listen stream gets its graceful result before the transports close; the pools close last. */
async function stopServer(
  app: App,
  transports: Transports,
  started: Started,
): Promise<void> {
  const { stdio, http } = transports;
  started.draining = true;
  app.fanout.closeAll();
  await Promise.all(started.feeds.map((feed) => feed.stop()));
  await Promise.all(started.captures.map((capture) => capture.stop()));
  stdio?.close();
  await stdio?.closed;
  await http?.close();
  if (started.requestDb !== undefined && started.requestDb !== started.open.db)
    await started.requestDb.close().catch(() => undefined);
  for (const db of started.moreDbs) await db.close().catch(() => undefined);
  await started.open.close();
  await started.admin?.close();
  forgetSources();
  METRICS.draining.set(0);
}

/** Start-up failed: stop whatever had started, quietly (the start-up error is what is reported). */
async function abandon(started: Started): Promise<void> {
  for (const feed of started.feeds) await feed.stop().catch(() => undefined);
  for (const capture of started.captures)
    await capture.stop().catch(() => undefined);
  for (const db of started.moreDbs) await db.close().catch(() => undefined);
  if (started.requestDb !== undefined && started.requestDb !== started.open.db)
    await started.requestDb.close().catch(() => undefined);
  await started.open.close().catch(() => undefined);
}
