// The one keyset cursor design every collection lists through (ROADMAP design rules).
import { ProtocolError } from '../errors.js';
import type { CursorCodec } from '../protocol/index.js';

/** The last primary key a cursor of `collection` points after; anything else is an invalid cursor. */
export function decodeAfterId(cursors: CursorCodec, cursor: string | undefined, collection: string): string {
  if (cursor === undefined) return '0';
  const position = cursors.decode(cursor);
  const key = position.k[0];
  if (position.c !== collection || position.k.length !== 1 || typeof key !== 'string' || !/^\d{1,19}$/.test(key)) {
    throw new ProtocolError('INVALID_CURSOR', 'Invalid cursor.');
  }
  return key;
}

/**
 * Cut a fetched page (queried with pageSize + 1 rows) to size and sign the cursor after its last
 * key. `nextCursor` is present exactly when the extra row showed that more rows exist.
 */
export function keysetPage<TRow extends { id: string }>(
  rows: readonly TRow[],
  pageSize: number,
  cursors: CursorCodec,
  collection: string,
): { page: TRow[]; nextCursor?: string } {
  const page = rows.slice(0, pageSize);
  const last = page.at(-1);
  if (rows.length <= pageSize || last === undefined) return { page };
  return { page, nextCursor: cursors.encode({ c: collection, k: [last.id] }) };
}
