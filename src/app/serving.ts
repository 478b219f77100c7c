// What serving takes besides the method table: the sources per database, the change feeds and
// the transports; server.ts runs them in order.
import type { Config } from '../config/index.js';
import {
  createRoleChecker,
  type DatabaseHandle,
  type RoleChecker,
} from '../db/index.js';
import { currentDatabaseName, inspectCollection } from '../resources/index.js';
import { missingSensitiveEntries } from '../tools/index.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../log.js';
import { type ChangeFeed } from '../notifications/index.js';
import {
  catalogSource,
  type CatalogSource,
  type CollectionConfig,
} from '../resources/index.js';
import {
  startHttpTransport,
  startStdioTransport,
  type HttpTransport,
  type StdioTransport,
} from '../transport/index.js';
import {
  httpSecurity,
  serverAudience,
  tokenlessPrincipal,
} from './authenticate.js';
import { type App, type AppOptions } from './create-app.js';

/** The databases a server serves: the main one (requests' login) and each --database. */
export interface ServedDatabases {
  readonly main: DatabaseHandle;
  readonly more: readonly {
    readonly name: string;
    readonly db: DatabaseHandle;
  }[];
}

/** One catalog source per database, with its collections from the config file, each checked. */
export async function createSources(
  config: Config,
  databases: ServedDatabases,
  logger: Logger,
): Promise<CatalogSource[]> {
  const collectionsIn = (name: string | undefined): CollectionConfig[] =>
    config.collections.filter((collection) => collection.database === name);
  const mainName = await currentDatabaseName(databases.main);
  await checkSensitive(config, databases, mainName);
  // The main database may be named by its own name too.
  const sensitiveIn = (name: string | undefined) =>
    config.sensitive.filter(
      (entry) =>
        entry.database === name ||
        (name === undefined && entry.database === mainName),
    );
  const sources = [
    await catalogSource(databases.main, {
      scope: config.catalog,
      collections: collectionsIn(undefined),
      sensitive: sensitiveIn(undefined),
    }),
  ];
  for (const { name, db } of databases.more)
    sources.push(
      await catalogSource(db, {
        name,
        scope: config.catalog,
        collections: collectionsIn(name),
        sensitive: sensitiveIn(name),
      }),
    );
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
  return sources;
}

/**
 * Fail closed (issue 32 point 2): every "sensitive" entry of the config file must name a served
 * database (the main one by omission or by its own name, another by its --database name) and a
 * schema, table and columns that exist there, else the server does not start.
 */
async function checkSensitive(
  config: Config,
  databases: ServedDatabases,
  mainName: string,
): Promise<void> {
  for (const entry of config.sensitive) {
    const db =
      entry.database === undefined || entry.database === mainName
        ? databases.main
        : databases.more.find((more) => more.name === entry.database)?.db;
    const where = `config file "sensitive" entry ${JSON.stringify({ database: entry.database, schema: entry.schema, table: entry.table, columns: entry.columns ?? undefined })}`;
    if (db === undefined)
      throw new ConfigError(
        `${where} names database ${entry.database ?? ''}, which this server does not serve: name the main database (${mainName}) or one given with --database, or remove the entry.`,
      );
    const [missing] = await missingSensitiveEntries(db, [entry]);
    if (missing !== undefined)
      throw new ConfigError(
        `${where} names no existing ${missing.missing} in database ${entry.database ?? mainName}: correct the name or remove the entry (a sensitive entry that matches nothing would protect nothing).`,
      );
  }
}

/** What a server's app is built over besides the config: its database, sources and logger. */
export interface AppParts {
  readonly db: DatabaseHandle;
  readonly sources: readonly CatalogSource[];
  readonly cursorSecret: string;
  readonly logger: Logger;
  readonly roleDecisions: RoleChecker;
}

/** createApp's options for a server per config. */
export function appOptions(
  config: Config,
  { db, sources, cursorSecret, logger, roleDecisions }: AppParts,
): AppOptions {
  return {
    db,
    sources,
    cursorSecrets: config.cursorSecrets ?? [cursorSecret],
    pageSize: config.pageSize,
    maxDirectoryEntries: config.maxDirectoryEntries,
    live: config.live,
    logger,
    roleDecisions,
    roleCacheMaxAgeMs: config.auth.roleCacheMaxAgeSeconds * 1000,
    consentMinutes: config.consentMinutes,
    promptLimits: config.promptLimits,
    tools: config.tools,
    scopes: config.scopes,
    toolLimits: {
      perToken: config.limits.toolCallsPerToken,
      perRole: config.limits.toolCallsPerRole,
      roles: config.roleLimits,
      connections: config.limits.toolConnections,
      waitMs: config.limits.toolWaitMs,
    },
    query: config.query,
  };
}

