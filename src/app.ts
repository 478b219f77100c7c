// Composition root: the only file that wires modules together. From the config and the open
// databases it builds the sources, the dispatcher, authentication, the change feeds and the
// transports; server.ts runs them in order, and the CLI asks it for the token settings.
import {
  AuthenticationError,
  LOGIN_PRINCIPAL,
  createTokenVerifier,
  jwtSecret,
  protectedResourceMetadata,
  tokenAudience,
  type Principal,
  type SigningSecretSettings,
} from './auth/index.js';
import type { Config } from './config/index.js';
import {
  createLegacySessionStore,
  createRoleChecker,
  inspectCollection,
  type DatabaseHandle,
  type RoleChecker,
} from './db/index.js';
import { ConfigError, ProtocolError } from './errors.js';
import type { Logger } from './log.js';
import {
  createCursorCodec,
  createDiscoverMethod,
  createDispatcher,
  createEraDispatcher,
  createLegacyAdapter,
  LegacySession,
  type Dispatcher,
  type LegacyAdapter,
  StreamingResult,
  type MethodHandler,
  type StreamSink,
} from './protocol/index.js';
import {
  createListenMethod,
  LegacySubscriptions,
  startChangePath,
  StreamRegistry,
  type ChangeFeed,
  type ChangePathOptions,
} from './notifications/index.js';
import {
  completePromptArgument,
  createGetPromptMethod,
  createListPromptsMethod,
  promptChange,
  PROMPTS_RELATION,
  type PromptDependencies,
} from './prompts/index.js';
import {
  catalogSource,
  createConsentGate,
  catalogUri,
  deliveredChanges,
  type CatalogSource,
  type CollectionConfig,
  createCompleteMethod,
  createListResourcesMethod,
  createListTemplatesMethod,
  createReadResourceMethod,
  readableUris,
  readContents,
  TTL_MS,
} from './resources/index.js';
import {
  createLegacyHttp,
  createLineChannel,
  startHttpTransport,
  startStdioTransport,
  type HttpSecurity,
  type HttpTransport,
  type LegacyHttp,
  type StdioTransport,
} from './transport/index.js';
import {
  conformanceFixtureTools,
  createCallToolMethod,
  createExplainTool,
  createFetchTool,
  createQueryTool,
  createSearchTool,
  createListToolsMethod,
  type ReadResource,
  type Tool,
} from './tools/index.js';
import { SERVER_INFO } from './version.js';

export interface AppOptions {
  readonly db: DatabaseHandle;
  /** Databases whose catalog and row collections are pg:// resources; the first is `db`'s. */
  readonly sources: readonly CatalogSource[];
  /** First signs cursors; all verify (rotation, replicas). */
  readonly cursorSecrets: readonly string[];
  readonly pageSize: number;
  readonly maxDirectoryEntries: number;
  readonly live: Config['live'];
  readonly logger: Logger;
  /**
   * Role decisions (db/ createRoleChecker, the one authentication uses), forgotten when a feed
   * reports a schema change or resyncs.
   */
  readonly roleDecisions?: { clear(): void };
  /** How long a consent request's state stays good (PGMCP_CONSENT_MINUTES); default 10. */
  readonly consentMinutes?: number;
  /** Tool settings (config file "tools"); the defaults when absent. */
  readonly tools?: Config['tools'];
}

/** The tool settings without a config file. */
const DEFAULT_TOOLS: Config['tools'] = {
  disabled: [],
  schemas: null,
  explainAnalyze: false,
  searchLimit: 20,
  conformanceFixtures: false,
};

export interface App {
  readonly dispatcher: Dispatcher;
  /** Open listen streams. */
  readonly fanout: StreamRegistry;
  /** Start reading every source's change log into the streams (notifications/ startChangePath). */
  startChangePath(
    tuning?: Partial<
      Pick<ChangePathOptions<CatalogSource>, 'pollIntervalMs' | 'log'>
    >,
  ): Promise<ChangeFeed>;
  /** The 2025-11-25 era over the same handlers and streams (issue 14). */
  readonly legacy: LegacyAdapter;
  /** Legacy sessions' channels (HTTP GET streams) as streams of the registry. */
  readonly legacySubscriptions: LegacySubscriptions;
  /** Legacy HTTP sessions, stored in the database (hand to the HTTP transport as `legacy`). */
  readonly legacyHttp: LegacyHttp;
  /** stdio serves both eras; the process is the legacy session, `channel` its notifications. */
  stdioDispatcher(channel: StreamSink): Dispatcher;
}

