// The fan-out: open listen streams, indexed by what they asked for, and the delivery of each batch
// of logged changes to the streams whose role may hear of them.
import type { Principal } from '../auth/index.js';
import { JSONRPC, ProtocolError } from '../errors.js';
import type {
  FanoutMessages,
  Implementation,
  StreamSink,
} from '../protocol/index.js';

/**
 * A committed change as the fan-out delivers it: `uri` is what subscribers of it (or of a
 * directory above it) hear of; null when only lists may have changed. Several entries may share a
 * seq (a schema change touches a schema's and a table's URIs); authorization is per seq.
 */
export interface PublishedChange {
  readonly seq: string;
  readonly uri: string | null;
  readonly kind: 'created' | 'updated' | 'deleted' | 'schema';
  /** Whether it can change resources/list (default true; false for rows of unlisted tables). */
  readonly listed?: boolean;
}

/** What one role may hear of, per change seq: readable before it, readable after it. */
export type Visibility = ReadonlyMap<
  string,
  { before: boolean; after: boolean }
>;

/**
 * Which of `seqs` `principal`'s role may hear of: one query in the role's own transaction, in the
 * database whose change log the seqs come from. Throws ProtocolError; UNAVAILABLE, TIMEOUT and
 * POOL_EXHAUSTED mean "try the batch again later".
 */
export type Authorize = (
  principal: Principal,
  seqs: readonly string[],
) => Promise<Visibility>;

export interface FanoutOptions {
  readonly serverInfo: Implementation;
  readonly maxStreams: number;
  readonly maxStreamsPerRole: number;
  /** A stream whose client has not taken this many bytes is ended as stalled. */
  readonly maxPendingBytes: number;
  /** A stream that stays blocked (not draining) this long is ended as stalled. */
  readonly stallTimeoutMs: number;
  /** Longest a broadcast writes before yielding to the event loop, in ms (default 2). */
  readonly sliceMs?: number;
  readonly log: (line: string) => void;
}

/** One open subscriptions/listen stream. */
export class Subscriber {
  readonly roleKey: string;
  /** URIs queued for notifications/resources/updated; a Set, so repeats coalesce while pending. */
  readonly #pendingUris = new Set<string>();
  #pendingList = false;
  #blockedSince: number | undefined;
  #ended = false;
  readonly #onEnd: (() => void)[] = [];

  constructor(
    readonly principal: Principal,
    // Listen streams and legacy sessions (issue 14) differ only in these messages.
    readonly messages: FanoutMessages,
    readonly uris: readonly string[],
    readonly listChanged: boolean,
    readonly sink: StreamSink,
  ) {
    this.roleKey = roleKey(principal);
  }

  get ended(): boolean {
    return this.#ended;
  }

  get blockedSince(): number | undefined {
    return this.#blockedSince;
  }

  /** Distinct URIs waiting for a client that is not reading (bounded by the fan-out). */
  get pendingUris(): number {
    return this.#pendingUris.size;
  }

