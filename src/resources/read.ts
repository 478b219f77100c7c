// resources/read: one stored resource by URI, or a file: directory with its immediate children.
import type { Principal } from '../auth/index.js';
import {
  COLUMN,
  READ_DIRECTORY,
  READ_RESOURCE,
  runRequestQuery,
  type DatabaseHandle,
  type ResourceContentRow,
} from '../db/index.js';
import { ProtocolError } from '../errors.js';
import {
  createMethod,
  RawJson,
  ReadResourceParamsSchema,
  type MethodHandler,
  type ReadResourceParams,
} from '../protocol/index.js';
import { cacheHints } from './cache-hints.js';
import { isCatalogUri } from './catalog-uri.js';
import { readCatalog } from './catalog.js';
import type { CatalogSource } from './rows.js';
import { renderContents } from './render.js';
import {
  isDirectoryUri,
  prefixUpperBound,
  validateResourceUri,
} from './uri.js';

/** Set in a directory entry's `_meta` when the read cut its children (size and annotations ride
 * in `dev.pgmcp/size` and `dev.pgmcp/annotations`, written by render.ts). */
const META_TRUNCATED = 'dev.pgmcp/truncated';

export interface ReadDependencies {
  readonly db: DatabaseHandle;
  /** The databases whose catalog and rows are pg:// resources (the first is `db`'s). */
  readonly sources: readonly CatalogSource[];
  /** Most children a directory read returns (the directory entry says when it cut). */
  readonly maxDirectoryEntries: number;
  /** Most changes a read of pg://{database}?changes_since= returns (default 100). */
  readonly pageSize?: number | undefined;
  /** The change log's retention: older change tokens are refused (default one day). */
  readonly changeRetentionSeconds?: number | undefined;
}

/**
 * The URI is validated (and file: paths normalized) before any query. A missing resource is
 * -32602 with the URI in `data`, never an empty `contents`.
 */
export function createReadResourceMethod(
  deps: ReadDependencies,
): MethodHandler<ReadResourceParams> {
  return createMethod({
    params: ReadResourceParamsSchema,
    async handle(params, ctx) {
      const uri = validateResourceUri(params.uri);
      const contents = isCatalogUri(uri)
        ? await readCatalog(deps.sources, uri, ctx.principal, ctx, {
            maxEntries: deps.maxDirectoryEntries,
            pageSize: deps.pageSize,
            changeRetentionSeconds: deps.changeRetentionSeconds,
          })
        : isDirectoryUri(uri)
          ? await readDirectory(deps, uri, ctx.principal, ctx)
          : await readOne(deps, uri, ctx.principal, ctx);
      if (contents.length === 0) {
        throw new ProtocolError('RESOURCE_NOT_FOUND', 'Resource not found.', {
          data: { uri: params.uri },
        });
      }
      return {
        contents: new RawJson(`[${contents.join(',')}]`),
        ...cacheHints('read', ctx.principal),
      };
    },
  });
}

/** The contents JSON of one stored resource, or none. */
async function readOne(
  deps: ReadDependencies,
  uri: string,
  principal: Principal,
  cancellation: { readonly aborted: boolean },
): Promise<string[]> {
  const rows = await runRequestQuery(
    deps.db,
    principal,
    cancellation,
    READ_RESOURCE,
    { uri },
  );
  return rows.map((row) => renderContents(row));
}

/** The directory entry (stored or synthesized) followed by its immediate children, as contents JSON. */
async function readDirectory(
  deps: ReadDependencies,
  uri: string,
  principal: Principal,
  cancellation: { readonly aborted: boolean },
): Promise<string[]> {
  // One statement: the directory row (if stored) sorts first, then up to max + 1 children.
  const rows = await runRequestQuery(
    deps.db,
    principal,
    cancellation,
    READ_DIRECTORY,
    {
      directoryUri: uri,
      upperBound: prefixUpperBound(uri),
      limit: deps.maxDirectoryEntries + 2,
    },
  );
  const stored = rows[0]?.[COLUMN.uri] === uri ? rows[0] : undefined;
  const children = rows.filter((row) => row[COLUMN.uri] !== uri);
  if (stored === undefined && children.length === 0) return [];
  const truncated = children.length > deps.maxDirectoryEntries;
  const shown = children.slice(0, deps.maxDirectoryEntries);
  const entry =
    stored === undefined
      ? JSON.stringify({
          uri,
          mimeType: 'inode/directory',
          text: listing(uri, shown, truncated),
          ...(truncated ? { _meta: { [META_TRUNCATED]: true } } : {}),
        })
      : renderContents(stored, truncated ? `,"${META_TRUNCATED}":true` : '');
  return [entry, ...shown.map((row) => renderContents(row))];
}

/** A plain-text listing for a directory that has children but no stored row of its own. */
function listing(
  uri: string,
  children: readonly ResourceContentRow[],
  truncated: boolean,
): string {
  const lines = children.map((child) => {
    const name = child[COLUMN.uri].slice(uri.length);
    return child[COLUMN.mime_type] === 'inode/directory' || name.endsWith('/')
      ? name
      : `${name}\t${child[COLUMN.size]} bytes`;
  });
  if (truncated) lines.push('… (more entries not shown)');
  return lines.join('\n');
}
