// The values of a JSON object's members, in order, as PostgreSQL's json_each_text gives them: a
// string unescaped, null as null, any other value (number, true, false, an object, an array) as
// its JSON text. Repeated names are all kept. It reads the text row_to_json writes, so the query
// tool converts a row in one expression instead of running a subquery for each row.

/** Thrown for text that is not one JSON object: a bug or a driver change, never a caller's data. */
export class JsonMembersError extends Error {}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

/** The members' values of the JSON object `text`. */
export function jsonMemberValues(text: string): (string | null)[] {
  const values: (string | null)[] = [];
  let at = skipSpace(text, 0);
  expect(text, at, OPEN_BRACE);
  at = skipSpace(text, at + 1);
  if (text.charCodeAt(at) === CLOSE_BRACE) return end(text, at, values);
  for (;;) {
    expect(text, at, QUOTE);
    at = skipSpace(text, stringEnd(text, at));
    expect(text, at, COLON);
    at = skipSpace(text, at + 1);
    const start = at;
    const first = text.charCodeAt(at);
    if (first === QUOTE) {
      at = stringEnd(text, at);
      const body = text.slice(start + 1, at - 1);
      // Most strings hold no escape: their text is the value.
      values.push(
        body.includes('\\')
          ? (JSON.parse(text.slice(start, at)) as string)
          : body,
      );
    } else if (first === OPEN_BRACE || first === OPEN_BRACKET) {
      at = nestedEnd(text, at);
      values.push(text.slice(start, at));
    } else {
      while (at < text.length) {
        const code = text.charCodeAt(at);
        if (code === COMMA || code === CLOSE_BRACE || isSpace(code)) break;
        at += 1;
      }
      if (at === start) throw new JsonMembersError(`no value at ${start}`);
      const literal = text.slice(start, at);
      values.push(literal === 'null' ? null : literal);
    }
    at = skipSpace(text, at);
    const next = text.charCodeAt(at);
    if (next === CLOSE_BRACE) return end(text, at, values);
    expect(text, at, COMMA);
    at = skipSpace(text, at + 1);
  }
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && isSpace(text.charCodeAt(at))) at += 1;
  return at;
}

function expect(text: string, at: number, code: number): void {
  if (text.charCodeAt(at) !== code)
    throw new JsonMembersError(
      `expected ${String.fromCharCode(code)} at ${at} of a JSON object`,
    );
}

/** Only white space may follow the object's closing brace. */
function end(
  text: string,
  at: number,
  values: (string | null)[],
): (string | null)[] {
  if (skipSpace(text, at + 1) !== text.length)
    throw new JsonMembersError(`text after the JSON object at ${at + 1}`);
  return values;
}

/** The index after the string that opens at `at` (a quote). */
function stringEnd(text: string, at: number): number {
  let index = at + 1;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (code === BACKSLASH) index += 2;
    else if (code === QUOTE) return index + 1;
    else index += 1;
  }
  throw new JsonMembersError(`unterminated string at ${at}`);
}

/** The index after the object or array that opens at `at`. */
function nestedEnd(text: string, at: number): number {
  let depth = 0;
  let index = at;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      index = stringEnd(text, index);
      continue;
    }
    if (code === OPEN_BRACE || code === OPEN_BRACKET) depth += 1;
    else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth -= 1;
      if (depth === 0) return index + 1;
    }
    index += 1;
  }
  throw new JsonMembersError(`unterminated value at ${at}`);
}