const INSTRUCTIONS =
  'pgmcp serves documents, files and notes stored in PostgreSQL as MCP resources. ' +
  'List them with resources/list (paginated), read one by URI with resources/read; ' +
  'reading a file:///…/ directory returns its entry and its children. ' +
  'pg://{database}/{schema}/{table} describes a table or view of the company database you have ' +
  'access to (append ?format=json for JSON); pg://{database}/{schema} lists a schema. ' +
  'resources/templates/list shows the URI patterns (notes:///{tag}/{slug}, file:///{+path}, pg://…); ' +
  'completion/complete suggests their variables from the resources you can read. ' +
  'subscriptions/listen delivers notifications/resources/updated for subscribed URIs (a file:///…/ ' +
  'directory covers what is under it) and notifications/resources/list_changed as changes commit. ' +
  'prompts/list shows the prompts stored for your role (digest, explain-table, write-query in the demo).';

/** What a 2025-11-25 session is offered (legacy digest §3.4): no `extensions`, plus logging. */
const LEGACY_CAPABILITIES = {
  resources: { subscribe: true, listChanged: true },
  tools: {},
  prompts: { listChanged: true },
  completions: {},
  logging: {},
};

/** Build the dispatcher with every method this server offers. */
// eslint-disable-next-line max-lines-per-function -- one table of every method, read as a whole
export function createApp(options: AppOptions): App {
  const cursors = createCursorCodec(options.cursorSecrets);
  const listDeps = {
    db: options.db,
    sources: options.sources,
    cursors,
    pageSize: options.pageSize,
  };
  const readDeps = {
    db: options.db,
    sources: options.sources,
    maxDirectoryEntries: options.maxDirectoryEntries,
    pageSize: options.pageSize,
    changeRetentionSeconds: options.live.changeRetentionSeconds,
    consent: createConsentGate({
      db: options.db,
      secrets: options.cursorSecrets,
      expiryMinutes: options.consentMinutes ?? 10,
    }),
  };
  const promptDeps = promptDependencies(options, cursors, readDeps);
  const fanout = new StreamRegistry({
    serverInfo: SERVER_INFO,
    maxStreams: options.live.maxStreams,
    maxStreamsPerRole: options.live.maxStreamsPerRole,
    maxPendingBytes: options.live.maxPendingBytes,
    stallTimeoutMs: options.live.stallTimeoutMs,
    log: (line) => options.logger.warn(line),
  });
  // fetch (tools/) reads through the same method, so consent and errors are the same.
  const readMethod = createReadResourceMethod(readDeps);
  // `any`: a heterogeneous map; createMethod checked each handler against its params schema.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
  const methods = new Map<string, MethodHandler<any>>([
    [
      'server/discover',
      createDiscoverMethod({
        capabilities: {
          resources: { subscribe: true, listChanged: true },
          tools: {},
          prompts: { listChanged: true },
          completions: {},
        },
        instructions: INSTRUCTIONS,
        ttlMs: TTL_MS.discover,
      }),
    ],
    ['resources/list', createListResourcesMethod(listDeps)],
    ['resources/templates/list', createListTemplatesMethod(listDeps)],
    ['resources/read', readMethod],
    [
      'completion/complete',
      createCompleteMethod({
        db: options.db,
        sources: options.sources,
        completePrompt: (name, argument, ctx) =>
          completePromptArgument(promptDeps, ctx, name, argument),
      }),
    ],
    ['prompts/list', createListPromptsMethod(promptDeps)],
    ['prompts/get', createGetPromptMethod(promptDeps)],
    [
      'subscriptions/listen',
      createListenMethod({
        fanout,
        maxUris: options.live.maxSubscriptionUris,
        readableUris: (uris, principal, signal) =>
          readableUris(options.db, options.sources, uris, principal, signal),
      }),
    ],
  ]);
  const tools = serverTools(options, {
    read: async (uri, ctx) => {
      const result = await readMethod.handle({ uri }, ctx);
      // resources/read never streams; the check keeps the types honest.
      if (!(result instanceof StreamingResult)) return result;
      result.stream.cancel();
      throw new ProtocolError('INTERNAL', 'A read produced a stream.');
    },
  });
  methods.set('tools/list', createListToolsMethod(tools));
  methods.set('tools/call', createCallToolMethod(tools));
  const dispatcher = createDispatcher({
    serverInfo: SERVER_INFO,
    methods,
    logError: (message, error, fields) =>
      options.logger.error(message, error, fields),
  });
  return {
    dispatcher,
    fanout,
    ...legacyEra(options, dispatcher, fanout),
    startChangePath: (tuning) =>
      startChangePath({
        sources: options.sources,
        streams: fanout,
        // Prompts live in the main database (sources[0]); its log's prompt rows are theirs.
        deliveredChanges: (source, change) =>
          source === options.sources[0] && change.relation === PROMPTS_RELATION
            ? [promptChange(change)]
            : deliveredChanges(source, change),
        forgetCatalog: (source) => forgetCatalog(source, options.roleDecisions),
        retentionSeconds: options.live.changeRetentionSeconds,
        log: tuning?.log ?? ((line) => options.logger.info(line)),
        pollIntervalMs: tuning?.pollIntervalMs,
      }),
  };
}

