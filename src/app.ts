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
  type Dispatcher,
  type MethodHandler,
} from './protocol/index.js';
import { createListenMethod, Fanout } from './notifications/index.js';
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
  /** Role decisions (db/ createRoleChecker), forgotten when a feed reports a schema change. */
  readonly roleDecisions?: { clear(): void };
}

export interface App {
  readonly dispatcher: Dispatcher;
  /** Open listen streams. */
  readonly fanout: Fanout;
  /** Deliver a batch from `source`'s change feed (server.ts wires one feed per database). */
  publish(source: CatalogSource, changes: readonly ChangeRow[]): Promise<void>;
  /** `source`'s history changed (restore, failover): forget cached facts, tell every stream. */
  resync(source: CatalogSource): void;
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
  return {
    dispatcher,
    fanout,
    publish: (source, changes) => {
      // A schema change (DDL, GRANT, REVOKE) may change whose catalog has entries, and often
      // comes with a role's setup or removal (role DDL itself reaches no feed).
      if (changes.some((change) => change.kind === 'schema')) {
        source.lookahead.clear();
        options.roleDecisions?.clear();
      }
      return fanout.publish(
        changes.flatMap((change) => deliveredChanges(source, change)),
        authorizeIn(source.db),
      );
    },
    resync: (source) => {
      source.lookahead.clear();
      options.roleDecisions?.clear();
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
