// Reading a request body whole, within a byte limit, without ever throwing.
import type http from 'node:http';

/**
 * The body's bytes; 'too-large' as soon as it passes `limit` bytes (the rest is left for the
 * 413's drain); 'aborted' when the client goes away mid-body.
 */
export function readBody(
  request: http.IncomingMessage,
  limit: number,
): Promise<Buffer | 'too-large' | 'aborted'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    request.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        done = true;
        chunks.length = 0;
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => {
      if (!done) {
        done = true;
        resolve(Buffer.concat(chunks));
      }
    });
    // 'error' must have a listener (an unhandled one would crash the process); 'close' before
    // 'end' means the client went away mid-body.
    const abandon = (): void => {
      if (!done) {
        done = true;
        resolve('aborted');
      }
    };
    request.on('error', abandon);
    request.on('close', abandon);
  });
}
