// Which URIs a listen stream may subscribe to: those the caller can read now (resources/read's
// rules: a stored resource, a file: directory with something readable under it, a catalog entry
// or a row the role can see).
import type { Principal } from '../auth/index.js';
import {
  READABLE_URIS,
  runRequestQuery,
  type DatabaseHandle,
} from '../db/index.js';
import { isCatalogUri } from './catalog-uri.js';
import { readCatalog } from './catalog.js';
import type { CatalogSource } from './catalog-source.js';
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
  {
    db,
    sources,
    principal,
    signal,
  }: {
    readonly db: DatabaseHandle;
    readonly sources: readonly CatalogSource[];
    readonly principal: Principal;
    readonly signal: AbortSignal;
  },
  uris: readonly string[],
): Promise<string[]> {
  const normalized = [...new Set(uris.map((uri) => validateResourceUri(uri)))];
  const stored = normalized.filter((uri) => !isCatalogUri(uri));
  const rows =
    stored.length === 0
      ? []
      : await runRequestQuery(
          { db, principal, cancellation: signal },
          READABLE_URIS,
          {
            uris: stored,
            upperBounds: stored.map((uri) =>
              isDirectoryUri(uri) ? prefixUpperBound(uri) : null,
            ),
          },
        );
  const readable = new Set(rows.map((row) => row.uri));
  // Catalog entries and rows: as resources/read would answer (a directory read lists one entry).
  await Promise.all(
    normalized.filter(isCatalogUri).map(async (uri) => {
      if (
        (
          await readCatalog(sources, uri, {
            principal,
            cancellation: signal,
            options: { maxEntries: 1 },
          })
        ).length > 0
      )
        readable.add(uri);
    }),
  );
  return normalized.filter((uri) => readable.has(uri));
}
