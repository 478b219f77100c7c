// The COPY BOTH stream of a replication connection (START_REPLICATION): pg routes its CopyData
// messages through its private Connection object and has no public API for them.
import type pg from 'pg';

/** What a replication connection's reader needs: the server's CopyData, and a way to answer. */
export interface CopyBoth {
  /** Every CopyData message the server sends, in order. */
  onData(listener: (chunk: Buffer) => void): void;
  /** Send one CopyData message to the server (a standby status update). */
  send(chunk: Buffer): void;
  /**
   * Stop reading the socket (the server's sends then wait on TCP), or read it again. Sending
   * still works while paused.
   */
  pause(paused: boolean): void;
}

/**
 * The COPY BOTH stream of `client` (connected with `replication: 'database'`); throws when pg's
 * private Connection does not have the shape relied on (`connection.on('copyData')`,
 * `connection.sendCopyFromChunk`, `connection.stream`: the socket pg parses).
 */
export function copyBothOf(client: pg.Client): CopyBoth {
  const connection = (client as unknown as { connection?: unknown })
    .connection as
    | {
        on?: unknown;
        sendCopyFromChunk?: unknown;
        stream?: { pause?: unknown; resume?: unknown };
      }
    | undefined;
  if (
    typeof connection?.on !== 'function' ||
    typeof connection.sendCopyFromChunk !== 'function' ||
    typeof connection.stream?.pause !== 'function' ||
    typeof connection.stream.resume !== 'function'
  )
    throw new Error(
      'this pg has no CopyData events on its connection: the WAL change source cannot read a slot with it',
    );
  const stream = connection as {
    on(event: 'copyData', listener: (message: { chunk: Buffer }) => void): void;
    sendCopyFromChunk(chunk: Buffer): void;
    stream: { pause(): void; resume(): void };
  };
  return {
    onData: (listener) =>
      stream.on('copyData', (message) => listener(message.chunk)),
    send: (chunk) => stream.sendCopyFromChunk(chunk),
    pause: (paused) =>
      paused ? stream.stream.pause() : stream.stream.resume(),
  };
}
