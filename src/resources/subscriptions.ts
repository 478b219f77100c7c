// Which URIs a listen stream may subscribe to: those the caller can read now (resources/read's
// rules: a stored resource, or a file: directory with something readable under it).
import type { Principal } from '../auth/index.js';
import {
  READABLE_URIS,
  runRequestQuery,
  type DatabaseHandle,
} from '../db/index.js';
import {
  isDirectoryUri,
  prefixUpperBound,
  validateResourceUri,
} from './uri.js';

/**
 * The readable subset of `uris`, validated and normalized, in the order given. One query in the
 * caller's request transaction: RLS hides what the role cannot read, so such a URI is dropped
 * exactly like one that does not exist. An invalid URI throws INVALID_URI (-32602).
 */
export async function readableUris(
  db: DatabaseHandle,
  uris: readonly string[],
  principal: Principal,
  signal: AbortSignal,
): Promise<string[]> {
  const normalized = [...new Set(uris.map((uri) => validateResourceUri(uri)))];
  const rows = await runRequestQuery(db, principal, signal, READABLE_URIS, {
    uris: normalized,
    upperBounds: normalized.map((uri) =>
      isDirectoryUri(uri) ? prefixUpperBound(uri) : null,
    ),
  });
  return rows.map((row) => row.uri);
}
