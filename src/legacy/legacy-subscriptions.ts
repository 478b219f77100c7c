// Legacy resources/subscribe (legacy digest §6.6–§6.8): each 2025-11-25 session with a channel is
// one subscriber of the same fan-out as listen streams, so it hears of exactly the changes its role
// may read, from the same change log, in the 2025-11-25 form. An HTTP session's subscriptions are
// kept with the session in the shared store (issue 34 point 1): any replica writes them, and the
// replica holding its GET stream loads them.
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import { StreamQueue, type StreamRegistry } from '../notifications/index.js';
import type { StreamSink } from '../protocol/index.js';
import type { LegacySubscriptionRecords } from './http/session-records.js';
import {
  LegacyNotificationMessages,
  type LegacySession,
} from './session/legacy-session.js';

/** The readable subset of `uris`, normalized, in the caller's request transaction (resources/). */
export type ReadableUris = (
  uris: readonly string[],
  principal: Principal,
  signal: AbortSignal,
) => Promise<string[]>;

/** Who subscribes, and the cancel of the request that asked. */
export interface SubscribeCaller {
  readonly principal: Principal;
  readonly signal: AbortSignal;
}

const MESSAGES = new LegacyNotificationMessages();

/** What the subscriptions are built over. */
export interface LegacySubscriptionsOptions {
  readonly streams: StreamRegistry;
  readonly readable: ReadableUris;
  /** Most URIs one session subscribes to. */
  readonly maxUris: number;
  /** Where an HTTP session's subscriptions are kept; a stdio session's stay in the process. */
  readonly records?: LegacySubscriptionRecords;
}

/** Which legacy sessions of this process are registered with the stream registry. */
export class LegacySubscriptions {
  readonly #registered = new Map<LegacySession, StreamQueue>();
  /** Requested URI → normalized key, per session (unsubscribe names what subscribe named). */
  readonly #keys = new WeakMap<LegacySession, Map<string, string>>();

  readonly streams: StreamRegistry;
  readonly #options: LegacySubscriptionsOptions;

  constructor(options: LegacySubscriptionsOptions) {
    this.streams = options.streams;
    this.#options = options;
  }

  /**
   * A URI the role cannot read, or that does not exist, is RESOURCE_NOT_FOUND (-32002 to legacy).
   * An HTTP session's subscription is stored first: the replica holding its stream is told.
   */
  async subscribe(
    session: LegacySession,
    uri: string,
    { principal, signal }: SubscribeCaller,
  ): Promise<void> {
    const { maxUris, records } = this.#options;
    const [key] = await this.#options.readable([uri], principal, signal);
    if (key === undefined)
      throw new ProtocolError('RESOURCE_NOT_FOUND', 'Resource not found.', {
        data: { uri },
      });
    // Stored and then held here in one of the session's turns (legacy-session.ts inTurn).
    await session.inTurn(async () => {
      const keys = this.#keysOf(session);
      const stored =
        session.id === undefined || records === undefined
          ? !keys.has(uri) && keys.size >= maxUris
            ? 'full'
            : 'subscribed'
          : await records.subscribe(session.id, principal, {
              uri,
              key,
              max: maxUris,
            });
      if (stored === 'gone') throw sessionGone();
      if (stored === 'full')
        throw new ProtocolError(
          'INVALID_PARAMS',
          `Invalid params: a session may subscribe to at most ${maxUris} URIs.`,
        );
      keys.set(uri, key);
      session.subscriptions.add(key);
      if (session.ready) this.#reattach(session, principal);
    });
  }

  /**
   * What the shared store holds for `session` (requested URI → normalized), loaded by the replica
   * holding its stream; the stream is registered again only when its URIs changed.
   */
  load(session: LegacySession, stored: ReadonlyMap<string, string>): void {
    this.#keys.set(session, new Map(stored));
    const uris = new Set(stored.values());
    const same =
      uris.size === session.subscriptions.size &&
      [...uris].every((uri) => session.subscriptions.has(uri));
    if (same) return;
    session.subscriptions.clear();
    for (const uri of uris) session.subscriptions.add(uri);
    const subscriber = this.#registered.get(session);
    if (subscriber !== undefined) this.#reattach(session, subscriber.principal);
  }

