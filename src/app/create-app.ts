// The composition root's method table: from the open databases and the config it builds the
// sources' handlers, the dispatcher with every method, both protocol eras and the change path.
import {
  createScopePolicy,
  SCOPED_METHOD_GROUPS,
  type ScopePolicy,
} from '../auth/index.js';
import type { Config } from '../config/index.js';
import { createLegacySessionStore, type DatabaseHandle } from '../db/index.js';
import { LIST_PROMPTS_PAGE } from '../prompts/index.js';
import { ProtocolError } from '../errors.js';
import type { Logger } from '../log.js';
import {
  createCursorCodec,
  createDiscoverMethod,
  createDispatcher,
  createEraDispatcher,
  createLegacyAdapter,
  GetPromptParamsSchema,
  KeptResult,
  LegacySession,
  type Dispatcher,
  type GetPromptParams,
  type LegacyAdapter,
  StreamingResult,
  type MethodHandler,
  type StreamSink,
  type ConsentCheck,
} from '../protocol/index.js';
import {
  createListenMethod,
  LegacySubscriptions,
  startChangePath,
  StreamRegistry,
  type ChangeFeed,
  type ChangePathOptions,
} from '../notifications/index.js';
import {
  completePromptArgument,
  createGetPromptMethod,
  PROMPTS_COLLECTION,
  renderPrompt,
  promptChange,
  PROMPTS_RELATION,
  DEFAULT_PROMPT_LIMITS,
  type PromptDependencies,
  type PromptLimits,
} from '../prompts/index.js';
import {
  createConsentGate,
  type ConsentGate,
  catalogUri,
  deliveredChanges,
  type CatalogSource,
  createCompleteMethod,
  createKeysetListMethod,
  createListResourcesMethod,
  createListTemplatesMethod,
  createReadResourceMethod,
  readableUris,
  readContents,
  TTL_MS,
  RolePageMemo,
} from '../resources/index.js';
import { createLegacyHttp, type LegacyHttp } from '../transport/index.js';
import {
  createCallToolMethod,
  createExplainTool,
  createFetchTool,
  createQueryTool,
  createSearchTool,
  createSqlGuard,
  SQL_GUARD_DEFAULTS,
  createListToolsMethod,
  limitToolCalls,
  ToolCallLimiter,
  type ToolLimits,
  type ReadResource,
  type SqlToolDependencies,
  type Tool,
} from '../tools/index.js';
import { SERVER_INFO } from '../version.js';
import { observeLegacy, observeModern } from './observe-requests.js';
import { searchableCollections } from './searchable-collections.js';

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
  /**
   * Longest a role decision, or a prompts/list page kept for a role, stands
   * (PGMCP_ROLE_CACHE_MAX_AGE_SECONDS); default 10 s, 0: prompts/list pages are not kept.
   */
  readonly roleCacheMaxAgeMs?: number;
  /** How long a consent request's state stays good (PGMCP_CONSENT_MINUTES); default 10. */
  readonly consentMinutes?: number;
  /** Bounds on prompts/get arguments (PGMCP_PROMPT_MAX_*); the defaults when absent. */
  readonly promptLimits?: PromptLimits;
  /**
   * How long a 2025-11-25 request waits for the client's answer to elicitation/create or
   * sampling/createMessage; as long as the question's requestState is good (consentMinutes) when
   * absent.
   */
  readonly inputTimeoutMs?: number;
  /** The clock consents expire by (tests); Date.now by default. */
  readonly now?: () => number;
  /** Tool settings (config file "tools"); the defaults when absent. */
  readonly tools?: Config['tools'];
  /** Which OAuth scopes tools and method groups need (config file "scopes"); none when absent. */
  readonly scopes?: Config['scopes'];
  /** Tools and prompts added in code, never by configuration (the conformance runner's fixtures). */
  readonly extension?: AppExtension;
  /**
   * What query and explain calls one token, one role and all callers together may have in flight
   * (issue 32 point 4; serving.ts builds it from the settings); no limits when absent.
   */
  readonly toolLimits?: ToolLimits;
  /** Bounds on query and explain calls (PGMCP_QUERY_*); the defaults when absent. */
  readonly query?: Config['query'];
}

/**
 * What a program embedding pgmcp adds to the server: tools after the built-in ones, and prompts
 * answered by name before the stored ones.
 */
export interface AppExtension {
  readonly tools?: (deps: {
    readonly db: DatabaseHandle;
    readonly cursorSecrets: readonly string[];
  }) => Tool[];
  readonly prompts?: Readonly<
    Record<string, MethodHandler<GetPromptParams>['handle']>
  >;
}

/** The query bounds without settings (the defaults of config/environment.ts). */
const DEFAULT_QUERY: Config['query'] = {
  maxBytes: 24_576,
  maxCost: 1e9,
  tempFileLimitKb: 1_048_576,
  auditTextBytes: 4096,
};

