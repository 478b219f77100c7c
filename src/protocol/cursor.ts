// Opaque, versioned, HMAC-signed keyset cursors shared by every paginated collection.
// Wire form: "v1." + base64url(JSON payload) + "." + base64url(HMAC-SHA256(secret, "v1." + payload)).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ProtocolError } from '../errors.js';

const VERSION = 'v1';
const MAX_CURSOR_LENGTH = 2048;

/** Where a walk stands: which collection, and the last key returned in it. */
export interface CursorPosition {
  /** Collection name, e.g. "resources" or "templates"; lets one walk span several collections. */
  readonly c: string;
  /** Keyset key of the last item returned (primary-key values, in order). */
  readonly k: readonly (string | number)[];
}

export interface CursorCodec {
  encode(position: CursorPosition): string;
  /** Verify and decode; a forged, edited, foreign or malformed cursor throws INVALID_CURSOR (-32602). */
  decode(cursor: string): CursorPosition;
}

/**
 * Signs with the first secret; accepts any of them, so secrets can rotate and replicas that share
 * them accept each other's cursors.
 */
export function createCursorCodec(secrets: readonly string[]): CursorCodec {
  if (secrets.length === 0 || secrets.some((secret) => secret.length < 16)) {
    throw new Error('cursor secrets must be at least 16 characters');
  }
  const keys = secrets.map((secret) => Buffer.from(secret, 'utf8'));

  function sign(key: Buffer, body: string): Buffer {
    return createHmac('sha256', key).update(body).digest();
  }

  function encode(position: CursorPosition): string {
    const body = `${VERSION}.${Buffer.from(JSON.stringify({ c: position.c, k: position.k })).toString('base64url')}`;
    return `${body}.${sign(keys[0] as Buffer, body).toString('base64url')}`;
  }

  function decode(cursor: string): CursorPosition {
    const invalid = (): never => {
      throw new ProtocolError('INVALID_CURSOR', 'Invalid cursor.');
    };
    if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH)
      return invalid();
    const parts = cursor.split('.');
    if (parts.length !== 3 || parts[0] !== VERSION) return invalid();
    const [version, payload, mac] = parts as [string, string, string];
    const body = `${version}.${payload}`;
    const given = Buffer.from(mac, 'base64url');
    const valid = keys.some((key) => {
      const expected = sign(key, body);
      return (
        given.length === expected.length && timingSafeEqual(given, expected)
      );
    });
    if (!valid) return invalid();
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return invalid();
    }
    if (!isPosition(value)) return invalid();
    return value;
  }

  return { encode, decode };
}

function isPosition(value: unknown): value is CursorPosition {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record['c'] === 'string' &&
    Array.isArray(record['k']) &&
    record['k'].every(
      (part) => typeof part === 'string' || typeof part === 'number',
    )
  );
}
