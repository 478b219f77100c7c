// DataRow decoding (src/db/data-rows.ts patches pg-protocol's parser): every row decodes to the
// fields the PostgreSQL wire format defines and to what an unpatched pg-protocol parser gives.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { Parser } from 'pg-protocol/dist/parser.js';
import '../../src/db/data-rows.js';

type ParserType = typeof Parser;

/**
 * A second instance of pg-protocol's parser module, loaded after the patch: its Parser class is
 * the one pg-protocol ships, untouched. (Its own cache entry is put back, so pg keeps the patched one.)
 */
function loadUnpatchedParser(): ParserType {
  const require = createRequire(import.meta.url);
  const file = require.resolve('pg-protocol/dist/parser.js');
  const patched = require.cache[file];
  delete require.cache[file];
  try {
    return (require(file) as { Parser: ParserType }).Parser;
  } finally {
    if (patched !== undefined) require.cache[file] = patched;
  }
}

const UnpatchedParser = loadUnpatchedParser();

/** The (private) per-message method the patch replaces. */
function packetHandler(ParserClass: ParserType): unknown {
  return (ParserClass.prototype as unknown as { handlePacket: unknown })
    .handlePacket;
}

/** One DataRow message on the wire: 'D', length, field count, then each field (-1 for NULL). */
function dataRow(fields: readonly (string | null)[]): Buffer {
  const parts = fields.map((field) => {
    const size = Buffer.alloc(4);
    if (field === null) {
      size.writeInt32BE(-1);
      return size;
    }
    const bytes = Buffer.from(field, 'utf8');
    size.writeInt32BE(bytes.length);
    return Buffer.concat([size, bytes]);
  });
  const body = Buffer.concat([Buffer.alloc(2), ...parts]);
  body.writeInt16BE(fields.length);
  const head = Buffer.alloc(5);
  head[0] = 0x44;
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** The messages a parser of `ParserClass` emits for `chunks`, fed one after another. */
function parse(
  ParserClass: ParserType,
  ...chunks: Buffer[]
): Record<string, unknown>[] {
  const parser = new ParserClass();
  const messages: Record<string, unknown>[] = [];
  // A copy of each chunk: the parser may reuse a chunk's memory for the bytes it carries over.
  for (const chunk of chunks)
    parser.parse(Buffer.from(chunk), (message) =>
      messages.push({ ...message }),
    );
  return messages;
}

const ROWS: (string | null)[][] = [
  ['1', 'bench:///r/1', 'name', null, '', 'text/markdown'],
  ['é', 'a\u0000b', '😀 emoji', null],
  ['x'.repeat(200), 'y'], // a length byte ≥ 0x80
  ['x'.repeat(194), 'é', null, 'z'.repeat(233), 'ok'], // length bytes that lead UTF-8 sequences
  ['z'.repeat(5000), 'tail'], // longer than a row decoded as one string
  ['ascii', 'but é here'],
  ['\u00ff', '\ufffd'], // characters that look like what an invalid byte decodes to
  [],
];

describe('DataRow decoding', () => {
  it('decodes a DataRow written byte by byte from the protocol docs into its text fields and NULL', () => {
    // 'D', length 21, 3 fields: "1" (1 byte), NULL (-1), "é" (2 bytes of UTF-8).
    const wire = Buffer.from(
      '44' +
        '00000015' +
        '0003' +
        '00000001' +
        '31' +
        'ffffffff' +
        '00000002' +
        'c3a9',
      'hex',
    );
    expect(parse(Parser, wire)).toEqual([
      { name: 'dataRow', length: 21, fieldCount: 3, fields: ['1', null, 'é'] },
    ]);
  });

  it('gives the same messages as the unpatched pg-protocol parser for ASCII, UTF-8, NULL, empty and long rows', () => {
    // The comparison means something only if the patch is installed and the reference is not.
    expect(packetHandler(Parser)).not.toBe(packetHandler(UnpatchedParser));
    for (const fields of ROWS) {
      const wire = dataRow(fields);
      const expected = parse(UnpatchedParser, wire);
      expect(expected).toMatchObject([{ name: 'dataRow', fields }]);
      expect(parse(Parser, wire), JSON.stringify(fields)).toEqual(expected);
    }
  });

  it('decodes rows split across chunks as the unpatched parser does', () => {
    const stream = Buffer.concat([
      dataRow(['a', 'b']),
      dataRow(['c', null]),
      dataRow(['dé', 'e']),
    ]);
    for (const cut of [3, 9, stream.length - 3]) {
      const chunks = [stream.subarray(0, cut), stream.subarray(cut)];
      const expected = parse(UnpatchedParser, ...chunks);
      expect(expected.map((message) => message['fields'])).toEqual([
        ['a', 'b'],
        ['c', null],
        ['dé', 'e'],
      ]);
      expect(parse(Parser, ...chunks)).toEqual(expected);
    }
  });

  it('leaves messages other than DataRow to pg-protocol', () => {
    const complete = Buffer.concat([
      Buffer.from([0x43, 0, 0, 0, 13]),
      Buffer.from('SELECT 1\0'),
    ]);
    expect(parse(Parser, complete)).toEqual([
      { name: 'commandComplete', length: 13, text: 'SELECT 1' },
    ]);
  });
});
