// stdio (MCP 2026-07-28 §14.1): newline-delimited JSON on stdin/stdout; logs go to stderr only.
// Wires stdin to the framer (stdio-framer.ts) and the framed lines to the session
// (stdio-session.ts); knows no MCP method but notifications/cancelled.
import type { Readable, Writable } from 'node:stream';
import type { Principal } from '../auth/index.js';
import { ProtocolError } from '../errors.js';
import type { Dispatcher } from '../protocol/index.js';
import { StdioFramer } from './stdio-framer.js';
import { StdioSession } from './stdio-session.js';

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
  const { input, maxMessageBytes } = options;
  const session = new StdioSession(options);
  const framer = new StdioFramer(
    maxMessageBytes,
    (line) => session.accept(line),
    () =>
      session.refuse(
        new ProtocolError(
          'PAYLOAD_TOO_LARGE',
          `Message too large: the limit is ${maxMessageBytes} bytes.`,
        ),
      ),
  );
  // A stream with an encoding set hands over strings (already decoded by its own streaming decoder).
  const onData = (chunk: Buffer | string): void =>
    framer.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);

  let resolveClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  const settle = (): void => void session.settled().then(resolveClosed);
  const finish = (): void => {
    input.off('data', onData);
    session.cancelStreams();
    framer.end();
    settle();
  };
  input.on('data', onData);
  input.once('end', finish);
  input.once('error', finish);

  return {
    closed,
    close: () => {
      session.cancelStreams();
      input.off('data', onData);
      input.off('end', finish);
      input.off('error', finish);
      settle();
    },
  };
}
