// subscriptions/listen (spec §7): validate the filter, keep only what the caller may hear of,
// acknowledge first, then hand the stream to the registry until either side ends it.
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import {
  createMethod,
  ListenParamsSchema,
  StreamingResult,
  SubscriptionMessages,
  type ListenParams,
  type MethodHandler,
  type SubscriptionFilter,
} from '../protocol/index.js';
import { StreamQueue } from './stream-queue.js';
import type { StreamRegistry } from './stream-registry.js';

export interface ListenDependencies {
  /** The open streams, where this one is reserved and added. */
  readonly fanout: StreamRegistry;
  /** Most URIs one stream may subscribe to. */
  readonly maxUris: number;
  /**
   * The requested URIs the caller may read, in request order, normalized (resources/ decides what
   * a URI is; an invalid one throws INVALID_URI). Runs in the caller's request transaction, so a
   * URI it cannot read is dropped exactly like one that does not exist.
   */
  readonly readableUris: (
    uris: readonly string[],
    principal: Principal,
    signal: AbortSignal,
  ) => Promise<string[]>;
}

/** Only what this server can send: no tools, so that opt-in is left out. */
function honoredFilter(
  requested: SubscriptionFilter,
  honoredUris: string[],
): SubscriptionFilter {
  const honored: SubscriptionFilter = {};
  if (requested.promptsListChanged === true) honored.promptsListChanged = true;
  if (requested.resourcesListChanged === true)
    honored.resourcesListChanged = true;
  if (requested.resourceSubscriptions !== undefined)
    honored.resourceSubscriptions = honoredUris;
  return honored;
}

export function createListenMethod(
  deps: ListenDependencies,
): MethodHandler<ListenParams> {
  return createMethod({
    params: ListenParamsSchema,
    async handle(params, ctx) {
      const requested = params.notifications;
      const uris = [...new Set(requested.resourceSubscriptions ?? [])];
      if (uris.length > deps.maxUris)
        throw new ProtocolError(
          'INVALID_PARAMS',
          `Invalid params: notifications.resourceSubscriptions lists ${uris.length} URIs; the limit is ${deps.maxUris}.`,
        );
      const release = deps.fanout.reserve(ctx.principal);
      let honoredUris: string[] = [];
      try {
        if (uris.length > 0)
          honoredUris = await deps.readableUris(
            uris,
            ctx.principal,
            ctx.signal,
          );
      } catch (error) {
        release();
        throw error;
      }
      const honored = honoredFilter(requested, honoredUris);
      const messages = new SubscriptionMessages(ctx.id);
      let subscriber: StreamQueue | undefined;
      let cancelled = false;
      return new StreamingResult({
        attach(sink) {
          if (cancelled || subscriber !== undefined) return;
          subscriber = new StreamQueue({
            principal: ctx.principal,
            messages,
            uris: honoredUris,
            listChanged: honored.resourcesListChanged === true,
            sink,
            promptsListChanged: honored.promptsListChanged === true,
          });
          // The acknowledgement goes out before the stream can receive anything (§7.2).
          sink.write(messages.acknowledged(honored));
          deps.fanout.add(subscriber, release);
        },
        cancel() {
          cancelled = true;
          release();
          if (subscriber !== undefined) {
            deps.fanout.remove(subscriber);
            subscriber.markGone();
          }
        },
      });
    },
  });
}
