// Keyset cursors: opaque, versioned, HMAC-signed; anything not issued by a known secret is -32602.
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../src/errors.js';
import { createCursorCodec } from '../../src/protocol/index.js';

const codec = createCursorCodec(['first-secret-0123456789']);

function expectInvalid(cursor: string): void {
  try {
    codec.decode(cursor);
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).code).toBe(-32602);
    expect((error as ProtocolError).key).toBe('INVALID_CURSOR');
    return;
  }
  throw new Error(`cursor accepted: ${cursor}`);
}

describe('cursor codec', () => {
  it('round-trips a position', () => {
    const cursor = codec.encode({ c: 'resources', k: ['1234'] });
    expect(cursor.startsWith('v1.')).toBe(true);
    expect(codec.decode(cursor)).toEqual({ c: 'resources', k: ['1234'] });
  });

  it('rejects empty, garbage and truncated cursors', () => {
    const good = codec.encode({ c: 'resources', k: ['1'] });
    for (const cursor of [
      '',
      'garbage',
      'v1.',
      'v1..',
      good.slice(0, -2),
      `${good}x`,
      'v2' + good.slice(2),
      '.'.repeat(3000),
    ]) {
      expectInvalid(cursor);
    }
  });

  it('rejects an edited payload even when it is valid JSON', () => {
    const good = codec.encode({ c: 'resources', k: ['100'] });
    const [version, , mac] = good.split('.');
    const edited = Buffer.from(
      JSON.stringify({ c: 'resources', k: ['1'] }),
    ).toString('base64url');
    expectInvalid(`${version}.${edited}.${mac}`);
  });

  it('rejects a forged signature and a cursor from another server secret', () => {
    const payload = Buffer.from(
      JSON.stringify({ c: 'resources', k: ['1'] }),
    ).toString('base64url');
    expectInvalid(`v1.${payload}.${Buffer.alloc(32).toString('base64url')}`);
    const other = createCursorCodec(['another-secret-9876543210']);
    expectInvalid(other.encode({ c: 'resources', k: ['1'] }));
  });

  it('accepts cursors signed by any configured secret, so secrets rotate and replicas agree', () => {
    const old = createCursorCodec(['old-secret-0123456789abc']);
    const rotated = createCursorCodec([
      'new-secret-0123456789abc',
      'old-secret-0123456789abc',
    ]);
    expect(rotated.decode(old.encode({ c: 'resources', k: ['5'] }))).toEqual({
      c: 'resources',
      k: ['5'],
    });
    const replica = createCursorCodec(['new-secret-0123456789abc']);
    expect(
      replica.decode(rotated.encode({ c: 'resources', k: ['6'] })),
    ).toEqual({ c: 'resources', k: ['6'] });
  });

  it('refuses short secrets at start-up', () => {
    expect(() => createCursorCodec(['short'])).toThrow(/at least 16/);
    expect(() => createCursorCodec([])).toThrow();
  });
});

describe('serializeMessage', () => {
  it('writes RawJson result members verbatim and everything else as JSON', async () => {
    const { RawJson, serializeMessage } =
      await import('../../src/protocol/index.js');
    const text = serializeMessage({
      jsonrpc: '2.0',
      id: 'a"b',
      result: {
        items: new RawJson('[{"x":1}]'),
        n: 2,
        skip: undefined,
        s: 'é\u0000',
      },
    });
    expect(JSON.parse(text)).toEqual({
      jsonrpc: '2.0',
      id: 'a"b',
      result: { items: [{ x: 1 }], n: 2, s: 'é\u0000' },
    });
    expect(
      serializeMessage({ jsonrpc: '2.0', error: { code: 1, message: 'm' } }),
    ).toBe('{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}');
    expect(() => JSON.stringify({ nested: new RawJson('1') })).toThrow(
      /only supported/,
    );
  });
});