/** The server's one role checker (HTTP authentication asks it; createApp empties it), per config. */
export function createRoleDecisions(
  config: Config,
  requestDb: DatabaseHandle,
): RoleChecker {
  return createRoleChecker(requestDb, {
    maxEntries: config.auth.roleCacheMaxEntries,
    maxAgeMs: config.auth.roleCacheMaxAgeSeconds * 1000,
  });
}

/** Start the change path (one feed per source), pushed onto `feeds` once started (the caller stops it). */
export async function startChangeFeeds(
  app: App,
  feeds: ChangeFeed[],
  { sources, logger }: { sources: readonly CatalogSource[]; logger: Logger },
): Promise<void> {
  feeds.push(await app.startChangePath());
  logger.info(
    `live updates: listening for changes on pgmcp_changes${sources.length === 1 ? '' : ` in ${sources.length} databases`}`,
  );
}

/** The transport serving: HTTP, or stdio (then `http` is undefined). */
export interface Transports {
  readonly http: HttpTransport | undefined;
  readonly stdio: StdioTransport | undefined;
}

/** Serve `app` over stdio or HTTP per config; HTTP requests run as roles `canAssume` allows. */
export async function startTransports(
  config: Config,
  app: App,
  {
    canAssume,
    health,
    logger,
  }: { canAssume: RoleChecker; health: ServingHealth; logger: Logger },
): Promise<Transports> {
  if (config.stdio) {
    const stdio = startStdioTransport({
      input: process.stdin,
      output: process.stdout,
      // Every era the app serves on stdio (issue 14: both, the process one 2025-11-25 session).
      dispatcher: app.stdioDispatcher(process.stdout),
      principal: tokenlessPrincipal(config),
      maxMessageBytes: config.maxBodyBytes,
    });
    return { http: undefined, stdio };
  }
  const http = await startHttpTransport({
    host: config.host,
    port: config.port,
    path: '/mcp',
    dispatcher: app.dispatcher,
    maxBodyBytes: config.maxBodyBytes,
    allowedHosts: config.allowedHosts,
    allowedOrigins: config.allowedOrigins,
    securityFor: (url) =>
      httpSecurity(config, serverAudience(config, Number(new URL(url).port)), {
        canAssume,
        logger,
      }),
    keepAliveMs: config.live.keepAliveMs,
    ready: () => readiness(health),
    log: (line) => logger.warn(line),
    // Issue 14: 2025-11-25 sessions on the same endpoint, when that era is wired.
    otherEra: app.otherEraHttp,
  });
  return { http, stdio: undefined };
}

/** What /readyz reads: the change feeds, and whether the server drains (issue 35). */
export interface ServingHealth {
  readonly feeds: readonly ChangeFeed[];
  readonly draining: () => boolean;
}

/**
 * Ready unless draining (SIGTERM) and when every database's feed is (its listener connected and
 * its last read of the change log, a query on that database, succeeded): the first that is not
 * says why.
 */
export function readiness(health: ServingHealth): {
  ok: boolean;
  detail: Record<string, unknown>;
} {
  if (health.draining()) return { ok: false, detail: { draining: true } };
  const states = health.feeds.map((feed) => feed.readiness());
  return (
    states.find((state) => !state.ok) ?? states[0] ?? { ok: true, detail: {} }
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
  const table = `${sqlName(collection.schema)}.${sqlName(collection.table)}`;
  if (!facts.exposed)
    logger.warn(
      `${where}: changes are not captured, so subscribers will not hear of them; run pgmcp expose '${table}'`,
    );
  const searchable = collection.searchable ?? [];
  const unknown = searchable.filter((name) => !facts.columns.includes(name));
  if (unknown.length > 0)
    throw new ConfigError(
      `${where}: "searchable" names ${unknown.map((name) => `"${name}"`).join(', ')}, which the table does not have (exact names, not quoted).`,
    );
  if (searchable.length > 0 && !facts.searchIndexed)
    logger.warn(
      `${where}: no search index, so each search reads the table; create it with: select pgmcp.row_search_index('${table}', array[${searchable.map((name) => `'${name.replace(/'/g, "''")}'`).join(', ')}]) \\gexec (docs/tools.md "Searching rows")`,
    );
}

/** An identifier as SQL writes it: bare when it may be, else double-quoted. */
function sqlName(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name)
    ? name
    : `"${name.replace(/"/g, '""')}"`;
}
