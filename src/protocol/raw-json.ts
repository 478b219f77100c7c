// Pre-serialized JSON fragments (rendered from Postgres rows, or constant answers) written into a
// response unparsed. Supported as `result` itself or as its direct members, where handlers put them.

/** A JSON value already serialized; must be valid JSON (it is written verbatim). */
export class RawJson {
  #bytes: Buffer | undefined;

  constructor(readonly json: string) {}

  /** The UTF-8 encoding of `json`, made on first use and kept (for answers that are reused). */
  get bytes(): Buffer {
    this.#bytes ??= Buffer.from(this.json, 'utf8');
    return this.#bytes;
  }

  toJSON(): never {
    throw new Error(
      'RawJson is only supported as a direct member of a result (see serializeMessage)',
    );
  }
}

/**
 * JSON text of one outgoing message. The result object is written member by member so RawJson
 * members go out verbatim; everything else is plain JSON.stringify (V8's fast path).
 */
export function serializeMessage(message: object): string {
  const { result, ...envelope } = message as { result?: unknown };
  if (result instanceof RawJson) {
    const head = JSON.stringify(envelope);
    return `${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"result":${result.json}}`;
  }
  if (typeof result !== 'object' || result === null)
    return JSON.stringify(message);
  let members = '';
  for (const [key, value] of Object.entries(result)) {
    if (value === undefined) continue;
    const json = value instanceof RawJson ? value.json : JSON.stringify(value);
    members += `${members === '' ? '' : ','}${JSON.stringify(key)}:${json}`;
  }
  const head = JSON.stringify(envelope);
  return `${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"result":{${members}}}`;
}

const CLOSE_BRACE = Buffer.from('}');

/**
 * UTF-8 bytes of one outgoing message (what serializeMessage writes). A RawJson `result` goes out
 * as its kept bytes: a constant answer is encoded once, not once per response.
 */
export function serializeMessageBytes(message: object): Buffer {
  const { result, ...envelope } = message as { result?: unknown };
  if (result instanceof RawJson) {
    const head = JSON.stringify(envelope);
    return Buffer.concat([
      Buffer.from(
        `${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"result":`,
        'utf8',
      ),
      result.bytes,
      CLOSE_BRACE,
    ]);
  }
  return Buffer.from(serializeMessage(message), 'utf8');
}
