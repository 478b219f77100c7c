// All of the 2025-11-25 era's wiring (issue 14, issue 33): the adapter over the shared handlers,
// subscriptions on the same fan-out, HTTP sessions in the shared store, and stdio serving both eras.
// The only file of app/ that imports legacy/; createApp spreads what it returns over the
// modern-only wiring on one line marked `// legacy-wiring` (test/lint/modern-only.test.ts).
import type { Writable } from 'node:stream';
import {
  CLIENT_SESSIONS_CHANNEL,
  createClientSessionStore,
  type ClientSessionStore,
} from '../db/index.js';
import {
  createEraDispatcher,
  createLegacyAdapter,
  createLegacyHttp,
  createLineChannel,
  LegacySession,
  LegacySubscriptions,
  type LegacyAdapter,
} from '../legacy/index.js';
import type { Logger } from '../log.js';
import { readableUris } from '../resources/index.js';
import { SERVER_INFO } from '../version.js';
import type { AppOptions } from './app-options.js';
import type { EraCore, EraWiring } from './era-wiring.js';
import { INSTRUCTIONS } from './method-table.js';
import { observeRequest } from './observe-requests.js';

/** What a 2025-11-25 session is offered (legacy digest §3.4): no `extensions`, plus logging. */
const LEGACY_CAPABILITIES = {
  resources: { subscribe: true, listChanged: true },
  tools: {},
  prompts: { listChanged: true },
  completions: {},
  logging: {},
};

/** Issue 14: the legacy era is an adapter over the shared dispatcher and streams, not a second server. */
export function wireLegacyEra(options: AppOptions, core: EraCore): EraWiring {
  const sessions = createClientSessionStore(options.db, {
    idleSeconds: options.live.legacySessionIdleSeconds,
    maxPerRole: options.live.maxLegacySessionsPerRole,
  });
  const subscriptions = new LegacySubscriptions({
    streams: core.streams,
    readable: (uris, principal, signal) =>
      readableUris(
        { db: options.db, sources: options.sources, principal, signal },
        uris,
      ),
    maxUris: options.live.maxSubscriptionUris,
    // Issue 34 point 1: an HTTP session's subscriptions are kept with it, for every replica.
    records: sessions,
  });
  const legacy = observeLegacy(
    createAdapter(options, core, { sessions, subscriptions }),
    options.logger,
  );
  const http = createLegacyHttp({
    adapter: legacy,
    records: sessions,
    subscriptions,
    maxSessions: options.live.maxLegacySessions,
    idleMs: options.live.legacySessionIdleSeconds * 1000,
    keepAliveMs: options.live.keepAliveMs,
    log: (line) => options.logger.warn(line),
  });
  return {
    otherEraHttp: http,
    // Both eras on stdio: the process is the legacy session, `output` its notifications' channel.
    stdioDispatcher: (output: Writable) => {
      const session = new LegacySession();
      session.channel = createLineChannel(output);
      return createEraDispatcher(core.dispatcher, legacy, session);
    },
    // Issue 34 point 1: a change to a session through any replica reaches the one holding its
    // stream, on the main database's listener connection.
    channels: [
      {
        channel: CLIENT_SESSIONS_CHANNEL,
        notified: (payload) => http.sessionChanged(payload),
        listening: () => http.resync(),
        watch: (want) => http.watch(want),
      },
    ],
    gauges: {
      legacySessions: () => http.held,
      openStreams: () => subscriptions.census(),
      queuedBytes: () => subscriptions.census().pendingBytes,
    },
  };
}

/** The adapter over the shared handlers, with subscriptions and the log level in the store. */
function createAdapter(
  options: AppOptions,
  { shared, scopes }: EraCore,
  {
    sessions,
    subscriptions,
  }: {
    readonly sessions: ClientSessionStore;
    readonly subscriptions: LegacySubscriptions;
  },
): LegacyAdapter {
  return createLegacyAdapter({
    dispatcher: shared,
    serverInfo: SERVER_INFO,
    capabilities: LEGACY_CAPABILITIES,
    instructions: INSTRUCTIONS,
    subscribe: (session, uri, caller) => {
      // resources/subscribe is the legacy adapter's own method: the resources scope guards it too.
      scopes.checkMethod(caller.principal, 'resources/subscribe');
      return subscriptions.subscribe(session, uri, caller);
    },
    unsubscribe: (session, uri, caller) =>
      subscriptions.unsubscribe(session, uri, caller.principal),
    attach: (session, principal) => subscriptions.attach(session, principal),
    // The wait for a person's answer lasts as long as the question's requestState is good.
    inputTimeoutMs:
      options.inputTimeoutMs ?? (options.consentMinutes ?? 10) * 60_000,
    persist: async (session, principal) => {
      if (session.id !== undefined && session.logLevel !== undefined)
        await sessions.setLevel(session.id, principal, session.logLevel);
    },
  });
}

/** `legacy` with every request observed as 2025-11-25 traffic of its session. */
function observeLegacy(legacy: LegacyAdapter, logger: Logger): LegacyAdapter {
  return {
    handle: (message, session, transport) =>
      observeRequest(
        {
          message,
          transport,
          logger,
          era: '2025-11-25',
          sessionId: session.id,
        },
        () => legacy.handle(message, session, transport),
      ),
    fail: (error, id) => legacy.fail(error, id),
  };
}
