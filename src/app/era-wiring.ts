// What the transports serve beside the 2026-07-28 dispatcher, as one value: the modern-only one
// here, or another era's (wire-legacy.ts) spread over it in createApp.
import type { Writable } from 'node:stream';
import type { ScopePolicy } from '../auth/index.js';
import type { ListenChannel, StreamRegistry } from '../notifications/index.js';
import type { observeSources } from '../observability/index.js';
import type { Dispatcher } from '../protocol/index.js';
import type { HttpEraRoute } from '../transport/index.js';

/** Gauges read at scrape time (issue 35): sessions held, open streams by era, unwritten bytes. */
export type AppGauges = Omit<
  Parameters<typeof observeSources>[0],
  'changeLogBytes'
>;

/** The transports' view of the protocol eras served. */
export interface EraWiring {
  /** What the HTTP endpoint serves beside 2026-07-28 (its GET, DELETE, and the POSTs it claims). */
  readonly otherEraHttp: HttpEraRoute | undefined;
  /** The dispatcher stdio serves; `output` carries what an era sends unasked (notifications). */
  stdioDispatcher(output: Writable): Dispatcher;
  readonly gauges: AppGauges;
  /** Channels the main database's listener also LISTENs on for this era (none for 2026-07-28). */
  readonly channels: readonly ListenChannel[];
}

/** What another era is wired over: the modern dispatcher (observed and not) and the fan-out. */
export interface EraCore {
  /** The dispatcher whose handlers another era shares (its requests are observed as its own). */
  readonly shared: Dispatcher;
  /** The 2026-07-28 dispatcher as transports get it (observed). */
  readonly dispatcher: Dispatcher;
  readonly streams: StreamRegistry;
  readonly scopes: ScopePolicy;
}

/** 2026-07-28 only: stdio serves the dispatcher itself, and HTTP nothing beside it. */
export function modernOnly(core: EraCore): EraWiring {
  return {
    otherEraHttp: undefined,
    stdioDispatcher: () => core.dispatcher,
    channels: [],
    gauges: {
      openStreams: () => ({ modern: core.streams.census().open, legacy: 0 }),
      queuedBytes: () => core.streams.census().pendingBytes,
    },
  };
}
