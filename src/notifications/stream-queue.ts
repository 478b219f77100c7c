// One listen stream's queue: what it is waiting to be told (repeats coalesce), written until the
// client pushes back, and the backpressure limits that end a client which stopped reading.
import { METRICS } from '../observability/index.js';
import type { Principal } from '../auth/index.js';
import { JSONRPC } from '../errors.js';
import type { FanoutMessages, StreamSink } from '../protocol/index.js';

/** When a stream whose client is not reading is ended as stalled. */
export interface QueueLimits {
  /** A stream whose client has not taken this many bytes is ended as stalled. */
  readonly maxPendingBytes: number;
  /** A stream that stays blocked (not draining) this long is ended as stalled. */
  readonly stallTimeoutMs: number;
  /**
   * Fewest ms between two list_changed notifications (of resources, of prompts) on one stream; one
   * that falls due sooner is written when the interval has passed, repeats coalescing into it
   * (0 or absent: no pacing). A busy database would otherwise send every stream one per commit,
   * and every host that re-lists on it one resources/list per commit.
   */
  readonly listChangedIntervalMs?: number;
  readonly log: (line: string) => void;
}

/**
 * Most distinct URIs one blocked stream may have waiting. Repeats of a URI coalesce, so only a
 * directory subscription with very many changing resources under it can reach this; the stream
 * is then ended as stalled rather than growing without bound.
 */
const MAX_PENDING_URIS = 10_000;

/** A queue's unwritten notifications and pacing, handed to the queue that replaces it. */
export interface QueueCarryOver {
  readonly uris: readonly string[];
  readonly list: boolean;
  readonly promptsList: boolean;
  readonly listWrittenAt: number;
  readonly promptsListWrittenAt: number;
}

/** The key streams are grouped by for authorization: one per role (and one for the login). */
export function roleKey(principal: Principal): string {
  // The login (no role) cannot collide with a role name: those never contain a NUL.
  return principal.role ?? '\u0000login';
}

/** What a subscriber's queue is opened with. */
export interface StreamQueueOptions {
  readonly principal: Principal;
  readonly messages: FanoutMessages;
  readonly uris: readonly string[];
  readonly listChanged: boolean;
  readonly sink: StreamSink;
  readonly promptsListChanged?: boolean;
}

/** One open subscriptions/listen stream: who it is for, what it watches, what it has pending. */
export class StreamQueue {
  readonly roleKey: string;
  /** URIs queued for notifications/resources/updated; a Set, so repeats coalesce while pending. */
  readonly #pendingUris = new Set<string>();
  #pendingList = false;
  #pendingPromptsList = false;
  /** When the last list_changed of each kind was written (performance.now), for the pacing. */
  #listWrittenAt = -Infinity;
  #promptsListWrittenAt = -Infinity;
  /** Writes a paced list_changed when it falls due (at #pacingDueAt). */
  #pacing: NodeJS.Timeout | undefined;
  #pacingDueAt = Infinity;
  #blockedSince: number | undefined;
  #ended = false;
  readonly #onEnd: (() => void)[] = [];

  readonly principal: Principal;
  // Listen streams and other eras' subscribers (issue 14) differ only in these messages.
  readonly messages: FanoutMessages;
  readonly uris: readonly string[];
  readonly listChanged: boolean;
  readonly sink: StreamSink;
  /** Whether it hears notifications/prompts/list_changed (asked for, or always, as an era offers). */
  readonly promptsListChanged: boolean;

  constructor(options: StreamQueueOptions) {
    this.principal = options.principal;
    this.messages = options.messages;
    this.uris = options.uris;
    this.listChanged = options.listChanged;
    this.sink = options.sink;
    this.promptsListChanged = options.promptsListChanged ?? false;
    this.roleKey = roleKey(options.principal);
  }

  get ended(): boolean {
    return this.#ended;
  }

