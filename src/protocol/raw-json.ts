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
 * A handler's result that it hands back, unchanged, to more requests than one (a role's kept
 * prompts/list page): the dispatcher serializes it on its first answer and writes those bytes for
 * every later one. The payload must never be changed once made.
 */
export class KeptResult {
  constructor(readonly payload: Readonly<Record<string, unknown>>) {}
}

/**
 * JSON text of `message` without its `result` member, left open after `"result":` (what
 * JSON.stringify of the rest would write, with the member appended). The JSON-RPC envelope,
 * {jsonrpc: "2.0", id, result} in that order, is written without a copy of the message.
 */
const ENVELOPE_KEYS = ['jsonrpc', 'id', 'result'];

function openEnvelope(message: object): string {
  const record = message as Record<string, unknown>;
  let index = 0;
  for (const key in record) {
    if (key !== ENVELOPE_KEYS[index] || !Object.hasOwn(record, key))
      return openEnvelopeSlow(message);
    index += 1;
  }
  const id = record['id'];
  return index === ENVELOPE_KEYS.length &&
    record['jsonrpc'] === '2.0' &&
    (typeof id === 'number' || typeof id === 'string')
    ? `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`
    : openEnvelopeSlow(message);
}

function openEnvelopeSlow(message: object): string {
  const { result: _result, ...envelope } = message as { result?: unknown };
  const head = JSON.stringify(envelope);
  return `${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"result":`;
}

// Result member names are short identifiers: quoted as they are unless JSON would escape something.
const PLAIN_KEY = /^[\w./-]*$/;

/**
 * JSON text of one outgoing message. The result object is written member by member so RawJson
 * members go out verbatim; everything else is plain JSON.stringify (V8's fast path).
 */
export function serializeMessage(message: object): string {
  const result = (message as { result?: unknown }).result;
  if (result instanceof RawJson)
    return `${openEnvelope(message)}${result.json}}`;
  if (typeof result !== 'object' || result === null)
    return JSON.stringify(message);
  let members = '';
  for (const key of Object.keys(result)) {
    const value = (result as Record<string, unknown>)[key];
    if (value === undefined) continue;
    const json = value instanceof RawJson ? value.json : JSON.stringify(value);
    const name = PLAIN_KEY.test(key) ? `"${key}"` : JSON.stringify(key);
    members += `${members === '' ? '' : ','}${name}:${json}`;
  }
  return `${openEnvelope(message)}{${members}}}`;
}

const CLOSE_BRACE = Buffer.from('}');

/**
 * UTF-8 bytes of one outgoing message (what serializeMessage writes). A RawJson `result` goes out
 * as its kept bytes: a constant answer is encoded once, not once per response.
 */
export function serializeMessageBytes(message: object): Buffer {
  const result = (message as { result?: unknown }).result;
  if (result instanceof RawJson) {
    return Buffer.concat([
      Buffer.from(openEnvelope(message), 'utf8'),
      result.bytes,
      CLOSE_BRACE,
    ]);
  }
  return Buffer.from(serializeMessage(message), 'utf8');
}