  enqueue(uriJson: string | undefined, list: boolean): void {
    if (this.#ended) return;
    if (uriJson !== undefined) this.#pendingUris.add(uriJson);
    if (list) this.#pendingList = true;
  }

  /** Write what is pending until the sink pushes back; the rest waits (and coalesces) for drain. */
  flush(): void {
    if (this.#ended || this.#blockedSince !== undefined) return;
    let open = true;
    if (this.#pendingList) {
      this.#pendingList = false;
      open = this.sink.write(this.messages.listChanged());
    }
    for (const uriJson of this.#pendingUris) {
      if (!open) break;
      this.#pendingUris.delete(uriJson);
      open = this.sink.write(this.messages.updated(uriJson));
    }
    if (!open) {
      this.#blockedSince = Date.now();
      this.sink.onDrain(() => {
        this.#blockedSince = undefined;
        this.flush();
      });
    }
  }

  /** End with a final message; no more writes after this. */
  end(finalMessage: string | undefined): void {
    if (this.#ended) return;
    this.markGone();
    this.sink.end(finalMessage);
  }

  /** The client went away: forget it without writing. */
  markGone(): void {
    this.#ended = true;
    this.#pendingUris.clear();
    for (const listener of this.#onEnd.splice(0)) listener();
  }

  /** Run `listener` once when the stream ends, either way. */
  onEnd(listener: () => void): void {
    if (this.#ended) listener();
    else this.#onEnd.push(listener);
  }
}

/**
 * Most distinct URIs one blocked stream may have waiting. Repeats of a URI coalesce, so only a
 * directory subscription with very many changing resources under it can reach this; the stream
 * is then ended as stalled rather than growing without bound.
 */
const MAX_PENDING_URIS = 10_000;

function roleKey(principal: Principal): string {
  // The login (no role) cannot collide with a role name: those never contain a NUL.
  return principal.role ?? '\u0000login';
}

export class Fanout {
  readonly #options: FanoutOptions;
  readonly #streams = new Set<Subscriber>();
  readonly #byUri = new Map<string, Set<Subscriber>>();
  readonly #listStreams = new Set<Subscriber>();
  /** Streams per role, counting reservations not yet attached. */
  readonly #perRole = new Map<string, number>();
  #reserved = 0;
  #closing = false;
  readonly #stallTimer: NodeJS.Timeout;

  constructor(options: FanoutOptions) {
    this.#options = options;
    this.#stallTimer = setInterval(
      () => this.#endStalled(),
      Math.min(1000, options.stallTimeoutMs),
    );
    this.#stallTimer.unref();
  }

  get size(): number {
    return this.#streams.size;
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
   * Start delivering to `subscriber` (its reservation becomes the stream's place). A stream opened
   * with a token lives no longer than the token: at its `exp` the stream ends, and the client
   * listens again with a fresh one.
   */
  add(subscriber: Subscriber, releaseReservation: () => void): void {
    releaseReservation();
    const exp = subscriber.principal.claims['exp'];
    if (typeof exp === 'number') {
      const timer = setTimeout(
        () => {
          if (!this.#streams.has(subscriber)) return;
          this.#endWithError(
            subscriber,
            'Subscription ended: the token expired; listen again with a fresh one.',
            'AUTHENTICATION_REQUIRED',
          );
        },
        Math.max(0, Math.min(exp * 1000 - Date.now(), 2 ** 31 - 1)),
      );
      timer.unref();
      subscriber.onEnd(() => clearTimeout(timer));
    }
    this.#perRole.set(
      subscriber.roleKey,
      (this.#perRole.get(subscriber.roleKey) ?? 0) + 1,
    );
    this.#streams.add(subscriber);
    for (const uri of subscriber.uris) {
      let set = this.#byUri.get(uri);
      if (set === undefined) this.#byUri.set(uri, (set = new Set()));
      set.add(subscriber);
    }
    if (subscriber.listChanged) this.#listStreams.add(subscriber);
  }

  remove(subscriber: Subscriber): void {
    if (!this.#streams.delete(subscriber)) return;
    for (const uri of subscriber.uris) {
      const set = this.#byUri.get(uri);
      set?.delete(subscriber);
      if (set?.size === 0) this.#byUri.delete(uri);
    }
    this.#listStreams.delete(subscriber);
    this.#decrementRole(subscriber.roleKey);
  }

  /**
   * Deliver one batch of committed changes. Authorization runs first, once per distinct role
   * among the streams that could care, each in that role's transaction; if it cannot run (the
   * database is unavailable) this throws before anything is written, so the batch can be retried
   * whole. Then streams are written in slices, yielding between them.
   */
  async publish(
    changes: readonly PublishedChange[],
    /** The check for these changes' seqs (each database has its own log). */
    authorize: Authorize,
  ): Promise<void> {
    if (changes.length === 0 || this.#streams.size === 0) return;

    // Which streams could care, and the roles to ask about.
    const interested = new Map<Subscriber, PublishedChange[]>();
    for (const change of changes) {
      if (change.uri === null) continue;
      for (const uri of subscriptionKeys(change.uri)) {
        const subscribers = this.#byUri.get(uri);
        if (subscribers === undefined) continue;
        for (const subscriber of subscribers) {
          const list = interested.get(subscriber);
          if (list === undefined) interested.set(subscriber, [change]);
          else list.push(change);
        }
      }
    }
    const principals = new Map<string, Principal>();
    for (const subscriber of this.#listStreams)
      principals.set(subscriber.roleKey, subscriber.principal);
    for (const subscriber of interested.keys())
      principals.set(subscriber.roleKey, subscriber.principal);
    if (principals.size === 0) return;

    const seqs = [...new Set(changes.map((change) => change.seq))];
    const listedSeqs = new Set(
      changes
        .filter((change) => change.listed !== false)
        .map((change) => change.seq),
    );
    const visibility = new Map<string, Visibility>();
    const failedRoles = new Map<string, ProtocolError>();
    await Promise.all(
      [...principals].map(async ([key, principal]) => {
        try {
          visibility.set(key, await authorize(principal, seqs));
        } catch (error) {
          // Transient: the whole batch is read and published again later.
          if (
            !(error instanceof ProtocolError) ||
            error.key === 'UNAVAILABLE' ||
            error.key === 'TIMEOUT' ||
            error.key === 'POOL_EXHAUSTED'
          )
            throw error;
          failedRoles.set(key, error);
        }
      }),
    );

    // A role whose check is refused (dropped, no longer granted) loses its streams.
    for (const [key, error] of failedRoles) {
      this.#options.log(
        `ending listen streams of a role whose access check failed (${error.key})`,
      );
      for (const subscriber of [...this.#streams])
        if (subscriber.roleKey === key)
          this.#endWithError(
            subscriber,
            'Subscription ended: the role can no longer be checked for access.',
            'ROLE_FORBIDDEN',
          );
    }

    // Per role: did its visible list change in this batch?
    const listChangedFor = new Map<string, boolean>();
    for (const [key, seen] of visibility) {
      let changed = false;
      for (const [seq, entry] of seen)
        if ((entry.before || entry.after) && listedSeqs.has(seq)) {
          changed = true;
          break;
        }
      listChangedFor.set(key, changed);
    }

    const uriJson = new Map<string, string>();
    const targets = new Set<Subscriber>([
      ...interested.keys(),
      ...this.#listStreams,
    ]);
    // Slices by time, not by count: requests wait at most about sliceMs behind a broadcast.
    const sliceMs = this.#options.sliceMs ?? 2;
    let sliceStart = performance.now();
    let written = 0;
    for (const subscriber of targets) {
      if (subscriber.ended) continue;
      const seen = visibility.get(subscriber.roleKey);
      if (seen === undefined) continue;
      for (const change of interested.get(subscriber) ?? []) {
        if (change.uri === null) continue;
        const entry = seen.get(change.seq);
        // Creates and updates are heard by who can read the result; deletes by who could read it.
        if (
          entry === undefined ||
          !(change.kind === 'deleted' ? entry.before : entry.after)
        )
          continue;
        const uri = change.uri;
        let json = uriJson.get(uri);
        if (json === undefined) uriJson.set(uri, (json = JSON.stringify(uri)));
        subscriber.enqueue(json, false);
      }
      if (subscriber.listChanged && listChangedFor.get(subscriber.roleKey))
        subscriber.enqueue(undefined, true);
      subscriber.flush();
      if (
        subscriber.blockedSince !== undefined &&
        (subscriber.sink.pendingBytes > this.#options.maxPendingBytes ||
          subscriber.pendingUris > MAX_PENDING_URIS)
      )
        this.#endStalledStream(subscriber, Date.now());
      written += 1;
      // Let ordinary requests through between slices of a large broadcast.
      if (written % 16 === 0 && performance.now() - sliceStart >= sliceMs) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
  }

  /**
   * Tell every stream that what it watches may have changed: `updated` for each URI it subscribed
   * to and `list_changed` where asked for. For when the change log cannot say what changed (the
   * database's history changed). Only URIs the stream subscribed to (and could read then) are
   * named, so no role learns of a resource it could not already see.
   */
  markAllStale(): void {
    for (const subscriber of [...this.#streams]) {
      if (subscriber.ended) continue;
      for (const uri of subscriber.uris)
        subscriber.enqueue(JSON.stringify(uri), false);
      if (subscriber.listChanged) subscriber.enqueue(undefined, true);
      subscriber.flush();
      if (
        subscriber.blockedSince !== undefined &&
        (subscriber.sink.pendingBytes > this.#options.maxPendingBytes ||
          subscriber.pendingUris > MAX_PENDING_URIS)
      )
        this.#endStalledStream(subscriber, Date.now());
    }
  }

  /** Graceful shutdown: every stream gets its SubscriptionsListenResult, then closes. */
  closeAll(): void {
    this.#closing = true;
    clearInterval(this.#stallTimer);
    for (const subscriber of [...this.#streams]) {
      this.remove(subscriber);
      subscriber.end(subscriber.messages.result(this.#options.serverInfo));
    }
  }

  #endStalled(): void {
    const now = Date.now();
    for (const subscriber of this.#streams) {
      const since = subscriber.blockedSince;
      if (since === undefined) continue;
      if (
        now - since >= this.#options.stallTimeoutMs ||
        subscriber.sink.pendingBytes > this.#options.maxPendingBytes
      )
        this.#endStalledStream(subscriber, now);
    }
  }

  #endStalledStream(subscriber: Subscriber, now: number): void {
    this.#options.log(
      `ending a listen stream whose client stopped reading (${subscriber.sink.pendingBytes} bytes unread for ${now - (subscriber.blockedSince ?? now)} ms)`,
    );
    this.#endWithError(
      subscriber,
      'Subscription ended: the client did not read its notifications in time.',
      'STREAM_STALLED',
    );
  }

  #endWithError(subscriber: Subscriber, message: string, code: string): void {
    this.remove(subscriber);
    subscriber.end(
      subscriber.messages.error(JSONRPC.INTERNAL_ERROR, message, { code }),
    );
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