/** The tools served (issue 15), minus those the config file switches off. */
function serverTools(
  options: AppOptions,
  deps: { read: ReadResource },
): Tool[] {
  const settings = options.tools ?? DEFAULT_TOOLS;
  const sql = {
    db: options.db,
    schemas: settings.schemas,
    auditRetentionSeconds: options.live.auditRetentionSeconds,
    log: (line: string) => options.logger.warn(line),
  };
  const main = options.sources[0];
  const tools: Tool[] = [
    ...(main === undefined
      ? []
      : [
          createSearchTool({
            db: options.db,
            relationUri: (schema, relation) =>
              catalogUri(main.name, schema, relation),
            scope: main.scope,
            limit: settings.searchLimit,
          }),
        ]),
    createFetchTool(deps.read),
    createQueryTool(sql),
    createExplainTool({ ...sql, analyzeAllowed: settings.explainAnalyze }),
  ];
  if (settings.conformanceFixtures) tools.push(...conformanceFixtureTools());
  return tools.filter((tool) => !settings.disabled.includes(tool.name));
}

/** What prompts/ renders with: the main database, its catalog, and reads as the caller. */
function promptDependencies(
  options: AppOptions,
  cursors: PromptDependencies['cursors'],
  readDeps: Parameters<typeof readContents>[0],
): PromptDependencies {
  const main = options.sources[0];
  return {
    db: options.db,
    cursors,
    pageSize: options.pageSize,
    ttlMs: TTL_MS.list,
    catalog: {
      include: main?.scope.include ?? null,
      exclude: main?.scope.exclude ?? [],
      tableUri: (schema, relation) =>
        catalogUri(main?.name ?? '', schema, relation),
    },
    read: (uri, ctx) => readContents(readDeps, uri, ctx.principal, ctx),
  };
}

/**
 * A schema change (DDL, GRANT, REVOKE) or a resync may change whose catalog has entries, and
 * often comes with a role's setup or removal (role DDL itself reaches no feed): forget both.
 */
function forgetCatalog(
  source: CatalogSource,
  roleDecisions: AppOptions['roleDecisions'],
): void {
  source.lookahead.clear();
  roleDecisions?.clear();
}

/** Issue 14: the legacy era is an adapter over `dispatcher` and `streams`, not a second server. */
function legacyEra(
  options: AppOptions,
  dispatcher: Dispatcher,
  streams: StreamRegistry,
): Pick<
  App,
  'legacy' | 'legacySubscriptions' | 'legacyHttp' | 'stdioDispatcher'
> {
  const legacySessions = createLegacySessionStore(options.db, {
    idleSeconds: options.live.legacySessionIdleSeconds,
    maxPerRole: options.live.maxLegacySessionsPerRole,
  });
  const legacySubscriptions = new LegacySubscriptions(
    streams,
    (uris, principal, signal) =>
      readableUris(options.db, options.sources, uris, principal, signal),
    options.live.maxSubscriptionUris,
  );
  const legacy = createLegacyAdapter({
    dispatcher,
    serverInfo: SERVER_INFO,
    capabilities: LEGACY_CAPABILITIES,
    instructions: INSTRUCTIONS,
    subscribe: (session, uri, principal, signal) =>
      legacySubscriptions.subscribe(session, uri, principal, signal),
    unsubscribe: (session, uri) =>
      legacySubscriptions.unsubscribe(session, uri),
    attach: (session, principal) =>
      legacySubscriptions.attach(session, principal),
    persist: async (session, principal) => {
      if (session.id !== undefined && session.logLevel !== undefined)
        await legacySessions.setLevel(session.id, principal, session.logLevel);
    },
  });
  return {
    legacy,
    legacySubscriptions,
    legacyHttp: createLegacyHttp({
      adapter: legacy,
      records: legacySessions,
      subscriptions: legacySubscriptions,
      maxSessions: options.live.maxLegacySessions,
      idleMs: options.live.legacySessionIdleSeconds * 1000,
      keepAliveMs: options.live.keepAliveMs,
      log: (line) => options.logger.warn(line),
    }),
    stdioDispatcher: (channel) => {
      const session = new LegacySession();
      session.channel = channel;
      return createEraDispatcher(dispatcher, legacy, session);
    },
  };
}

