// stdio (MCP 2026-07-28 §14.1): newline-delimited JSON on stdin/stdout; logs go to stderr only.
// Frames lines, tracks in-flight requests for notifications/cancelled; knows no other MCP method.
import type { Readable, Writable } from 'node:stream';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import {
  CancelledParamsSchema,
  readableId,
  serializeMessage,
  type Dispatcher,
  type RequestId,
  type ResponseStream,
} from '../protocol/index.js';

export interface StdioTransportOptions {
  readonly input: Readable;
  readonly output: Writable;
  readonly dispatcher: Dispatcher;
  readonly principal: Principal;
  readonly maxMessageBytes: number;
}

export interface StdioTransport {
  /** Resolves when stdin ends and every in-flight request has answered. */
  readonly closed: Promise<void>;
  /** Stop reading; in-flight requests still answer. */
  close(): void;
}

/** Serve one message per line until the input ends. */
export function startStdioTransport(
  options: StdioTransportOptions,
): StdioTransport {
  const inFlight = new Map<string, AbortController>();
  /** Open listen streams by request id: notifications/cancelled ends them. */
  const streams = new Map<string, ResponseStream>();
  const pending = new Set<Promise<void>>();
  let buffer = '';
  let discarding = false;

  const write = (message: object): void => {
    options.output.write(`${serializeMessage(message)}\n`);
  };

  const keyOf = (id: RequestId): string => `${typeof id}:${String(id)}`;

  const handleLine = async (line: string): Promise<void> => {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      writeOutcome(
        new ProtocolError(
          'PARSE_ERROR',
          'Parse error: the line is not valid JSON.',
        ),
      );
      return;
    }
    let message;
    try {
      message = options.dispatcher.parse(value);
    } catch (error) {
      writeOutcome(error, readableId(value));
      return;
    }
    if (
      message.id === undefined &&
      message.method === 'notifications/cancelled'
    ) {
      // stdio's cancel signal (spec §13); unknown, finished or malformed ids are ignored.
      const parsed = CancelledParamsSchema.safeParse(message.params ?? {});
      if (parsed.success) {
        const key = keyOf(parsed.data.requestId);
        inFlight.get(key)?.abort();
        const stream = streams.get(key);
        streams.delete(key);
        stream?.cancel();
      }
      return;
    }
    const controller = new AbortController();
    const key = message.id === undefined ? undefined : keyOf(message.id);
    if (key !== undefined) inFlight.set(key, controller);
    try {
      const outcome = await options.dispatcher.dispatch(message, {
        principal: options.principal,
        signal: controller.signal,
      });
      if (outcome.kind === 'stream') {
        if (controller.signal.aborted || key === undefined) {
          outcome.stream.cancel();
        } else if (streams.has(key)) {
          // Ids tell streams apart on stdio: a second open stream with the same id is refused.
          outcome.stream.cancel();
          writeOutcome(
            new ProtocolError(
              'INVALID_REQUEST',
              'Invalid request: a subscriptions/listen with this id is already open.',
            ),
            outcome.id,
          );
        } else openStream(key, outcome.stream);
      } else if (outcome.kind === 'response' && !controller.signal.aborted)
        write(outcome.response);
    } finally {
      if (key !== undefined && inFlight.get(key) === controller)
        inFlight.delete(key);
    }
  };

  // A listen stream's messages are lines like any other; its subscription id tells them apart.
  const openStream = (key: string, stream: ResponseStream): void => {
    streams.set(key, stream);
    let ended = false;
    stream.attach({
      write: (message) => options.output.write(`${message}\n`),
      get pendingBytes() {
        return options.output.writableLength;
      },
      onDrain: (listener) => options.output.once('drain', listener),
      end: (finalMessage) => {
        if (ended) return;
        ended = true;
        if (streams.get(key) === stream) streams.delete(key);
        if (finalMessage !== undefined)
          options.output.write(`${finalMessage}\n`);
      },
    });
  };

  /** The client is gone (stdin ended): drop every stream without writing. */
  const cancelStreams = (): void => {
    for (const stream of streams.values()) stream.cancel();
    streams.clear();
  };

  const writeOutcome = (error: unknown, id?: RequestId): void => {
    const outcome = options.dispatcher.fail(error, id);
    if (outcome.kind === 'response') write(outcome.response);
  };

  const track = (line: string): void => {
    const task = handleLine(line).catch((error: unknown) =>
      writeOutcome(error),
    );
    pending.add(task);
    void task.finally(() => pending.delete(task));
  };

  const onData = (chunk: Buffer | string): void => {
    buffer += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    let newline = buffer.indexOf('\n');
    while (newline !== -1) {
      const line = buffer.slice(0, newline).replace(/\r$/, '');
      buffer = buffer.slice(newline + 1);
      if (discarding) discarding = false;
      else if (line.trim() !== '') track(line);
      newline = buffer.indexOf('\n');
    }
    if (Buffer.byteLength(buffer) > options.maxMessageBytes) {
      // An over-long line: answer once, then drop the rest of it up to the next newline.
      buffer = '';
      if (!discarding)
        writeOutcome(
          new ProtocolError(
            'PAYLOAD_TOO_LARGE',
            `Message too large: the limit is ${options.maxMessageBytes} bytes.`,
          ),
        );
      discarding = true;
    }
  };

  let resolveClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  const finish = (): void => {
    options.input.off('data', onData);
    cancelStreams();
    if (!discarding && buffer.trim() !== '') track(buffer);
    buffer = '';
    void Promise.allSettled([...pending]).then(() => resolveClosed());
  };
  options.input.on('data', onData);
  options.input.once('end', finish);
  options.input.once('error', finish);

  return {
    closed,
    close: () => {
      cancelStreams();
      options.input.off('data', onData);
      options.input.off('end', finish);
      options.input.off('error', finish);
      void Promise.allSettled([...pending]).then(() => resolveClosed());
    },
  };
}
