// stdio framing in process: stdin's bytes arrive in whatever pieces the pipe delivers, and a
// message must come out the same however its bytes were cut.
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LOGIN_PRINCIPAL } from '../../src/auth/index.js';
import { createDispatcher, createMethod } from '../../src/protocol/index.js';
import { startStdioTransport } from '../../src/transport/index.js';
import { META } from '../setup/harness.js';

const dispatcher = createDispatcher({
  serverInfo: { name: 'test', version: '0' },
  methods: new Map([
    [
      'test/echo',
      createMethod({
        params: z.object({ text: z.string() }),
        handle: (params) => Promise.resolve({ text: params.text }),
      }),
    ],
  ]),
  logError: () => undefined,
});

/** Every line written to `output` so far, parsed; `next(n)` waits until there are `n`. */
function collect(output: PassThrough): {
  lines: Record<string, unknown>[];
  next(count: number): Promise<void>;
} {
  const lines: Record<string, unknown>[] = [];
  let text = '';
  output.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
    let newline = text.indexOf('\n');
    while (newline !== -1) {
      lines.push(JSON.parse(text.slice(0, newline)) as Record<string, unknown>);
      text = text.slice(newline + 1);
      newline = text.indexOf('\n');
    }
  });
  return {
    lines,
    next: async (count) => {
      while (lines.length < count) await once(output, 'data');
    },
  };
}

const echo = (id: number, text: string): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'test/echo',
    params: { _meta: META, text },
  });

/** The first line written to `output`, parsed. */
async function firstLine(output: PassThrough): Promise<unknown> {
  let text = '';
  while (!text.includes('\n')) {
    const [chunk] = (await once(output, 'data')) as [Buffer];
    text += chunk.toString('utf8');
  }
  return JSON.parse(text.slice(0, text.indexOf('\n')));
}

describe('stdio framing', () => {
  it('keeps multi-byte UTF-8 characters whose bytes arrive in separate reads', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const transport = startStdioTransport({
      input,
      output,
      dispatcher,
      principal: LOGIN_PRINCIPAL,
      maxMessageBytes: 64 * 1024,
    });
    const text = 'café 🐘 naïve';
    const bytes = Buffer.from(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'test/echo', params: { _meta: META, text } })}\n`,
    );
    // Cut inside 'é' (2 bytes) and inside the elephant (4 bytes).
    const cuts = [
      bytes.indexOf(Buffer.from('é')) + 1,
      bytes.indexOf(Buffer.from('🐘')) + 2,
    ];
    const pieces = [
      bytes.subarray(0, cuts[0]),
      bytes.subarray(cuts[0], cuts[1]),
      bytes.subarray(cuts[1]),
    ];
    const answer = firstLine(output);
    for (const piece of pieces) {
      // Each piece is its own read: the transport has seen it before the next is written.
      const delivered = once(input, 'data');
      input.write(piece);
      expect(((await delivered) as [Buffer])[0]).toEqual(piece);
    }
    expect(await answer).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: { text },
    });
    input.end();
    await transport.closed;
  });

  it('answers an over-long line once (-32600 PAYLOAD_TOO_LARGE), drops the rest of it, and serves the next lines (CRLF and an unterminated last line too)', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const transport = startStdioTransport({
      input,
      output,
      dispatcher,
      principal: LOGIN_PRINCIPAL,
      maxMessageBytes: 1024,
    });
    const out = collect(output);
    const long = echo(1, 'x'.repeat(4096));
    // The long line arrives in pieces, each past the limit, then its end and the next lines.
    for (let at = 0; at < long.length; at += 1500) {
      const delivered = once(input, 'data');
      input.write(long.slice(at, at + 1500));
      await delivered;
    }
    input.write(`\n${echo(2, 'after')}\r\n\n${echo(3, 'last')}`);
    input.end();
    await transport.closed;
    await out.next(3);
    expect(out.lines).toHaveLength(3);
    expect(out.lines[0]).toMatchObject({
      error: { code: -32600, data: { code: 'PAYLOAD_TOO_LARGE' } },
    });
    expect(out.lines[0]).not.toHaveProperty('id');
    const byId = new Map(out.lines.slice(1).map((line) => [line['id'], line]));
    expect(byId.get(2)).toMatchObject({ result: { text: 'after' } });
    expect(byId.get(3)).toMatchObject({ result: { text: 'last' } });
  });
});
