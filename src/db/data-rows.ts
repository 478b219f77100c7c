// DataRow decoding for pg-protocol's parser: one string per row instead of one decode per field.
// pg-protocol turns every field into a string with its own Buffer#toString call (argument checks,
// encoding lookup, a native call). A row that is all ASCII is read as one latin1 string (byte i is
// character i) and its fields are substrings of it; any other row decodes each field as UTF-8, as
// pg-protocol does. The fields are the same strings either way; installed once, on every connection.
import { DataRowMessage } from 'pg-protocol/dist/messages.js';
import { Parser } from 'pg-protocol/dist/parser.js';

const DATA_ROW = 0x44; // 'D'
const NON_ASCII = /[^\x00-\x7f]/;
const MAX_SHARED_ROW = 4096;

interface PacketParser {
  handlePacket(
    offset: number,
    code: number,
    length: number,
    bytes: Buffer,
  ): unknown;
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
  // are in it too: a field whose length has a byte ≥ 0x80 (128–255 bytes, say) sends the row the slow way.
  const row =
    length <= MAX_SHARED_ROW
      ? bytes.toString('latin1', offset, offset + length - 4)
      : undefined;
  const ascii = row !== undefined && !NON_ASCII.test(row);
  let at = offset + 2;
  for (let index = 0; index < count; index += 1) {
    const size = bytes.readInt32BE(at);
    at += 4;
    if (size === -1) {
      fields[index] = null;
      continue;
    }
    fields[index] = ascii
      ? (row as string).slice(at - offset, at - offset + size)
      : bytes.toString('utf8', at, at + size);
    at += size;
  }
  return new DataRowMessage(length, fields as string[]);
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
