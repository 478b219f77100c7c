// The open listen streams: caps per process and per role, add and remove, and the indexes a batch
// of changes is matched against (by subscribed URI, and the list subscribers).
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import type { FanoutMessages, Implementation } from '../protocol/index.js';
import {
  roleKey,
  startStallTimer,
  type QueueLimits,
  type StreamQueue,
} from './stream-queue.js';

export interface StreamRegistryOptions extends QueueLimits {
  readonly serverInfo: Implementation;
  readonly maxStreams: number;
  readonly maxStreamsPerRole: number;
  /** Longest a broadcast writes before yielding to the event loop, in ms (default 6). */
  readonly sliceMs?: number;
  /**
   * Whether `principal` consented to reading the sensitive resource `uri` within the expiry
   * (resources/ consent.ts); without it, no stream hears of sensitive resources' updates.
   */
  readonly consented?: (principal: Principal, uri: string) => boolean;
}

export class StreamRegistry {
  readonly #options: StreamRegistryOptions;
  readonly #streams = new Set<StreamQueue>();
  readonly #byUri = new Map<string, Set<StreamQueue>>();
  readonly #listStreams = new Set<StreamQueue>();
  /** Streams per role, counting reservations not yet attached. */
  readonly #perRole = new Map<string, number>();
  #reserved = 0;
  #closing = false;
  readonly #stopStallTimer: () => void;

  constructor(options: StreamRegistryOptions) {
    this.#options = options;
    this.#stopStallTimer = startStallTimer(this.#streams, options);
  }

  get size(): number {
    return this.#streams.size;
  }

