// DataRow decoding for pg-protocol's parser: one string per row instead of one decode per field.
// pg-protocol turns every field into a string with its own Buffer#toString call (argument checks,
// encoding lookup, a native call). A small row is decoded once as UTF-8; when that string has as
// many characters as the row has bytes, each byte became one character (ASCII, or an invalid
// byte such as a length word's as U+FFFD), so its fields are substrings at their byte offsets.
// Any other row decodes each field, as pg-protocol does. The fields are the same strings either
// way; installed once, on every connection.
import { DataRowMessage } from 'pg-protocol/dist/messages.js';
import { Parser } from 'pg-protocol/dist/parser.js';

const DATA_ROW = 0x44; // 'D'
const MAX_SHARED_ROW = 4096;

interface PacketParser {
  // A function-typed property, not a method: it is taken off the prototype and called with `this`.
  handlePacket: (
    this: PacketParser,
    offset: number,
    code: number,
    length: number,
    bytes: Buffer,
  ) => unknown;
}

/** The DataRow message whose body (after code and length) starts at `offset`; `length` counts itself. */
export function parseDataRow(
  offset: number,
  length: number,
  bytes: Buffer,
): DataRowMessage {
  const count = bytes.readInt16BE(offset);
  const fields = new Array<string | null>(count);
  // Substrings of the row keep all of it alive: only small rows share one string. The length words
  // are in it too; a byte ≥ 0x80 there (a 200-byte field) is one U+FFFD, as no field starts with a
  // UTF-8 continuation byte, and a multi-byte character anywhere makes the string shorter.
  const rowSize = length - 4;
  const row =
    length <= MAX_SHARED_ROW
      ? bytes.toString('utf8', offset, offset + rowSize)
      : undefined;
  const byteForByte = row !== undefined && row.length === rowSize;
  let at = offset + 2;
  for (let index = 0; index < count; index += 1) {
    const size = bytes.readInt32BE(at);
    at += 4;
    if (size === -1) {
      fields[index] = null;
      continue;
    }
    fields[index] = byteForByte
      ? row.slice(at - offset, at - offset + size)
      : bytes.toString('utf8', at, at + size);
    at += size;
  }
  return new DataRowMessage(length, fields);
}

const prototype = Parser.prototype as unknown as PacketParser;
const handlePacket = prototype.handlePacket;
if (typeof handlePacket === 'function') {
  prototype.handlePacket = function (
    this: PacketParser,
    offset: number,
    code: number,
    length: number,
    bytes: Buffer,
  ): unknown {
    return code === DATA_ROW
      ? parseDataRow(offset, length, bytes)
      : handlePacket.call(this, offset, code, length, bytes);
  };
}
