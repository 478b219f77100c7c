// Pre-serialized JSON fragments (e.g. built by Postgres) spliced into a message without parsing.
import { randomBytes } from 'node:crypto';

// A per-process nonce makes the placeholder unguessable, so no client-supplied string (an id, a
// URI) can be mistaken for one. Postgres text cannot hold NUL, and JSON escapes it, so a real
// string never serializes to the placeholder either.
const NONCE = randomBytes(16).toString('hex');
const PLACEHOLDER = new RegExp(`"\\\\u0000${NONCE}:(\\d+)"`, 'g');

/** A JSON value already serialized; must be valid JSON (it is inserted verbatim). */
export class RawJson {
  constructor(readonly json: string) {}
}

/** JSON.stringify that writes RawJson fragments verbatim. */
export function serializeMessage(message: unknown): string {
  const fragments: string[] = [];
  const text = JSON.stringify(message, (_key, value: unknown) => {
    if (value instanceof RawJson) {
      fragments.push(value.json);
      return `\u0000${NONCE}:${fragments.length - 1}`;
    }
    return value;
  });
  if (fragments.length === 0) return text;
  return text.replace(PLACEHOLDER, (_match, index: string) => fragments[Number(index)] ?? 'null');
}
