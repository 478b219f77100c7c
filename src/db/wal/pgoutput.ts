// pgoutput, protocol version 1 (PostgreSQL's "Logical Replication Message Formats"): the messages
// the WAL change source reads, decoded to what names a row. Values stay the text the server sent
// (a row is named by its key's text forms, as the capture triggers name it: `column::text`).

/** A row as the WAL carries it: column → text form (null for SQL NULL or an unchanged TOAST value). */
export type TupleText = Record<string, string | null>;

export interface DecodedChange {
  /**
   * Which description of its table the server sent before it (one per Relation message, numbered
   * by the decoder): a new one follows every change to the table's definition, its key included.
   */
  readonly description: number;
  readonly schema: string;
  readonly table: string;
  readonly kind: 'created' | 'updated' | 'deleted';
  /** The new row (or its key columns) for inserts and updates; the old key for deletes. */
  readonly key: TupleText;
  /** An update's old key (or old row), when the WAL carries it. */
  readonly old?: TupleText;
}

export type PgoutputMessage =
  | { readonly tag: 'begin' }
  | {
      readonly tag: 'commit';
      /** Where the commit record starts: the order transactions commit in. */
      readonly commitLsn: bigint;
      /** Where it ends: what the slot is confirmed up to once the transaction is logged. */
      readonly endLsn: bigint;
    }
  | { readonly tag: 'change'; readonly change: DecodedChange }
  /** Relation, type, origin, truncate and logical messages: no row change to log. */
  | { readonly tag: 'other' };

interface Relation {
  readonly description: number;
  readonly schema: string;
  readonly table: string;
  /** 'd' default (the primary key), 'n' nothing, 'f' full, 'i' an index. */
  readonly identity: string;
  readonly columns: readonly string[];
  readonly keyColumns: readonly string[];
}

/** Decodes one slot's messages; relations are remembered as the server describes them. */
export class PgoutputDecoder {
  readonly #relations = new Map<number, Relation>();
  #descriptions = 0;

  decode(buffer: Buffer): PgoutputMessage {
    const reader = new Reader(buffer);
    const tag = String.fromCharCode(reader.byte());
    switch (tag) {
      case 'B':
        return { tag: 'begin' };
      case 'C': {
        reader.byte(); // flags
        const commitLsn = reader.int64();
        return { tag: 'commit', commitLsn, endLsn: reader.int64() };
      }
      case 'R':
        this.#relation(reader);
        return { tag: 'other' };
      case 'I':
      case 'U':
      case 'D':
        return { tag: 'change', change: this.#change(tag, reader) };
      default:
        return { tag: 'other' };
    }
  }

  #relation(reader: Reader): void {
    const oid = reader.int32();
    const schema = reader.string();
    const table = reader.string();
    const identity = String.fromCharCode(reader.byte());
    const count = reader.int16();
    const columns: string[] = [];
    const keyColumns: string[] = [];
    for (let index = 0; index < count; index += 1) {
      const flags = reader.byte();
      const name = reader.string();
      reader.int32(); // type oid
      reader.int32(); // type modifier
      columns.push(name);
      if ((flags & 1) === 1) keyColumns.push(name);
    }
    this.#descriptions += 1;
    this.#relations.set(oid, {
      description: this.#descriptions,
      schema,
      table,
      identity,
      columns,
      keyColumns,
    });
  }

  #change(tag: 'I' | 'U' | 'D', reader: Reader): DecodedChange {
    const oid = reader.int32();
    const relation = this.#relations.get(oid);
    if (relation === undefined)
      throw new Error(
        `pgoutput: a row of relation ${oid} before its description`,
      );
    const { description, schema, table } = relation;
    let marker = String.fromCharCode(reader.byte());
    if (tag === 'I')
      return {
        description,
        schema,
        table,
        kind: 'created',
        key: keyOf(relation, tuple(reader, relation)),
      };
    if (tag === 'D')
      return {
        description,
        schema,
        table,
        kind: 'deleted',
        key: tuple(reader, relation),
      };
    let old: TupleText | undefined;
    if (marker === 'K' || marker === 'O') {
      old = tuple(reader, relation);
      marker = String.fromCharCode(reader.byte());
    }
    if (marker !== 'N')
      throw new Error(`pgoutput: unexpected update part ${marker}`);
    const key = keyOf(relation, tuple(reader, relation));
    return {
      description,
      schema,
      table,
      kind: 'updated',
      key,
      ...(old === undefined ? {} : { old }),
    };
  }
}

/** TupleData: each column null ('n'), unchanged TOAST ('u', left null) or text ('t'). */
function tuple(reader: Reader, relation: Relation): TupleText {
  const count = reader.int16();
  const row: TupleText = {};
  for (let index = 0; index < count; index += 1) {
    const name = relation.columns[index] ?? `#${index}`;
    const kind = String.fromCharCode(reader.byte());
    if (kind === 't') row[name] = reader.text(reader.int32());
    else if (kind === 'n' || kind === 'u') row[name] = null;
    else throw new Error(`pgoutput: unexpected column kind ${kind}`);
  }
  return row;
}

/**
 * The columns that may name the row: under REPLICA IDENTITY DEFAULT the primary key's (the
 * relation's key columns); otherwise the whole row, and the database picks the primary key.
 */
function keyOf(relation: Relation, row: TupleText): TupleText {
  if (relation.identity !== 'd') return row;
  const key: TupleText = {};
  for (const name of relation.keyColumns) key[name] = row[name] ?? null;
  return key;
}

/** Big-endian fields and null-terminated strings, as the protocol writes them. */
class Reader {
  readonly #buffer: Buffer;
  #offset = 0;

  constructor(buffer: Buffer) {
    this.#buffer = buffer;
  }

  byte(): number {
    const value = this.#buffer.readUInt8(this.#offset);
    this.#offset += 1;
    return value;
  }

  int16(): number {
    const value = this.#buffer.readInt16BE(this.#offset);
    this.#offset += 2;
    return value;
  }

  int32(): number {
    const value = this.#buffer.readInt32BE(this.#offset);
    this.#offset += 4;
    return value;
  }

  int64(): bigint {
    const value = this.#buffer.readBigUInt64BE(this.#offset);
    this.#offset += 8;
    return value;
  }

  string(): string {
    const end = this.#buffer.indexOf(0, this.#offset);
    if (end < 0) throw new Error('pgoutput: unterminated string');
    const value = this.#buffer.toString('utf8', this.#offset, end);
    this.#offset = end + 1;
    return value;
  }

  text(length: number): string {
    const value = this.#buffer.toString(
      'utf8',
      this.#offset,
      this.#offset + length,
    );
    this.#offset += length;
    return value;
  }
}