/** The tool settings without a config file. */
const DEFAULT_TOOLS: Config['tools'] = {
  disabled: [],
  schemas: null,
  explainAnalyze: false,
  searchLimit: 20,
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
      now: options.now,
    }),
  };
  const promptDeps = promptDependencies(options, readDeps);
  // prompts/list pages per role (pgmcp.prompts' policy reads only the role), dropped when the
  // feed reports a prompt or schema change, and after the role decisions' age.
  const promptPages = new RolePageMemo<KeptResult>({
    maxEntries: 1000,
    maxAgeMs: options.roleCacheMaxAgeMs ?? 10_000,
  });
  const fanout = new StreamRegistry({
    serverInfo: SERVER_INFO,
    maxStreams: options.live.maxStreams,
    maxStreamsPerRole: options.live.maxStreamsPerRole,
    maxPendingBytes: options.live.maxPendingBytes,
    stallTimeoutMs: options.live.stallTimeoutMs,
    listChangedIntervalMs: options.live.listChangedIntervalMs,
    log: (line) => options.logger.warn(line),
    // A sensitive resource's updates reach only a caller whose consent holds (docs/consent.md).
    consented: (principal, uri) => readDeps.consent.hasConsent(principal, uri),
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
    [
      'prompts/list',
      createKeysetListMethod(listDeps, {
        collection: PROMPTS_COLLECTION,
        query: LIST_PROMPTS_PAGE,
        field: 'prompts',
        render: renderPrompt,
        keyOf: (row) => row.id,
        cache: 'list',
        memo: promptPages,
      }),
    ],
    ['prompts/get', getPromptMethod(options, promptDeps)],
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
    read: async (uri, ctx, input) => {
      const result = await readMethod.handle(
        {
          uri,
          inputResponses: input?.inputResponses,
          requestState: input?.requestState,
        },
        ctx,
      );
      // resources/read never streams nor keeps its answers; the checks keep the types honest.
      if (result instanceof KeptResult) return result.payload;
      if (!(result instanceof StreamingResult)) return result;
      result.stream.cancel();
      throw new ProtocolError('INTERNAL', 'A read produced a stream.');
    },
    consent: readDeps.consent,
  });
  const scopes = createScopePolicy(options.scopes);
  methods.set('tools/list', createListToolsMethod(tools, scopes));
  methods.set('tools/call', createCallToolMethod(tools, scopes));
  const shared = createDispatcher({
    serverInfo: SERVER_INFO,
    methods: scopes.active ? scopeGuarded(methods, scopes) : methods,
    logError: (message, error, fields) =>
      options.logger.error(message, error, fields),
  });
  // Issue 35: each request is observed once, in its own era (legacy ones reach `shared` unobserved).
  const dispatcher = observeModern(shared, options.logger);
  return {
    dispatcher,
    fanout,
    ...legacyEra(options, { shared, dispatcher }, fanout, scopes),
    startChangePath: async (tuning) => {
      const feed = await startChangePath({
        sources: options.sources,
        streams: fanout,
        // Prompts live in the main database (sources[0]); its log's prompt rows are theirs.
        deliveredChanges: (source, change) => {
          if (
            source !== options.sources[0] ||
            change.relation !== PROMPTS_RELATION
          )
            return deliveredChanges(source, change);
          promptPages.clear();
          return [promptChange(change)];
        },
        forgetCatalog: (source) => {
          promptPages.clear();
          forgetCatalog(source, options.roleDecisions);
        },
        retentionSeconds: options.live.changeRetentionSeconds,
        log: tuning?.log ?? ((line) => options.logger.info(line)),
        // Issue 35: failures at warn (a test's own `log` hears both).
        warn: tuning?.log ?? ((line) => options.logger.warn(line)),
        pollIntervalMs: tuning?.pollIntervalMs,
      });
      promptPages.start();
      for (const source of options.sources) source.navigators.start();
      return feed;
    },
  };
}

/**
 * The methods, each of a group the scope map guards checking the caller's scopes first (issue 32
 * point 11). A guarded method is never constant: its answer is not shared across callers.
 */
function scopeGuarded(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the method table's type, as above
  methods: ReadonlyMap<string, MethodHandler<any>>,
  scopes: ScopePolicy,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the method table's type, as above
): Map<string, MethodHandler<any>> {
  const grouped = new Set(Object.values(SCOPED_METHOD_GROUPS).flat());
  return new Map(
    [...methods].map(([name, method]) => [
      name,
      grouped.has(name)
        ? {
            params: method.params,
            handle(params: unknown, ctx: Parameters<typeof method.handle>[1]) {
              scopes.checkMethod(ctx.principal, name);
              return method.handle(params, ctx);
            },
          }
        : method,
    ]),
  );
}

