// Composition root: the only file that wires protocol, resources and db together.
import {
  AuthenticationError,
  LOGIN_PRINCIPAL,
  createTokenVerifier,
  type Principal,
} from './auth/index.js';
import type { Config } from './config.js';
import {
  CHANGE_VISIBILITY,
  createLegacySessionStore,
  runRequestQuery,
  type ChangeRow,
  type DatabaseHandle,
} from './db/index.js';
import { ProtocolError } from './errors.js';
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
  type MethodHandler,
  type StreamSink,
} from './protocol/index.js';
import {
  createListenMethod,
  Fanout,
  LegacySubscriptions,
} from './notifications/index.js';
import {
  deliveredChanges,
  type CatalogSource,
  createCompleteMethod,
  createListResourcesMethod,
  createListTemplatesMethod,
  createReadResourceMethod,
  readableUris,
  TTL_MS,
} from './resources/index.js';
import { createLegacyHttp, type LegacyHttp } from './transport/index.js';
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
}

export interface App {
  readonly dispatcher: Dispatcher;
  /** Open listen streams. */
  readonly fanout: Fanout;
  /** Deliver a batch from `source`'s change feed (server.ts wires one feed per database). */
  publish(source: CatalogSource, changes: readonly ChangeRow[]): Promise<void>;
  /** `source`'s history changed (restore, failover): forget cached facts, tell every stream. */
  resync(source: CatalogSource): void;
  /** The 2025-11-25 era over the same handlers and fan-out (issue 14). */
  readonly legacy: LegacyAdapter;
  /** Legacy sessions' channels (HTTP GET streams) as fan-out subscribers. */
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
  'directory covers what is under it) and notifications/resources/list_changed as changes commit.';

/** What a 2025-11-25 session is offered (legacy digest §3.4): no `extensions`, plus logging. */
const LEGACY_CAPABILITIES = {
  resources: { subscribe: true, listChanged: true },
  completions: {},
  logging: {},
};

/** Build the dispatcher with every method this server offers. */
export function createApp(options: AppOptions): App {
  const cursors = createCursorCodec(options.cursorSecrets);
  const listDeps = {
    db: options.db,
    sources: options.sources,
    cursors,
    pageSize: options.pageSize,
  };
  // Delivery checks run with no client to cancel them.
  const background = new AbortController().signal;
  // Who may hear of which seqs of one database's change log, asked as the role in that database.
  const authorizeIn =
    (db: DatabaseHandle) =>
    async (principal: Principal, seqs: readonly string[]) => {
      const rows = await runRequestQuery(
        db,
        principal,
        background,
        CHANGE_VISIBILITY,
        { seqs },
      );
      return new Map(
        rows.map((row) => [row.seq, { before: row.before, after: row.after }]),
      );
    };
  const fanout = new Fanout({
    serverInfo: SERVER_INFO,
    maxStreams: options.live.maxStreams,
    maxStreamsPerRole: options.live.maxStreamsPerRole,
    maxPendingBytes: options.live.maxPendingBytes,
    stallTimeoutMs: options.live.stallTimeoutMs,
    log: (line) => options.logger.warn(line),
  });
  // `any`: a heterogeneous map; createMethod checked each handler against its params schema.
  const methods = new Map<string, MethodHandler<any>>([
    [
      'server/discover',
      createDiscoverMethod({
        capabilities: {
          resources: { subscribe: true, listChanged: true },
          completions: {},
        },
        instructions: INSTRUCTIONS,
        ttlMs: TTL_MS.discover,
      }),
    ],
    ['resources/list', createListResourcesMethod(listDeps)],
    ['resources/templates/list', createListTemplatesMethod(listDeps)],
    [
      'resources/read',
      createReadResourceMethod({
        db: options.db,
        sources: options.sources,
        maxDirectoryEntries: options.maxDirectoryEntries,
      }),
    ],
    [
      'completion/complete',
      createCompleteMethod({ db: options.db, sources: options.sources }),
    ],
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
  const dispatcher = createDispatcher({
    serverInfo: SERVER_INFO,
    methods,
    logError: (message, error) => options.logger.error(message, error),
  });
  // Issue 14: the legacy era is an adapter over `dispatcher` and `fanout`, not a second server.
  const legacySessions = createLegacySessionStore(options.db, {
    idleSeconds: options.live.legacySessionIdleSeconds,
    maxPerRole: options.live.maxLegacySessionsPerRole,
  });
  const legacySubscriptions = new LegacySubscriptions(
    fanout,
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
    dispatcher,
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
    fanout,
    publish: (source, changes) => {
      // A schema change (DDL, GRANT, REVOKE) may change whose catalog has entries.
      if (changes.some((change) => change.kind === 'schema'))
        source.lookahead.clear();
      return fanout.publish(
        changes.flatMap((change) => deliveredChanges(source, change)),
        authorizeIn(source.db),
      );
    },
    resync: (source) => {
      source.lookahead.clear();
      // Streams are not told apart by database: any of them may watch `source`.
      fanout.markAllStale();
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
    return async () => principal;
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