export interface AuthenticateOptions {
  readonly config: Config;
  /** HS256 secret (configured, or the embedded default's); undefined with a JWKS only. */
  readonly secret: string | undefined;
  readonly audience: string;
  /** Whether a request may run as a role (db/ checkRequestRole says allowed); cached by db/. */
  readonly canAssume: (role: string) => Promise<boolean>;
  readonly logger: Logger;
}

/**
 * HTTP request → Principal. PGMCP_AUTH=none: everyone is PGMCP_ROLE (or the login). jwt: the bearer
 * token must verify, and the role it names must be one the login may assume. Failures are logged by
 * reason only, never with the token or the role it named.
 */
export function createAuthenticate(
  options: AuthenticateOptions,
): (request: {
  headers: { authorization?: string | undefined };
}) => Promise<Principal> {
  const { config } = options;
  if (config.auth.mode === 'none') {
    const principal: Principal =
      config.role === undefined
        ? LOGIN_PRINCIPAL
        : { role: config.role, claims: {} };
    return () => Promise.resolve(principal);
  }
  const verifier = createTokenVerifier({
    secret: options.secret,
    jwksUrl: config.auth.jwksUrl,
    issuer: config.auth.issuer,
    audience: options.audience,
    roleClaim: config.auth.roleClaim,
    anonymousRole: config.auth.anonymousRole,
    cacheMaxEntries: config.auth.cacheMaxEntries,
    cacheMaxLifetimeSeconds: config.auth.cacheMaxLifetimeSeconds,
  });
  return async function authenticate(request) {
    let principal: Principal;
    try {
      principal = await verifier.verify(request.headers.authorization);
    } catch (error) {
      if (!(error instanceof AuthenticationError)) throw error;
      options.logger.warn(`refused a request: ${error.reason}`);
      if (error.reason === 'ROLE_FORBIDDEN')
        throw new ProtocolError(
          'ROLE_FORBIDDEN',
          'The token does not name a role this server may assume.',
        );
      if (error.reason === 'KEYS_UNAVAILABLE')
        throw new ProtocolError(
          'UNAVAILABLE',
          'The identity provider is unavailable.',
          { cause: error },
        );
      throw new ProtocolError('AUTHENTICATION_REQUIRED', error.message);
    }
    if (principal.role !== null && !(await options.canAssume(principal.role))) {
      options.logger.warn('refused a request: ROLE_NOT_GRANTED');
      throw new ProtocolError(
        'ROLE_FORBIDDEN',
        'The token does not name a role this server may assume.',
      );
    }
    return principal;
  };
}

/** Where the HS256 secret comes from, per config (the state folder only for the embedded default). */
export function signingSecretSettings(config: Config): SigningSecretSettings {
  return {
    secret: config.auth.secret,
    jwksUrl: config.auth.jwksUrl,
    stateDirectory:
      config.database.mode === 'embedded' ? config.stateDirectory : undefined,
  };
}

/** The audience tokens must carry, for the server listening on `port` (default: the configured one). */
export function serverAudience(config: Config, port = config.port): string {
  return tokenAudience(
    { audience: config.auth.audience, host: config.host },
    port,
  );
}

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
  const sensitiveIn = (name: string | undefined) =>
    config.sensitive.filter((entry) => entry.database === name);
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

/** createApp's options for a server per config. */
export function appOptions(
  config: Config,
  db: DatabaseHandle,
  sources: readonly CatalogSource[],
  cursorSecret: string,
  logger: Logger,
  roleDecisions: RoleChecker,
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
    consentMinutes: config.consentMinutes,
    tools: config.tools,
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
  sources: readonly CatalogSource[],
  feeds: ChangeFeed[],
  logger: Logger,
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
  canAssume: RoleChecker,
  feeds: readonly ChangeFeed[],
  logger: Logger,
): Promise<Transports> {
  if (config.stdio) {
    const stdio = startStdioTransport({
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
    ready: () => readiness(feeds),
    log: (line) => logger.warn(line),
    // Issue 14: 2025-11-25 sessions on the same endpoint.
    legacy: app.legacyHttp,
  });
  return { http, stdio: undefined };
}

/** Token checks and the protected-resource metadata for the server's own URL, `audience`. */
function httpSecurity(
  config: Config,
  audience: string,
  deps: { canAssume: RoleChecker; logger: Logger },
): HttpSecurity {
  return {
    authenticate: createAuthenticate({
      config,
      secret: jwtSecret(signingSecretSettings(config)),
      audience,
      canAssume: deps.canAssume,
      logger: deps.logger,
    }),
    protectedResource:
      config.auth.mode === 'jwt'
        ? protectedResourceMetadata(audience, config.auth.issuer)
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
