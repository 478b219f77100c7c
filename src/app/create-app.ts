// The composition root's app: from the open databases and the config it wires each feature (its
// own function, wire-*.ts), fills the method table (method-table.ts), builds the dispatcher and
// the protocol eras the transports serve (era-wiring.ts; the 2025-11-25 era in wire-legacy.ts).
import { createScopePolicy } from '../auth/index.js';
import {
  createListenMethod,
  StreamRegistry,
  type ChangeFeed,
} from '../notifications/index.js';
import { createDispatcher, type Dispatcher } from '../protocol/index.js';
import { readableUris } from '../resources/index.js';
import { SERVER_INFO } from '../version.js';
import type { AppOptions } from './app-options.js';
import { modernOnly, type EraWiring } from './era-wiring.js';
import { modernMethods } from './method-table.js';
import { observeModern } from './observe-requests.js';
import { wireChangePath, type ChangePathTuning } from './wire-change-path.js';
import { wireLegacyEra } from './wire-legacy.js'; // legacy-wiring
import { wirePrompts } from './wire-prompts.js';
import { completeMethod, wireResources } from './wire-resources.js';
import { readThrough, serverTools } from './wire-tools.js';

export type { AppExtension, AppOptions } from './app-options.js';

export interface App extends EraWiring {
  /** The 2026-07-28 dispatcher, every request observed. */
  readonly dispatcher: Dispatcher;
  /** Open listen streams. */
  readonly fanout: StreamRegistry;
  /** Start reading every source's change log into the streams (notifications/ startChangePath). */
  startChangePath(tuning?: ChangePathTuning): Promise<ChangeFeed>;
}

/** Build the dispatcher with every method this server offers, and the eras served. */
export function createApp(options: AppOptions): App {
  const resources = wireResources(options);
  const prompts = wirePrompts(options, resources);
  const fanout = createFanout(options, resources);
  const scopes = createScopePolicy(options.scopes);
  const methods = modernMethods({
    resources,
    complete: completeMethod(options, prompts.deps),
    prompts,
    listen: createListenMethod({
      fanout,
      maxUris: options.live.maxSubscriptionUris,
      readableUris: (uris, principal, signal) =>
        readableUris(
          { db: options.db, sources: options.sources, principal, signal },
          uris,
        ),
    }),
    tools: serverTools(options, {
      read: readThrough(resources.read),
      consent: resources.consent,
    }),
    scopes,
  });
  const shared = createDispatcher({
    serverInfo: SERVER_INFO,
    methods,
    logError: (message, error, fields) =>
      options.logger.error(message, error, fields),
  });
  // Issue 35: each request is observed once, in its own era (another era's reach `shared` unobserved).
  const dispatcher = observeModern(shared, options.logger);
  const core = { shared, dispatcher, streams: fanout, scopes };
  const eras: EraWiring = {
    ...modernOnly(core),
    ...wireLegacyEra(options, core), // legacy-wiring
  };
  return {
    dispatcher,
    fanout,
    ...eras,
    startChangePath: (tuning) =>
      wireChangePath(
        options,
        { streams: fanout, prompts, channels: eras.channels },
        tuning,
      ),
  };
}

/** The listen streams' registry; a sensitive resource's updates reach only who consented. */
function createFanout(
  options: AppOptions,
  resources: ReturnType<typeof wireResources>,
): StreamRegistry {
  return new StreamRegistry({
    serverInfo: SERVER_INFO,
    maxStreams: options.live.maxStreams,
    maxStreamsPerRole: options.live.maxStreamsPerRole,
    maxPendingBytes: options.live.maxPendingBytes,
    stallTimeoutMs: options.live.stallTimeoutMs,
    listChangedIntervalMs: options.live.listChangedIntervalMs,
    log: (line) => options.logger.warn(line),
    // A sensitive resource's updates reach only a caller whose consent holds (docs/consent.md).
    consented: (principal, uri) => resources.consent.hasConsent(principal, uri),
  });
}
