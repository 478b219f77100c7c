// Long-lived answers (subscriptions/listen, spec §7): a handler returns a StreamingResult, and the
// transport carries its messages (HTTP: one SSE response; stdio: lines) until either side ends it.
// The message builders live here so only protocol/ knows the wire shapes of the stream.
import { z } from 'zod';
import {
  clientString,
  META_SERVER_INFO,
  RequestIdSchema,
  type Implementation,
  type RequestId,
} from './wire.js';

export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

/** What a transport offers a stream: a byte pipe with backpressure. */
export interface StreamSink {
  /** Write one serialized message; false when the transport's buffer is past its high-water mark. */
  write(message: string): boolean;
  /** Bytes written that the client has not taken yet. */
  readonly pendingBytes: number;
  /** Call `listener` once, when the buffer has drained after write returned false. */
  onDrain(listener: () => void): void;
  /** Close the stream: after `finalMessage` (the response to the listen request), or abruptly. */
  end(finalMessage?: string): void;
}

/** The handler's side of a stream. */
export interface ResponseStream {
  /** The transport is ready: the stream writes its first message and starts delivering. Once. */
  attach(sink: StreamSink): void;
  /** The client went away (or never got the stream). Idempotent; the stream writes nothing more. */
  cancel(): void;
}

/** Returned by a handler whose answer is a stream rather than one result. */
export class StreamingResult {
  constructor(readonly stream: ResponseStream) {}
}

/** SubscriptionFilter (spec §7.1). Every field optional; unknown fields ignored. */
export const SubscriptionFilterSchema = z.object({
  toolsListChanged: z.boolean().optional(),
  promptsListChanged: z.boolean().optional(),
  resourcesListChanged: z.boolean().optional(),
  resourceSubscriptions: z.array(clientString()).optional(),
});
export type SubscriptionFilter = z.infer<typeof SubscriptionFilterSchema>;

export const ListenParamsSchema = z.object({
  notifications: SubscriptionFilterSchema,
});
export type ListenParams = z.infer<typeof ListenParamsSchema>;

/**
 * The messages the fan-out writes to one subscriber: a listen stream's (SubscriptionMessages) or
 * another era's subscriber's (one may have no final message to send).
 */
export interface FanoutMessages {
  updated(uriJson: string): string;
  listChanged(): string;
  promptsListChanged(): string;
  result(serverInfo: Implementation): string | undefined;
  error(
    code: number,
    message: string,
    data: Record<string, unknown>,
  ): string | undefined;
}

/** Pre-serialized messages of one subscription: its id is spliced in verbatim (string or number). */
export class SubscriptionMessages implements FanoutMessages {
  readonly #meta: string;
  readonly #id: RequestId;
  readonly #idJson: string;
  readonly #listChanged: string;
  readonly #promptsListChanged: string;

  constructor(id: RequestId) {
    RequestIdSchema.parse(id);
    this.#id = id;
    this.#idJson = JSON.stringify(id);
    this.#meta = `{"${META_SUBSCRIPTION_ID}":${this.#idJson}}`;
    this.#listChanged = `{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"_meta":${this.#meta}}}`;
    this.#promptsListChanged = `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":${this.#meta}}}`;
  }

  /** notifications/subscriptions/acknowledged with the honored filter (always first, §7.2). */
  acknowledged(honored: SubscriptionFilter): string {
    return `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":${this.#meta},"notifications":${JSON.stringify(honored)}}}`;
  }

  /** notifications/resources/updated; `uriJson` is the URI already JSON-encoded (shared per change). */
  updated(uriJson: string): string {
    return `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":${this.#meta},"uri":${uriJson}}}`;
  }

  listChanged(): string {
    return this.#listChanged;
  }

  promptsListChanged(): string {
    return this.#promptsListChanged;
  }

  /** The graceful end: SubscriptionsListenResult (§7.4). */
  result(serverInfo: Implementation): string {
    return `{"jsonrpc":"2.0","id":${this.#idJson},"result":{"resultType":"complete","_meta":{"${META_SUBSCRIPTION_ID}":${this.#idJson},"${META_SERVER_INFO}":${JSON.stringify(serverInfo)}}}}`;
  }

  /** An error response ending the stream (a stalled client, a role that vanished). */
  error(code: number, message: string, data: Record<string, unknown>): string {
    return JSON.stringify({
      jsonrpc: '2.0',
      id: this.#id,
      error: { code, message, data },
    });
  }
}
