// One stdio client's requests: parse each line, dispatch it, write its answer as a line; track
// in-flight requests and open listen streams by id for notifications/cancelled (spec §13).
import type { Writable } from 'node:stream';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import {
  CancelledParamsSchema,
  isJsonRpcResponse,
  readableId,
  serializeMessage,
  type DispatchOutcome,
  type Dispatcher,
  type InboundMessage,
  type RequestId,
  type ResponseStream,
} from '../protocol/index.js';

export interface StdioSessionOptions {
  readonly output: Writable;
  readonly dispatcher: Dispatcher;
  readonly principal: Principal;
}

const keyOf = (id: RequestId): string => `${typeof id}:${String(id)}`;

export class StdioSession {
  readonly #inFlight = new Map<string, AbortController>();
  /** Open listen streams by request id: notifications/cancelled ends them. */
  readonly #streams = new Map<string, ResponseStream>();
  readonly #pending = new Set<Promise<void>>();

  constructor(readonly options: StdioSessionOptions) {}

  /** Handle one line; its task is tracked until it has answered. */
  accept(line: string): void {
    const task = this.#handleLine(line).catch((error: unknown) =>
      this.refuse(error),
    );
    this.#pending.add(task);
    void task.finally(() => this.#pending.delete(task));
  }

  /** Answer an error as the dispatcher maps it (nothing for a notification). */
  refuse(error: unknown, id?: RequestId): void {
    const outcome = this.options.dispatcher.fail(error, id);
    if (outcome.kind === 'response') this.#write(outcome.response);
  }

  /**
   * The client is gone (stdin ended): drop every stream without writing, and stop waiting for
   * answers to requests sent to it (they can no longer come).
   */
  cancelStreams(): void {
    this.options.dispatcher.inputEnded?.();
    for (const stream of this.#streams.values()) stream.cancel();
    this.#streams.clear();
  }

  /** Resolves when every request accepted so far has answered. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
  }

  async #handleLine(line: string): Promise<void> {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.refuse(
        new ProtocolError(
          'PARSE_ERROR',
          'Parse error: the line is not valid JSON.',
        ),
      );
      return;
    }
    // A JSON-RPC response (a 2025-11-25 client answering a server request, its digest §10.1 step 1)
    // settles the request it answers; a response is never answered.
    if (isJsonRpcResponse(value)) {
      this.options.dispatcher.answer?.(value);
      return;
    }
    let message;
    try {
      message = this.options.dispatcher.parse(value);
    } catch (error) {
      this.refuse(error, readableId(value));
      return;
    }
    if (
      message.id === undefined &&
      message.method === 'notifications/cancelled'
    )
      this.#cancel(message.params);
    else await this.#dispatch(message);
  }

  /** stdio's cancel signal (spec §13); unknown, finished or malformed ids are ignored. */
  #cancel(params: InboundMessage['params']): void {
    const parsed = CancelledParamsSchema.safeParse(params ?? {});
    if (!parsed.success) return;
    const key = keyOf(parsed.data.requestId);
    this.#inFlight.get(key)?.abort();
    const stream = this.#streams.get(key);
    this.#streams.delete(key);
    stream?.cancel();
  }

  async #dispatch(message: InboundMessage): Promise<void> {
    const controller = new AbortController();
    const key = message.id === undefined ? undefined : keyOf(message.id);
    if (key !== undefined) this.#inFlight.set(key, controller);
    try {
      const outcome = await this.options.dispatcher.dispatch(message, {
        principal: this.options.principal,
        signal: controller.signal,
        // A request's notices are lines like its response, written before it (spec §14.1).
        notify: (notice) => {
          if (!controller.signal.aborted)
            this.options.output.write(`${notice}\n`);
        },
      });
      if (outcome.kind === 'stream')
        this.#answerStream(outcome, key, controller.signal);
      else if (outcome.kind === 'response' && !controller.signal.aborted)
        this.#write(outcome.response);
    } finally {
      if (key !== undefined && this.#inFlight.get(key) === controller)
        this.#inFlight.delete(key);
    }
  }

  #answerStream(
    outcome: Extract<DispatchOutcome, { kind: 'stream' }>,
    key: string | undefined,
    signal: AbortSignal,
  ): void {
    if (signal.aborted || key === undefined) {
      outcome.stream.cancel();
    } else if (this.#streams.has(key)) {
      // Ids tell streams apart on stdio: a second open stream with the same id is refused.
      outcome.stream.cancel();
      this.refuse(
        new ProtocolError(
          'INVALID_REQUEST',
          'Invalid request: a subscriptions/listen with this id is already open.',
        ),
        outcome.id,
      );
    } else this.#openStream(key, outcome.stream);
  }

  // A listen stream's messages are lines like any other; its subscription id tells them apart.
  #openStream(key: string, stream: ResponseStream): void {
    const output = this.options.output;
    this.#streams.set(key, stream);
    let ended = false;
    stream.attach({
      write: (message) => output.write(`${message}\n`),
      get pendingBytes() {
        return output.writableLength;
      },
      onDrain: (listener) => output.once('drain', listener),
      end: (finalMessage) => {
        if (ended) return;
        ended = true;
        if (this.#streams.get(key) === stream) this.#streams.delete(key);
        if (finalMessage !== undefined) output.write(`${finalMessage}\n`);
      },
    });
  }

  #write(message: object): void {
    this.options.output.write(`${serializeMessage(message)}\n`);
  }
}