  enqueue(uriJson: string | undefined, list: boolean): void {
    if (this.#ended) return;
    if (uriJson !== undefined) this.#pendingUris.add(uriJson);
    if (list) this.#pendingList = true;
  }

  /** Queue one notifications/prompts/list_changed (repeats coalesce while pending). */
  enqueuePromptsList(): void {
    if (!this.#ended) this.#pendingPromptsList = true;
  }

  /** Write what is pending; a client that leaves too much unread is ended as stalled at once. */
  deliver(limits: QueueLimits): void {
    this.flush(limits);
    if (
      this.#blockedSince !== undefined &&
      (this.sink.pendingBytes > limits.maxPendingBytes ||
        this.#pendingUris.size > MAX_PENDING_URIS)
    )
      this.#endStalled(Date.now(), limits);
  }

  /**
   * Write what is pending until the sink pushes back; the rest waits (and coalesces) for drain. A
   * list_changed not yet due under the pacing waits for its timer.
   */
  flush(limits: QueueLimits): void {
    if (this.#ended || this.#blockedSince !== undefined) return;
    const now = performance.now();
    const interval = limits.listChangedIntervalMs ?? 0;
    let open = true;
    let dueAt = Infinity;
    if (this.#pendingList) {
      if (now - this.#listWrittenAt >= interval) {
        this.#pendingList = false;
        this.#listWrittenAt = now;
        open = this.sink.write(this.messages.listChanged());
      } else dueAt = this.#listWrittenAt + interval;
    }
    if (open && this.#pendingPromptsList) {
      if (now - this.#promptsListWrittenAt >= interval) {
        this.#pendingPromptsList = false;
        this.#promptsListWrittenAt = now;
        open = this.sink.write(this.messages.promptsListChanged());
      } else dueAt = Math.min(dueAt, this.#promptsListWrittenAt + interval);
    }
    for (const uriJson of this.#pendingUris) {
      if (!open) break;
      this.#pendingUris.delete(uriJson);
      open = this.sink.write(this.messages.updated(uriJson));
    }
    if (dueAt < this.#pacingDueAt) {
      clearTimeout(this.#pacing);
      this.#pacingDueAt = dueAt;
      this.#pacing = setTimeout(() => {
        this.#pacing = undefined;
        this.#pacingDueAt = Infinity;
        this.flush(limits);
      }, dueAt - now);
      this.#pacing.unref();
    }
    if (!open) {
      this.#blockedSince = Date.now();
      this.sink.onDrain(() => {
        this.#blockedSince = undefined;
        this.flush(limits);
      });
    }
  }

  /**
   * What this queue has not written yet, and when it last wrote each list_changed: for the queue
   * that replaces it when the same client's subscriptions change (carryOver), so re-subscribing
   * neither loses a paced notification nor restarts the pacing. Read it before this queue ends.
   */
  unwritten(): QueueCarryOver {
    return {
      uris: [...this.#pendingUris],
      list: this.#pendingList,
      promptsList: this.#pendingPromptsList,
      listWrittenAt: this.#listWrittenAt,
      promptsListWrittenAt: this.#promptsListWrittenAt,
    };
  }

  /** Take over a replaced queue's unwritten(); deliver() then writes it or arms the pacing. */
  carryOver(state: QueueCarryOver): void {
    if (this.#ended) return;
    for (const uri of state.uris) this.#pendingUris.add(uri);
    this.#pendingList ||= state.list;
    this.#pendingPromptsList ||= state.promptsList;
    this.#listWrittenAt = state.listWrittenAt;
    this.#promptsListWrittenAt = state.promptsListWrittenAt;
  }

  /** The stall timer's check: end the stream if its client has been blocked too long or too much. */
  endIfStalled(now: number, limits: QueueLimits): void {
    const since = this.#blockedSince;
    if (since === undefined) return;
    if (
      now - since >= limits.stallTimeoutMs ||
      this.sink.pendingBytes > limits.maxPendingBytes
    )
      this.#endStalled(now, limits);
  }

  #endStalled(now: number, limits: QueueLimits): void {
    METRICS.slowConsumersCut.inc();
    limits.log(
      `ending a listen stream whose client stopped reading (${this.sink.pendingBytes} bytes unread for ${now - (this.#blockedSince ?? now)} ms)`,
    );
    this.endWithError(
      'Subscription ended: the client did not read its notifications in time.',
      'STREAM_STALLED',
    );
  }

  /** End with a JSON-RPC error naming `code` (an error key) as the final message. */
  endWithError(message: string, code: string): void {
    this.end(this.messages.error(JSONRPC.INTERNAL_ERROR, message, { code }));
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
    clearTimeout(this.#pacing);
    for (const listener of this.#onEnd.splice(0)) listener();
  }

  /** Run `listener` once when the stream ends, either way. */
  onEnd(listener: () => void): void {
    if (this.#ended) listener();
    else this.#onEnd.push(listener);
  }
}

/**
 * Check `streams` for stalled clients about every second (or every stallTimeoutMs when shorter),
 * ending each one whose client has been blocked past the limits. Returns the function that stops it.
 */
export function startStallTimer(
  streams: Iterable<StreamQueue>,
  limits: QueueLimits,
): () => void {
  const timer = setInterval(
    () => {
      const now = Date.now();
      for (const stream of streams) stream.endIfStalled(now, limits);
    },
    Math.min(1000, limits.stallTimeoutMs),
  );
  timer.unref();
  return () => clearInterval(timer);
}