  /** Issue 35: open streams by era and their unwritten bytes (the registry's, legacy ones named). */
  census(): { modern: number; legacy: number; pendingBytes: number } {
    const { open, speaking, pendingBytes } = this.streams.census(MESSAGES);
    return { modern: open - speaking, legacy: speaking, pendingBytes };
  }

  /** Harmless for a URI not subscribed. An HTTP session's is removed from the store first. */
  async unsubscribe(
    session: LegacySession,
    uri: string,
    principal: Principal,
  ): Promise<void> {
    const { records } = this.#options;
    await session.inTurn(async () => {
      if (
        session.id !== undefined &&
        records !== undefined &&
        !(await records.unsubscribe(session.id, principal, uri))
      )
        throw sessionGone();
      const keys = this.#keysOf(session);
      const key = keys.get(uri);
      if (key === undefined) return;
      keys.delete(uri);
      if (![...keys.values()].includes(key)) session.subscriptions.delete(key);
      const subscriber = this.#registered.get(session);
      if (subscriber !== undefined)
        this.#reattach(session, subscriber.principal);
    });
  }

  /**
   * (Re)register `session` with its current URIs, as `principal`, if it has a channel; it always
   * hears both list_changed notifications (resources and prompts). What the queue it replaces had
   * not written yet (a paced list_changed, say) carries over. Throws TOO_MANY_STREAMS when the
   * registry's caps are reached.
   */
  attach(session: LegacySession, principal: Principal): void {
    const carried = this.#registered.get(session)?.unwritten();
    this.detach(session);
    if (session.channel === undefined || session.closed) return;
    const release = this.streams.reserve(principal);
    const subscriber = new StreamQueue({
      principal,
      messages: MESSAGES,
      uris: [...session.subscriptions],
      listChanged: true,
      sink: this.#sinkOf(session),
      // The legacy initialize offers prompts with listChanged.
      promptsListChanged: true,
    });
    this.#registered.set(session, subscriber);
    this.streams.add(subscriber, release);
    if (carried !== undefined) {
      subscriber.carryOver(carried);
      subscriber.deliver(this.streams.limits);
    }
  }

  /**
   * attach() for a session whose URIs changed while its channel is open. If the registry refuses
   * (its caps, or it is shutting down), an HTTP session's GET stream is not left open, unheard and
   * holding its connection: it ends, saying why when the client asked for log messages, and the
   * client's next GET is answered with the refusal, as a listen over the caps is. A stdio session's
   * output cannot be opened again: it stays, and the caller is refused.
   */
  #reattach(session: LegacySession, principal: Principal): void {
    try {
      this.attach(session, principal);
    } catch (error) {
      if (session.id === undefined || this.#options.records === undefined)
        throw error;
      session.log('error', {
        message: `notifications stopped: ${error instanceof ProtocolError ? error.message : 'the server could not deliver them'}; open the stream again`,
      });
      const channel = session.channel;
      session.channel = undefined;
      channel?.end();
    }
  }

  /** Stop delivering to `session` (its channel closed, or it ended). */
  detach(session: LegacySession): void {
    const subscriber = this.#registered.get(session);
    if (subscriber === undefined) return;
    this.#registered.delete(session);
    this.streams.remove(subscriber);
    subscriber.markGone();
  }

  #keysOf(session: LegacySession): Map<string, string> {
    let keys = this.#keys.get(session);
    if (keys === undefined)
      this.#keys.set(session, (keys = new Map<string, string>()));
    return keys;
  }

  /** Writes to whatever channel the session has now; the registry ending it closes the channel. */
  #sinkOf(session: LegacySession): StreamSink {
    return {
      write: (message) => session.channel?.write(message) ?? true,
      get pendingBytes() {
        return session.channel?.pendingBytes ?? 0;
      },
      onDrain: (listener) => {
        if (session.channel === undefined) listener();
        else session.channel.onDrain(listener);
      },
      end: () => {
        // Stalled, token expired, role gone or shutdown: the client reconnects its GET stream.
        this.#registered.delete(session);
        const channel = session.channel;
        session.channel = undefined;
        channel?.end();
      },
    };
  }
}

/** The session ended while a request of it was being answered. */
function sessionGone(): ProtocolError {
  return new ProtocolError(
    'SESSION_NOT_FOUND',
    'Session not found: it ended or expired; initialize a new one.',
  );
}
