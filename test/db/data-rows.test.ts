import { describe, expect, it } from 'vitest';
import { DataRowMessage } from 'pg-protocol/dist/messages.js';
import { Parser } from 'pg-protocol/dist/parser.js';
import { parseDataRow } from '../../src/db/data-rows.js';

/** One DataRow message on the wire: 'D', length, field count, then each field (-1 for NULL). */
function dataRow(fields: readonly (string | null)[]): Buffer {
  const parts = fields.map((field) => {
    if (field === null) {
      const size = Buffer.alloc(4);
      size.writeInt32BE(-1);
      return size;
    }
    const bytes = Buffer.from(field, 'utf8');
    const size = Buffer.alloc(4);
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

function parse(buffer: Buffer): unknown[] {
  const messages: unknown[] = [];
  new Parser().parse(buffer, (message) => messages.push(message));
  return messages;
}

describe('DataRow decoding', () => {
  it('gives the fields pg-protocol gives: ASCII, UTF-8, NULL, empty, long and split rows', () => {
    const rows: (string | null)[][] = [
      ['1', 'bench:///r/1', 'name', null, '', 'text/markdown'],
      ['é', 'a\u0000b', '😀 emoji', null],
      ['x'.repeat(200), 'y'], // a length byte ≥ 0x80
      ['x'.repeat(194), 'é', null, 'z'.repeat(233), 'ok'], // length bytes that lead UTF-8 sequences
      ['z'.repeat(5000), 'tail'], // longer than a shared row
      ['ascii', 'but é here'],
      [],
    ];
    for (const fields of rows) {
      const messages = parse(dataRow(fields));
      expect(messages).toHaveLength(1);
      expect(messages[0]).toBeInstanceOf(DataRowMessage);
      expect(messages[0]).toMatchObject({
        name: 'dataRow',
        fieldCount: fields.length,
        fields,
      });
      const wire = dataRow(fields);
      expect(parseDataRow(5, wire.readInt32BE(1), wire).fields).toEqual(fields);
    }
    // Two rows and a partial third in one chunk, the rest in the next.
    const stream = Buffer.concat([
      dataRow(['a', 'b']),
      dataRow(['c', null]),
      dataRow(['dé', 'e']),
    ]);
    const parser = new Parser();
    const seen: unknown[] = [];
    parser.parse(stream.subarray(0, stream.length - 3), (m) => seen.push(m));
    parser.parse(stream.subarray(stream.length - 3), (m) => seen.push(m));
    expect(seen.map((m) => (m as DataRowMessage).fields)).toEqual([
      ['a', 'b'],
      ['c', null],
      ['dé', 'e'],
    ]);
  });

  it('leaves other messages to pg-protocol', () => {
    const complete = Buffer.concat([
      Buffer.from([0x43, 0, 0, 0, 13]),
      Buffer.from('SELECT 1\0'),
    ]);
    expect(parse(complete)).toMatchObject([
      { name: 'commandComplete', text: 'SELECT 1' },
    ]);
  });
});