  /** Issue 35: open streams, how many speak `messages`, and their unwritten bytes. */
  census(messages?: FanoutMessages): {
    open: number;
    speaking: number;
    pendingBytes: number;
  } {
    let speaking = 0;
    let pendingBytes = 0;
    for (const stream of this.#streams) {
      if (stream.messages === messages) speaking += 1;
      pendingBytes += stream.sink.pendingBytes;
    }
    return { open: this.#streams.size, speaking, pendingBytes };
  }

  /** What ends a stream whose client stopped reading (the queue's backpressure). */
  get limits(): QueueLimits {
    return this.#options;
  }

  /** Longest a broadcast writes before yielding to the event loop, in ms. */
  get sliceMs(): number {
    return this.#options.sliceMs ?? 6;
  }

  /** Whether `principal` may hear of updates of the sensitive resource `uri` (its consent holds). */
  consented(principal: Principal, uri: string): boolean {
    return this.#options.consented?.(principal, uri) ?? false;
  }

  /** Streams that asked for notifications/resources/list_changed. */
  /** One principal per role among the open streams, by role key (shared delivery lists them). */
  principalsByRole(): Map<string, Principal> {
    const found = new Map<string, Principal>();
    for (const stream of this.#streams) {
      if (!found.has(stream.roleKey))
        found.set(stream.roleKey, stream.principal);
      if (found.size === this.#perRole.size) break;
    }
    return found;
  }

  get listStreams(): ReadonlySet<StreamQueue> {
    return this.#listStreams;
  }

  /**
   * Hold a place for a stream of `principal`, or refuse with TOO_MANY_STREAMS. The returned
   * release() must run if the stream is never added.
   */
  reserve(principal: Principal): () => void {
    if (this.#closing)
      throw new ProtocolError(
        'UNAVAILABLE',
        'The server is shutting down; listen again shortly.',
      );
    const key = roleKey(principal);
    const forRole = this.#perRole.get(key) ?? 0;
    if (this.#streams.size + this.#reserved >= this.#options.maxStreams)
      throw new ProtocolError(
        'TOO_MANY_STREAMS',
        `Too many open subscriptions on this server (limit ${this.#options.maxStreams}); close one or try another replica.`,
      );
    if (forRole >= this.#options.maxStreamsPerRole)
      throw new ProtocolError(
        'TOO_MANY_STREAMS',
        `Too many open subscriptions for this role (limit ${this.#options.maxStreamsPerRole}); close one first.`,
      );
    this.#perRole.set(key, forRole + 1);
    this.#reserved += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#reserved -= 1;
      this.#decrementRole(key);
    };
  }

  /**
   * Start delivering to `stream` (its reservation becomes the stream's place); it leaves the
   * registry when it ends, however it ends.
   */
  add(stream: StreamQueue, releaseReservation: () => void): void {
    releaseReservation();
    this.#endAtTokenExpiry(stream);
    this.#perRole.set(
      stream.roleKey,
      (this.#perRole.get(stream.roleKey) ?? 0) + 1,
    );
    this.#streams.add(stream);
    for (const uri of stream.uris) {
      let set = this.#byUri.get(uri);
      if (set === undefined) this.#byUri.set(uri, (set = new Set()));
      set.add(stream);
    }
    if (stream.listChanged || stream.promptsListChanged)
      this.#listStreams.add(stream);
    stream.onEnd(() => this.remove(stream));
  }

  remove(stream: StreamQueue): void {
    if (!this.#streams.delete(stream)) return;
    for (const uri of stream.uris) {
      const set = this.#byUri.get(uri);
      set?.delete(stream);
      if (set?.size === 0) this.#byUri.delete(uri);
    }
    this.#listStreams.delete(stream);
    this.#decrementRole(stream.roleKey);
  }

  /** The streams subscribed to each change's URI or a directory above it, with those changes. */
  subscribersOf<TChange extends { readonly uri: string | null }>(
    changes: readonly TChange[],
  ): Map<StreamQueue, TChange[]> {
    const interested = new Map<StreamQueue, TChange[]>();
    for (const change of changes) {
      if (change.uri === null) continue;
      for (const uri of subscriptionKeys(change.uri)) {
        for (const stream of this.#byUri.get(uri) ?? []) {
          const list = interested.get(stream);
          if (list === undefined) interested.set(stream, [change]);
          else list.push(change);
        }
      }
    }
    return interested;
  }

  /** End every stream of the role `key` with `code` (an error key) and `message`. */
  endRole(key: string, message: string, code: string): void {
    for (const stream of [...this.#streams])
      if (stream.roleKey === key) stream.endWithError(message, code);
  }

  /**
   * Tell every stream that what it watches may have changed: `updated` for each URI it subscribed
   * to and `list_changed` where asked for. For when the change log cannot say what changed (the
   * database's history changed). Only URIs the stream subscribed to (and could read then) are
   * named, so no role learns of a resource it could not already see.
   */
  markAllStale(): void {
    for (const stream of [...this.#streams]) {
      if (stream.ended) continue;
      for (const uri of stream.uris) stream.enqueue(JSON.stringify(uri), false);
      if (stream.listChanged) stream.enqueue(undefined, true);
      if (stream.promptsListChanged) stream.enqueuePromptsList();
      stream.deliver(this.#options);
    }
  }

  /** Graceful shutdown: every stream gets its SubscriptionsListenResult, then closes. */
  closeAll(): void {
    this.#closing = true;
    this.#stopStallTimer();
    for (const stream of [...this.#streams])
      stream.end(stream.messages.result(this.#options.serverInfo));
  }

  /**
   * A stream opened with a token lives no longer than the token: at its `exp` the stream ends,
   * and the client listens again with a fresh one.
   */
  #endAtTokenExpiry(stream: StreamQueue): void {
    const exp = stream.principal.claims['exp'];
    if (typeof exp !== 'number') return;
    const timer = setTimeout(
      () =>
        stream.endWithError(
          'Subscription ended: the token expired; listen again with a fresh one.',
          'AUTHENTICATION_REQUIRED',
        ),
      Math.max(0, Math.min(exp * 1000 - Date.now(), 2 ** 31 - 1)),
    );
    timer.unref();
    stream.onEnd(() => clearTimeout(timer));
  }

  #decrementRole(key: string): void {
    const count = (this.#perRole.get(key) ?? 1) - 1;
    if (count <= 0) this.#perRole.delete(key);
    else this.#perRole.set(key, count);
  }
}

/**
 * The subscription keys a change to `uri` matches: the URI itself and every ancestor ending in
 * "/" below the authority (file:///docs/a.md → file:///docs/a.md, file:///docs/, file:///), so a
 * stream subscribed to a directory hears of what changes inside it (spec: a sub-resource).
 */
export function subscriptionKeys(uri: string): string[] {
  const keys = [uri];
  const authority = uri.indexOf('//');
  const start =
    authority === -1 ? uri.indexOf(':') + 1 : uri.indexOf('/', authority + 2);
  if (start <= 0) return keys;
  for (let slash = uri.lastIndexOf('/', uri.length - 2); slash >= start;) {
    keys.push(uri.slice(0, slash + 1));
    if (slash === 0) break;
    slash = uri.lastIndexOf('/', slash - 1);
  }
  return keys;
}