/** What query and explain share: the database, their bounds, the statement guard and consent. */
function sqlToolDependencies(
  options: AppOptions,
  askConsent: ConsentCheck,
): SqlToolDependencies {
  const settings = options.tools ?? DEFAULT_TOOLS;
  const main = options.sources[0];
  return {
    db: options.db,
    schemas: settings.schemas,
    auditRetentionSeconds: options.live.auditRetentionSeconds,
    limits: options.query ?? DEFAULT_QUERY,
    log: (line: string) => options.logger.warn(line),
    guard: createSqlGuard({
      db: options.db,
      cacheMs: settings.guardCacheMs ?? SQL_GUARD_DEFAULTS.cacheMs,
      maxFunctions:
        settings.guardMaxFunctions ?? SQL_GUARD_DEFAULTS.maxFunctions,
      // The settings pgmcp sets per request (db/ad-hoc-sql.ts): the role is refused anyway.
      perRequestSettings: [
        'request.jwt.claims',
        ...(settings.schemas === null ? [] : ['search_path']),
      ],
    }),
    // query runs in the main database: the tables marked sensitive there ask for consent.
    consent: {
      tables: (main?.sensitive ?? []).filter(
        (table) =>
          table.database === undefined || table.database === main?.name,
      ),
      check: askConsent,
    },
  };
}

/** The tools served (issue 15), minus those the config file switches off. */
function serverTools(
  options: AppOptions,
  deps: { read: ReadResource; consent: ConsentGate },
): Tool[] {
  const settings = options.tools ?? DEFAULT_TOOLS;
  const main = options.sources[0];
  const askConsent: ConsentCheck = (ctx, target, input) =>
    deps.consent.check(ctx, 'tools/call', target, input);
  const sql = sqlToolDependencies(options, askConsent);
  // One limiter for both SQL tools: their calls count together.
  const limiter =
    options.toolLimits === undefined
      ? undefined
      : new ToolCallLimiter(options.toolLimits);
  const limited = <TArgs>(tool: Tool<TArgs>): Tool<TArgs> =>
    limiter === undefined ? tool : limitToolCalls(tool, limiter);
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
            collections: searchableCollections(options.sources),
          }),
        ]),
    createFetchTool(deps.read),
    limited(createQueryTool(sql)),
    limited(
      createExplainTool({ ...sql, analyzeAllowed: settings.explainAnalyze }),
    ),
  ];
  tools.push(
    ...(options.extension?.tools?.({
      db: options.db,
      cursorSecrets: options.cursorSecrets,
    }) ?? []),
  );
  return tools.filter((tool) => !settings.disabled.includes(tool.name));
}

/** prompts/get of stored prompts, and of the extension's prompts by name. */
function getPromptMethod(
  options: AppOptions,
  deps: PromptDependencies,
): MethodHandler<GetPromptParams> {
  const stored = createGetPromptMethod(deps);
  const added = options.extension?.prompts;
  if (added === undefined) return stored;
  return {
    params: GetPromptParamsSchema,
    handle: (params, ctx) =>
      (Object.hasOwn(added, params.name) ? added[params.name] : undefined)?.(
        params,
        ctx,
      ) ?? stored.handle(params, ctx),
  };
}

/** What prompts/ renders with: the main database, its catalog, and reads as the caller. */
function promptDependencies(
  options: AppOptions,
  readDeps: Parameters<typeof readContents>[0],
): PromptDependencies {
  const main = options.sources[0];
  return {
    db: options.db,
    catalog: {
      include: main?.scope.include ?? null,
      exclude: main?.scope.exclude ?? [],
      tableUri: (schema, relation) =>
        catalogUri(main?.name ?? '', schema, relation),
    },
    read: (uri, ctx) => readContents(readDeps, uri, ctx.principal, ctx),
    consent: (ctx, target, input) =>
      readDeps.consent.check(ctx, 'prompts/get', target, input),
    limits: options.promptLimits ?? DEFAULT_PROMPT_LIMITS,
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
  source.navigators.clear();
  roleDecisions?.clear();
}

/** Issue 14: the legacy era is an adapter over `dispatcher` and `streams`, not a second server. */
function legacyEra(
  options: AppOptions,
  { shared, dispatcher }: { shared: Dispatcher; dispatcher: Dispatcher },
  streams: StreamRegistry,
  scopes: ScopePolicy,
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
  const adapter = createLegacyAdapter({
    dispatcher: shared,
    serverInfo: SERVER_INFO,
    capabilities: LEGACY_CAPABILITIES,
    instructions: INSTRUCTIONS,
    subscribe: (session, uri, principal, signal) => {
      // resources/subscribe is the legacy adapter's own method: the resources scope guards it too.
      scopes.checkMethod(principal, 'resources/subscribe');
      return legacySubscriptions.subscribe(session, uri, principal, signal);
    },
    unsubscribe: (session, uri) =>
      legacySubscriptions.unsubscribe(session, uri),
    attach: (session, principal) =>
      legacySubscriptions.attach(session, principal),
    // The wait for a person's answer lasts as long as the question's requestState is good.
    inputTimeoutMs:
      options.inputTimeoutMs ?? (options.consentMinutes ?? 10) * 60_000,
    persist: async (session, principal) => {
      if (session.id !== undefined && session.logLevel !== undefined)
        await legacySessions.setLevel(session.id, principal, session.logLevel);
    },
  });
  const legacy = observeLegacy(adapter, options.logger);
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
