// A StreamSink over a newline-delimited output (stdout): where a stdio legacy session's
// notifications go, between the lines of responses (each write is one whole line).
import type { Writable } from 'node:stream';
import type { StreamSink } from '../protocol/index.js';

/** One message per line on `output`; ending it writes nothing (stdout outlives a session). */
export function createLineChannel(output: Writable): StreamSink {
  return {
    write: (message) => output.write(`${message}\n`),
    get pendingBytes() {
      return output.writableLength;
    },
    onDrain: (listener) => output.once('drain', listener),
    end: () => undefined,
  };
}
