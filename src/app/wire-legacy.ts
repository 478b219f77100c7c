// All of the 2025-11-25 era's wiring (issue 14, issue 33): the adapter over the shared handlers,
// subscriptions on the same fan-out, HTTP sessions in the shared store, and stdio serving both eras.
// The only file of app/ that imports legacy/; createApp spreads what it returns over the
// modern-only wiring on one line marked `// legacy-wiring` (test/lint/modern-only.test.ts).
import type { Writable } from 'node:stream';
import { createClientSessionStore } from '../db/index.js';
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
  const { shared, dispatcher, streams, scopes } = core;
  const sessions = createClientSessionStore(options.db, {
    idleSeconds: options.live.legacySessionIdleSeconds,
    maxPerRole: options.live.maxLegacySessionsPerRole,
  });
  const subscriptions = new LegacySubscriptions(
    streams,
    (uris, principal, signal) =>
      readableUris(
        { db: options.db, sources: options.sources, principal, signal },
        uris,
      ),
    options.live.maxSubscriptionUris,
  );
  const adapter = createLegacyAdapter({
    dispatcher: shared,
    serverInfo: SERVER_INFO,
    capabilities: LEGACY_CAPABILITIES,
    instructions: INSTRUCTIONS,
    subscribe: (session, uri, caller) => {
      // resources/subscribe is the legacy adapter's own method: the resources scope guards it too.
      scopes.checkMethod(caller.principal, 'resources/subscribe');
      return subscriptions.subscribe(session, uri, caller);
    },
    unsubscribe: (session, uri) => subscriptions.unsubscribe(session, uri),
    attach: (session, principal) => subscriptions.attach(session, principal),
    // The wait for a person's answer lasts as long as the question's requestState is good.
    inputTimeoutMs:
      options.inputTimeoutMs ?? (options.consentMinutes ?? 10) * 60_000,
    persist: async (session, principal) => {
      if (session.id !== undefined && session.logLevel !== undefined)
        await sessions.setLevel(session.id, principal, session.logLevel);
    },
  });
  const legacy = observeLegacy(adapter, options.logger);
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
      return createEraDispatcher(dispatcher, legacy, session);
    },
    gauges: {
      legacySessions: () => http.held,
      openStreams: () => subscriptions.census(),
      queuedBytes: () => subscriptions.census().pendingBytes,
    },
  };
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
